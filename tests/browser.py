"""What the browser tests share: logging in through the login form."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.factories import PASSWORD


def log_in(page: Any, url: str, username: str, password: str = PASSWORD) -> None:
    """Log `username` in on `page` through the login form, and wait for the signed-in top bar."""
    page.goto(f"{url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
