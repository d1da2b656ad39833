"""The list and queue keys in Chromium: the issue list's j / k with its search box, the queue's
Enter, and the adjudicate page's URL after a decision and its shortcuts dialog."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.adjudication.helpers import label_next, make_scene
from tests.browser import log_in
from tests.factories import IssueFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def session(browser: Any, url: str, username: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, url, username)
    return context, page


def focused(page: Any) -> str:
    return page.evaluate(
        "document.activeElement.tagName + ' ' + document.activeElement.textContent"
    )


def test_issue_list_j_k_move_and_the_search_box_keeps_no_focus(browser, live_server):
    UserFactory(username="reader")
    titles = [f"NCCL hang number {n}" for n in range(3)]
    for title in titles:
        IssueFactory(title=title)
    context, page = session(browser, live_server.url, "reader")
    page.goto(live_server.url + reverse("issues:list"))
    search = page.get_by_role("searchbox", name="Search")
    expect(search).not_to_be_focused()
    page.keyboard.press("j")
    expect(search).to_have_value("")  # j did not type into the search box
    first = focused(page)
    assert first.startswith("A ") and "NCCL hang number" in first
    page.keyboard.press("j")
    second = focused(page)
    assert second != first and "NCCL hang number" in second
    page.keyboard.press("k")
    assert focused(page) == first

    page.keyboard.press("/")
    expect(search).to_be_focused()
    page.keyboard.type("hang")
    page.keyboard.press("Escape")  # leaves the box and keeps the query
    expect(search).not_to_be_focused()
    expect(search).to_have_value("hang")
    page.keyboard.press("j")
    expect(search).to_have_value("hang")
    assert "NCCL hang number" in focused(page)
    context.close()


def test_queue_enter_starts_and_the_url_follows_each_decision(browser, live_server):
    scene = make_scene()
    first = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    second = label_next(scene, {"symptom": "crash"}, {"symptom": "slow"})
    context, page = session(browser, live_server.url, "adjudicator")
    page.goto(live_server.url + reverse("adjudication:queue", args=[scene.study.pk]))
    expect(page.locator("[data-remaining]")).to_have_text("2")
    page.keyboard.press("Enter")  # "Start with the first", no j needed
    expect(page).to_have_url(live_server.url + reverse("adjudication:item", args=[first.pk]))
    # The URL changes when the page starts to load; its keys work once its deferred scripts ran.
    page.wait_for_load_state("domcontentloaded")

    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    box = dialog.bounding_box()
    assert box and box["x"] >= 0 and box["y"] >= 0
    assert box["x"] + box["width"] <= 1280 and box["y"] + box["height"] <= 720
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    page.keyboard.press("2")
    page.keyboard.press("r")
    page.keyboard.type("annotator")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Decision saved")).to_be_visible()
    second_url = live_server.url + reverse("adjudication:item", args=[second.pk])
    expect(page).to_have_url(second_url)
    page.reload()
    expect(page).to_have_url(second_url)
    expect(page.locator("h1")).to_contain_text(second.issue.title)
    context.close()
