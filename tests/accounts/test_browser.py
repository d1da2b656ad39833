"""In Chromium, under the app's Content-Security-Policy: create a token through the htmx form,
read its secret once, use it, then revoke it through the inline confirmation."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotator.accounts.models import ApiToken
from tests.browser import log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_copy_and_revoke_a_token(page, live_server):
    UserFactory(username="alice")
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    log_in(page, live_server.url, "alice")
    page.get_by_role("link", name="API tokens").click()
    expect(page.get_by_text("No tokens yet.")).to_be_visible()

    page.evaluate("window.samePage = true")  # gone after any full page load
    page.get_by_label("Name").fill("notebook")
    page.get_by_label("Expires after (days)").fill("30")
    page.get_by_role("button", name="Create token").click()
    secret_box = page.get_by_label("The new token's secret")
    expect(secret_box).to_be_focused()  # ready to copy
    secret = secret_box.input_value()
    assert re.fullmatch(r"ann_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}", secret)
    assert page.evaluate("window.samePage === true")  # htmx swapped it in: no POST to repeat
    row = page.locator("[data-token-row]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("notebook")

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert api.get("/api/tokens/").status_code == 200

    row.get_by_role("link", name="Revoke…").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Every script using it gets 401")
    assert page.evaluate("window.samePage === true")  # the confirmation came in place too
    page.get_by_role("button", name="Revoke “notebook”").click()
    expect(page.get_by_text("revoked.")).to_be_visible()
    expect(page.locator("[data-state]")).to_have_text("revoked")
    expect(page.get_by_label("The new token's secret")).to_have_count(0)
    assert ApiToken.objects.get().revoked_at is not None
    assert api.get("/api/tokens/").status_code == 401
    assert violations == []
