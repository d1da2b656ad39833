"""A new annotator's first session, in Chromium at 1280 by 720, as one story: the owner makes an
invitation link on the Members page; the newcomer opens it signed out, signs up and lands in
the study; reads the guidelines beside the thread; is refused an item that contradicts the
codebook's rules (and nothing is written); labels ten items with the keyboard, no choice
covered by anything while focused; and the owner sees their progress.

The study uses the seed codebook (with its label rules) and the demo Colossal-AI issues."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from annotator.studies.models import Annotation, Assignment, Membership
from tests.browser import log_in
from tests.studies.test_labeling_layout_browser import inside_viewport, make_lab

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1280, "height": 720}
PASSWORD = "a-long-Passphrase-7"
ITEMS = 10


def new_page(browser: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page


def owner_makes_a_link(page: Any, url: str, study_id: int) -> str:
    page.goto(url + reverse("studies:members", args=[study_id]))
    invitations = page.locator("#invitations")
    invitations.get_by_label("Role").select_option("annotator")
    invitations.get_by_role("button", name="Create link").click()
    link = page.locator("[data-invitation] code").first
    expect(link).to_contain_text("/join/")
    return link.inner_text().strip()


def newcomer_signs_up(page: Any, link: str, study_name: str) -> None:
    page.goto(link)
    expect(page.get_by_role("heading", name=f"Join “{study_name}”")).to_be_visible()
    form = page.locator("#signup")
    form.get_by_label("Username").fill("newcomer")
    form.get_by_label("Email").fill("newcomer@example.org")
    form.get_by_label(re.compile(r"^Password:?$")).fill(PASSWORD)
    form.get_by_label("Password confirmation").fill(PASSWORD)
    form.get_by_role("button", name="Create account and join").click()
    expect(page.get_by_text("you joined as annotator")).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("newcomer")


def reads_the_guidelines_beside_the_thread(page: Any) -> None:
    page.keyboard.press("Shift+G")
    drawer = page.get_by_role("complementary", name="Guidelines")
    expect(drawer).to_be_visible()
    expect(drawer).to_contain_text("a hang after NCCL init is a hang")  # the study's
    expect(drawer.locator("[data-codebook-guideline]")).to_contain_text("Out of memory")
    box, panel = drawer.bounding_box(), page.locator("[data-facet-panel]").bounding_box()
    assert inside_viewport(page, box)
    assert box and panel and box["x"] + box["width"] <= panel["x"]  # the facets stay in view
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()


# Focus each choice of a facet as the keyboard would (the panel scrolls it into view): at the
# centre of its label the browser finds the choice itself, not a pane, a bar or a footer.
FOCUSED_IN_SIGHT = """(key) => {
  const options = [...document.querySelectorAll(`#facet-${key} [data-option]`)];
  const problems = [];
  for (const option of options) {
    option.querySelector("input").focus();
    const r = option.querySelector("label").getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const hit = document.elementFromPoint(x, y);
    if (!hit || hit.closest("[data-option]") !== option) {
      problems.push(`${option.dataset.name} at (${x | 0}, ${y | 0}) is under ${hit ? hit.outerHTML.slice(0, 60) : "nothing (off screen)"}`);
    }
  }
  return {count: options.length, problems};
}"""


def no_choice_is_covered(page: Any, key: str) -> None:
    result = page.evaluate(FOCUSED_IN_SIGHT, key)
    assert result["count"] > 1 and result["problems"] == [], result["problems"]


def submitted(user: Any) -> int:
    return Annotation.objects.filter(
        assignment__annotator=user, status=Annotation.Status.SUBMITTED
    ).count()


def label_one_item(page: Any, user: Any, n: int) -> None:
    """Relevant (screening 1), distributed yes (1), a stage (2), the symptom found by typing
    "hang"; every other item, after a first try with screening alone, which the rules refuse."""
    heading = page.locator("h1").inner_text()
    expect(page.locator(".facet.current legend")).to_contain_text("Screening")
    page.mouse.move(5, VIEWPORT["height"] - 5)  # the pointer off the facets: focus drives the pane
    no_choice_is_covered(page, "screening")
    page.keyboard.press("1")
    expect(page.locator(".facet.current legend")).to_contain_text("Distributed")
    if n % 2 == 0:
        page.keyboard.press("Enter")  # relevant and nothing else: the codebook's rules refuse
        for key in ("distributed", "stage", "symptom"):
            expect(page.locator(f"#error-{key}")).to_contain_text("required when Screening is")
        expect(page.locator("h1")).to_have_text(heading)  # still this item
        assert submitted(user) == n  # nothing submitted
        expect(page.locator(".facet.current legend")).to_contain_text("Distributed")
    page.keyboard.press("1")
    page.keyboard.press("2")
    expect(page.locator(".facet.current legend")).to_contain_text("Symptom")
    if n == 0:
        no_choice_is_covered(page, "symptom")
    page.keyboard.press("f")
    page.keyboard.type("hang")
    page.keyboard.press("Enter")
    expect(page.locator("#facet-symptom input:checked ~ .name")).to_have_text("Hang & timeout")
    page.keyboard.press("Enter")  # submit and next
    expect(page.locator("h1")).not_to_have_text(heading)


def test_a_new_annotator_signs_up_reads_labels_ten_items_and_the_owner_sees_it(
    browser, live_server, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    lab = make_lab(annotators=0, k=1)
    url = live_server.url
    owner_context, owner = new_page(browser)
    log_in(owner, url, lab.owner.username)
    link = owner_makes_a_link(owner, url, lab.study.pk)

    context, page = new_page(browser)  # signed out
    newcomer_signs_up(page, link, lab.study.name)
    user = get_user_model().objects.get(username="newcomer")
    assert Membership.objects.get(study=lab.study, user=user).role == "annotator"
    page.get_by_role("link", name="Start labeling →").click()
    expect(page.locator(".facet.current")).to_have_count(1)
    reads_the_guidelines_beside_the_thread(page)

    for n in range(ITEMS):
        label_one_item(page, user, n)
        assert submitted(user) == n + 1
    refused = Assignment.objects.filter(annotator=user, status=Assignment.Status.SUBMITTED)
    assert refused.count() == ITEMS  # the refused tries wrote no submitted label set

    owner.goto(url + lab.study.get_absolute_url())
    total = lab.study.items.count()
    expect(owner.locator("[data-round-progress]")).to_contain_text(f"{ITEMS} / {total}")
    owner.goto(url + reverse("studies:dashboard", args=[lab.study.pk]))
    row = owner.get_by_role("row").filter(has_text="newcomer")
    expect(row.get_by_role("cell").nth(1)).to_have_text(str(ITEMS))  # Done
    context.close()
    owner_context.close()
