"""The "unsure" mark in Chromium at 1280 by 720, keyboard only: Shift+U toggles it on the current
facet, the facet's one-line summary says so in words, undo takes it back, autosave and submit
keep it, and the page shows it again on reload."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotator.studies.models import Annotation, Assignment
from tests.browser import log_in
from tests.studies.factories import make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_shift_u_marks_the_current_facet_unsure_and_it_survives_submit_and_reload(
    browser, live_server
):
    world = make_world(items=2, annotators=1, k=1)
    annotator = world.annotators[0]
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, annotator.username)
    page.goto(live_server.url + reverse("studies:annotate_next", args=[world.study.pk]))
    first = page.url
    expect(page.locator("#facet-screening.current")).to_have_count(1)

    page.keyboard.press("1")  # Relevant; on to the symptom
    expect(page.locator("#facet-symptom.current")).to_have_count(1)
    box = page.get_by_role("checkbox", name="Unsure about Symptom")
    expect(box).not_to_be_checked()
    page.keyboard.press("Shift+U")
    expect(box).to_be_checked()
    bounds = box.bounding_box()
    assert bounds and bounds["y"] >= 0 and bounds["y"] + bounds["height"] <= 720  # in view
    summary = page.locator("#facet-symptom [data-facet-choice]")
    expect(summary).to_have_text("— not chosen · unsure")
    expect(page.locator("[data-key-message]")).to_contain_text("Unsure about Symptom")

    page.keyboard.press("Control+z")  # undo covers the box
    expect(box).not_to_be_checked()
    expect(summary).to_have_text("— not chosen")
    page.keyboard.press("Shift+U")
    expect(box).to_be_checked()

    page.keyboard.press("n")  # the symptom folds to its summary, which still says unsure
    expect(page.locator("#facet-fix.current")).to_have_count(1)
    expect(summary).to_be_visible()
    expect(summary).to_have_text("— not chosen · unsure")
    expect(box).to_be_hidden()
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    draft = Annotation.objects.get(assignment__annotator=annotator)
    assert (draft.status, draft.unsure) == ("draft", ["symptom"])

    page.keyboard.press("Enter")  # submit and next
    expect(page).not_to_have_url(first)
    submitted = Annotation.objects.get(assignment__annotator=annotator)
    assert (submitted.status, submitted.unsure) == ("submitted", ["symptom"])

    page.goto(first)
    expect(page.get_by_role("checkbox", name="Unsure about Symptom")).to_be_checked()
    expect(page.locator("#facet-screening [data-unsure]")).not_to_be_checked()  # folded
    expect(page.locator("#facet-symptom [data-facet-choice]")).to_contain_text("unsure")
    assert first.endswith(Assignment.objects.get(annotation=submitted).get_absolute_url())
    context.close()
