"""The demo journey in Chromium, two annotators in two browser contexts, keyboard only.

The owner creates a k = 2 study from the Colossal-AI issues, makes two annotator accounts and
adds the issues; annotator 1 and annotator 2 label in separate contexts with the keyboard, are
blind to each other, and the owner's dashboard shows their progress.
"""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotator.studies.models import Annotation, Assignment, Item
from tests.browser import log_in
from tests.factories import PASSWORD, UserFactory
from tests.issues.test_import_service import COMMENTS, ISSUES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def new_page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page


def owner_sets_up_the_study(page, url: str) -> dict[str, str]:
    page.get_by_role("link", name="Studies").click()
    page.get_by_role("link", name="New study").click()
    page.get_by_label("Name").fill("Colossal-AI bugs")
    page.get_by_label("Codebook version").select_option(index=1)
    page.get_by_label("Overlap k").fill("2")
    page.get_by_label("Guidelines").fill("Screening first.")
    page.get_by_role("button", name="Create study").click()
    expect(page.locator("h1")).to_have_text("Colossal-AI bugs")

    passwords = {}
    page.get_by_role("navigation", name="This study").get_by_role("link", name="Members").click()
    for name in ("annotator1", "annotator2"):
        page.get_by_label("Username").fill(name)
        page.get_by_label("Create a new account").check()
        page.get_by_role("button", name="Add").click()
        created = page.get_by_role("status").filter(has_text="created with password")
        passwords[name] = created.locator("code").inner_text()

    page.get_by_role("link", name="Colossal-AI bugs").click()
    page.get_by_role("navigation", name="This study").get_by_role("link", name="Add issues").click()
    page.get_by_label("Repository:", exact=True).select_option(label="hpcaitech/ColossalAI")
    expect(page.locator("[data-preview-total]")).to_have_text("32")  # issues only, by default
    page.get_by_label("Kind:", exact=True).select_option(label="Issues and PRs")
    expect(page.locator("[data-preview-total]")).to_have_text("36")
    page.get_by_label("Seed:", exact=True).fill("2512")
    page.get_by_role("button", name="Add to the round").click()
    expect(page.locator(".method")).to_contain_text("seed 2512")
    expect(page.locator(".method")).to_contain_text("hpcaitech/ColossalAI 36/36")
    return passwords


def test_two_annotators_label_blind_with_the_keyboard_and_the_owner_sees_progress(
    live_server, browser
):
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())
    call_command("load_codebook", publish=True, stdout=io.StringIO())
    UserFactory(username="owner")
    url = live_server.url

    owner_context, owner = new_page(browser)
    log_in(owner, url, "owner", PASSWORD)
    passwords = owner_sets_up_the_study(owner, url)
    assert Item.objects.count() == 36

    one_context, one = new_page(browser)
    two_context, two = new_page(browser)
    log_in(one, url, "annotator1", passwords["annotator1"])
    log_in(two, url, "annotator2", passwords["annotator2"])

    # annotator 1: keyboard only. "1" picks Relevant and moves to the next facet by itself.
    one.get_by_role("link", name="Studies").click()
    one.get_by_role("link", name="Label →").click()
    expect(one.locator(".facet.current legend")).to_contain_text("Screening")
    first_title = one.locator("h1").inner_text()
    one.keyboard.press("1")
    expect(one.locator(".facet.current legend")).not_to_contain_text("Screening")
    expect(one.locator("[data-save-status]")).to_contain_text("Draft saved")
    one.reload()  # a reload loses nothing
    expect(one.locator("#facet-screening input:checked")).to_have_count(1)
    # the page resumes at the first facet without a label
    expect(one.locator(".facet.current legend")).to_contain_text("Distributed-specific")
    one.keyboard.press("1")  # Yes → on to the stage
    one.keyboard.press("4")  # Training & evaluation (the seed's rules ask for it) → the symptom
    expect(one.locator(".facet.current legend")).to_contain_text("Symptom")
    one.keyboard.press("f")  # type to filter; Enter picks the best match
    one.keyboard.type("hang")
    expect(one.locator("#facet-symptom [data-option]:not([hidden])")).to_have_count(2)
    one.keyboard.press("Enter")
    expect(one.locator("#facet-symptom input:checked")).to_have_count(1)
    expect(one.locator("#facet-symptom input:checked ~ .name")).to_have_text("Hang & timeout")
    one.keyboard.press("t")
    one.keyboard.type("NCCL timeout on 4 nodes")
    one.keyboard.press("Escape")
    one.locator("h1").click()
    one.keyboard.press("Enter")  # submit and next
    expect(one.locator("h1")).not_to_have_text(first_title)
    expect(one.locator("[data-my-progress]")).to_have_text(
        "1 / 36"
    )  # of 36 demo items, k = 2, 2 annotators

    # annotator 2 gets the item annotator 1 labeled (breadth first) and sees none of it
    two.goto(f"{url}/studies/")
    two.get_by_role("link", name="Label →").click()
    expect(two.locator("h1")).to_have_text(first_title)
    expect(two.locator("input:checked")).to_have_count(0)
    expect(two.locator("#notes")).to_have_value("")
    assert "NCCL timeout on 4 nodes" not in two.content()
    two.locator("h1").click()
    two.keyboard.press("Enter")  # nothing picked: screening is required
    expect(two.locator("#error-screening")).to_have_text("required: choose a category")
    expect(two.locator(".facet.current legend")).to_contain_text("Screening")
    two.keyboard.press("2")  # Not a bug
    two.keyboard.press("Enter")
    expect(two.locator("h1")).not_to_have_text(first_title)

    # annotator 1 skips with the keyboard
    second_title = one.locator("h1").inner_text()
    one.keyboard.press("x")
    expect(one.locator("[data-skip] select")).to_be_focused()
    one.keyboard.press("Enter")
    expect(one.locator("h1")).not_to_have_text(second_title)

    # the owner's dashboard: item states and each annotator's progress
    owner.goto(f"{url}/studies/")
    owner.get_by_role("link", name="Dashboard").click()
    expect(owner.locator("[data-item-states]")).to_contain_text("1 complete")
    expect(owner.locator('[data-annotator="annotator1"] td').nth(1)).to_have_text("1")
    expect(owner.locator('[data-annotator="annotator1"] td').nth(2)).to_have_text("1")
    expect(owner.locator('[data-annotator="annotator2"] td').nth(1)).to_have_text("1")
    expect(owner.locator("svg.chart rect.complete")).to_have_count(1)

    # neither annotator can reach the other's labels
    theirs = Assignment.objects.get(annotator__username="annotator1", status="submitted")
    response = two.goto(f"{url}/studies/assignments/{theirs.pk}/")
    assert response is not None and response.status == 404
    api = two.request.get(f"{url}/api/studies/{theirs.item.study_id}/annotations/")
    assert [row["annotator"] for row in api.json()["results"]] == ["annotator2"]
    assert Annotation.objects.filter(status="submitted").count() == 2
    assert re.search(r"NCCL timeout", Annotation.objects.get(assignment=theirs).notes)

    for context in (owner_context, one_context, two_context):
        context.close()
