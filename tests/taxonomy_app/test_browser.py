"""Browser journey in Chromium: the owner edits a definition in place, publishes a new version
and sees exactly what changed."""

from __future__ import annotations

import re

import pytest

from taxonomy_app.models import Category, CodebookVersion
from tests import browser

NEW_DEFINITION = "No rank makes progress for more than 10 minutes, with or without an error."


def log_in(page, live_server, username: str) -> None:  # type: ignore[no-untyped-def]
    browser.log_in(page, live_server.url, username)
    page.wait_for_url(re.compile(r".*/issues/.*"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_owner_edits_a_definition_publishes_and_sees_the_diff(page, live_server, owner, v1):
    from playwright.sync_api import expect

    log_in(page, live_server, owner.username)
    page.goto(f"{live_server.url}{v1.get_absolute_url()}")
    page.get_by_role("button", name="Start a draft").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("v2 · draft")
    draft_url = page.url

    # Edit in place: htmx swaps the row for a form and back, without leaving the page.
    page.evaluate("window.stillHere = true")
    page.get_by_role("link", name="Edit Hang").click()
    definition = page.get_by_label("Definition")
    expect(definition).to_be_visible()
    expect(page.get_by_label("Name")).to_be_focused()
    definition.fill(NEW_DEFINITION)
    page.get_by_role("button", name="Save").click()
    row = page.locator(
        f"#category-{Category.objects.get(facet__version__number=2, code='hang').pk}"
    )
    expect(row).to_contain_text(NEW_DEFINITION)
    assert page.evaluate("window.stillHere") is True and page.url == draft_url

    # Publishing asks for confirmation, showing the change first.
    page.get_by_role("link", name="Review and publish…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Publish v2?")
    expect(page.locator("#diff-changed")).to_be_visible()
    page.get_by_label("Changelog").fill("Sharper definition of a hang.")
    page.get_by_role("button", name="Publish v2").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("What changed from v1 to v2")
    changed = page.locator("#diff table").filter(has_text="definition")
    expect(changed).to_contain_text("Waits.")
    expect(changed).to_contain_text(NEW_DEFINITION)
    expect(page.locator(".diff-counts")).to_contain_text("changed: 1")

    v2 = CodebookVersion.objects.get(codebook=v1.codebook, number=2)
    assert v2.is_published and v2.changelog == "Sharper definition of a hang."
    assert Category.objects.get(facet__version=v1, code="hang").definition == "Waits."
