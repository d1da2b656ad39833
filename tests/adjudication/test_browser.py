"""Adjudication in Chromium: the adjudicator works through the queue with the keyboard, and a
second adjudicator in another browser context gets the conflict message."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.adjudication.models import Decision
from tests.adjudication.helpers import label_next, make_scene
from tests.browser import log_in as browser_log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(browser, url: str, username: str):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    browser_log_in(page, url, username)
    return context, page


def test_adjudicator_works_through_the_queue_with_the_keyboard(browser, live_server):
    scene = make_scene()
    first = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    second = label_next(scene, {"symptom": "crash"}, {"symptom": "slow"})
    url = live_server.url
    context, page = log_in(browser, url, "adjudicator")
    other_context, other = log_in(browser, url, "study-owner")

    page.goto(f"{url}/adjudication/studies/{scene.study.pk}/")
    expect(page.locator("[data-remaining]")).to_have_text("2")
    page.get_by_role("link", name="Start with the first").click()
    other.goto(page.url)  # the owner opens the same item in another context
    expect(page.locator("tr.current")).to_contain_text("Symptom")  # the first that differs
    page.keyboard.press("2")  # take annotator 2's symptom
    page.keyboard.press("r")
    page.keyboard.type("annotator")  # the select jumps to "annotator slip"
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Decision saved")).to_be_visible()
    page.keyboard.press("1")  # next item: take annotator 1's symptom
    page.keyboard.press("r")
    page.keyboard.type("guideline")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("The queue is empty")).to_be_visible()

    decisions = {d.item_id: d for d in Decision.objects.prefetch_related("labels__category")}
    assert {c.category.code for c in decisions[first.pk].labels.all()} == {"relevant", "oom"}
    assert decisions[first.pk].reason == "annotator-slip"
    assert {c.category.code for c in decisions[second.pk].labels.all()} == {"relevant", "crash"}

    other.keyboard.press("1")
    other.keyboard.press("r")
    other.keyboard.type("other")
    other.keyboard.press("Control+Enter")
    expect(other.get_by_role("alert")).to_contain_text("adjudicator saved a decision")
    assert {c.category.code for c in Decision.objects.get(item=first).labels.all()} == {
        "relevant",
        "oom",
    }
    context.close()
    other_context.close()
