"""The labeling screen at the sizes people work at (1280 by 720, 1440 by 900), in Chromium, measured as
a person sees it: geometry (`elementFromPoint`, bounding boxes), computed styles and the URL.

The study uses the seed codebook (`load_codebook --publish`) and the demo Colossal-AI issues, so
the facets and threads are their real size. `SCREENSHOTS=1` also writes
docs/screenshots/labeling.png (the README's picture of the labeling screen).
"""

from __future__ import annotations

import io
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from annotator.issues.models import Repository
from annotator.studies.models import Assignment, Membership, Study
from annotator.studies.services import add_member, create_study, select_issues
from taxonomy_app.models import CodebookVersion
from tests.browser import log_in
from tests.factories import UserFactory
from tests.issues.test_import_service import COMMENTS, ISSUES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = [(1280, 720), (1440, 900)]
GUIDELINE = "Label the **first** symptom the reporter saw; a hang after NCCL init is a hang."
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Lab:
    study: Study
    owner: Any
    annotator: Any
    adjudicator: Any


def make_lab(annotators: int = 1, k: int = 1) -> Lab:
    """A study of the demo Colossal-AI issues on the seed codebook."""
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())
    call_command("load_codebook", publish=True, stdout=io.StringIO())
    owner = UserFactory(username="owner")
    version = CodebookVersion.objects.filter(status="published").latest("pk")
    study = create_study(
        name="Colossal-AI bugs",
        codebook_version=version,
        owner=owner,
        overlap_k=k,
        guidelines=GUIDELINE,
    )
    people = [UserFactory(username=f"annotator{i + 1}") for i in range(annotators)]
    for person in people:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    repository = Repository.objects.get(name="ColossalAI")
    filters = {"repository": repository.pk}
    select_issues(study=study, round=study.rounds.get(), filters=filters, seed=2512, user=owner)
    annotator = people[0] if people else None
    return Lab(study=study, owner=owner, annotator=annotator, adjudicator=adjudicator)


def open_labeling(browser: Any, url: str, lab: Lab, size: tuple[int, int]) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, url, lab.annotator.username)
    page.goto(url + reverse("studies:annotate_next", args=[lab.study.pk]))
    expect(page.locator(".facet.current")).to_have_count(1)
    return context, page


def go_to_facet(page: Any, key: str) -> None:
    page.locator(f"#facet-{key} [data-facet-head]").click()
    expect(page.locator(f"#facet-{key}.current")).to_have_count(1)


# Focus each option in turn; at every other option's centre the browser must find that option
# (nothing covers a choice), and the pane must show the focused option's definition.
COVERED = """(key) => {
  const options = [...document.querySelectorAll(`#facet-${key} [data-option]`)];
  const pane = document.querySelector("[data-definition-pane]");
  const problems = [];
  for (const focused of options) {
    document.activeElement.blur();
    focused.querySelector("input").focus();
    const want = focused.querySelector(".definition p:nth-child(2)").textContent.trim();
    if (!pane.textContent.includes(want)) problems.push(`pane misses ${focused.dataset.name}`);
    for (const other of options) {
      if (other === focused) continue;
      const r = other.querySelector("label").getBoundingClientRect();
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      const hit = document.elementFromPoint(x, y);
      if (!hit || hit.closest("[data-option]") !== other) {
        problems.push(`${focused.dataset.name} focused: ${other.dataset.name} at (${x|0}, ${y|0}) is under ${hit ? hit.outerHTML.slice(0, 60) : "nothing (off screen)"}`);
      }
    }
  }
  return {count: options.length, problems};
}"""


def inside_viewport(page: Any, box: dict[str, float] | None) -> bool:
    size = page.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"] + 0.5
        and box["y"] + box["height"] <= size["height"] + 0.5
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_definition_covers_a_choice_and_the_pane_stays_in_view(browser, live_server, size):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, size)
    pane = page.locator("[data-definition-pane]")
    for key, at_least in (("screening", 5), ("symptom", 25)):
        go_to_facet(page, key)
        page.mouse.move(5, size[1] - 5)  # the pointer off the facets: the pane follows focus
        result = page.evaluate(COVERED, key)
        assert result["count"] >= at_least
        assert result["problems"] == []
        assert inside_viewport(page, pane.bounding_box())
    # the pane hides with its key, and comes back
    page.keyboard.press("Shift+D")
    expect(pane).to_be_hidden()
    page.keyboard.press("Shift+D")
    expect(pane).to_be_visible()
    page.keyboard.press("Escape")
    expect(pane).to_be_hidden()
    context.close()


def rgb(text: str) -> tuple[float, float, float, float]:
    parts = [float(p) for p in re.findall(r"[\d.]+", text)]
    return parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0


def luminance(color: tuple[float, float, float, float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b, _ = color
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(fg: tuple[float, float, float, float], bg: tuple[float, float, float, float]) -> float:
    light, dark = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# Each visible key hint's text colour and the background it is drawn on: its own, or the first
# ancestor's that is not transparent.
HINT_COLOURS = """() => [...document.querySelectorAll("kbd")].filter(k => k.offsetParent !== null
    && getComputedStyle(k).visibility === "visible" && k.textContent.trim()).map(k => {
  let node = k, bg = "rgba(0, 0, 0, 0)";
  while (node && node.nodeType === 1) {
    bg = getComputedStyle(node).backgroundColor;
    if (!/rgba\\(.*,\\s*0\\)$/.test(bg) && bg !== "transparent") break;
    node = node.parentElement;
  }
  return {text: k.textContent, where: k.parentElement.textContent.trim().slice(0, 40),
          color: getComputedStyle(k).color, background: bg};
})"""


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_shortcuts_dialog_is_in_view_and_every_key_hint_is_legible(browser, live_server, size):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, size)
    hints = page.evaluate(HINT_COLOURS)
    submit = [h for h in hints if h["where"].startswith("Submit and next")]
    assert submit, "the submit button's key hint is shown"
    low = [(h, round(contrast(rgb(h["color"]), rgb(h["background"])), 2)) for h in hints]
    assert [(h, ratio) for h, ratio in low if ratio < 4.5] == []

    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    assert inside_viewport(page, dialog.bounding_box())
    dialog_hints = page.evaluate(HINT_COLOURS)
    assert all(contrast(rgb(h["color"]), rgb(h["background"])) >= 4.5 for h in dialog_hints)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    context.close()


def scroll_tops(page: Any) -> tuple[float, float]:
    return page.evaluate(
        """() => [document.querySelector("[data-thread]").scrollTop,
                 document.querySelector("[data-facet-panel]").scrollTop]"""
    )


def settled_scroll_tops(page: Any, before: tuple[float, float]) -> tuple[float, float]:
    """The scroll positions once a wheel's smooth scrolling has started (they differ from
    `before`: on a busy machine its first frame can come late; given up after 5 s) and then
    stopped."""
    deadline = time.monotonic() + 5
    now = scroll_tops(page)
    while now == before and time.monotonic() < deadline:
        page.wait_for_timeout(50)
        now = scroll_tops(page)
    previous = None
    for _ in range(50):
        if now == previous:
            return now
        previous = now
        page.wait_for_timeout(100)
        now = scroll_tops(page)
    return now


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_thread_and_facets_scroll_on_their_own_and_the_page_does_not(browser, live_server, size):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, size)
    go_to_facet(page, "fix-pattern")  # the longest facet at the bottom of the panel
    page.locator("#facet-fix-pattern [data-propose] summary").click()  # a taller panel
    page.evaluate("""() => { document.querySelector("[data-thread]").scrollTop = 0;
                             document.querySelector("[data-facet-panel]").scrollTop = 0; }""")
    thread = page.locator("[data-thread]").bounding_box()
    panel = page.locator("[data-facet-panel]").bounding_box()
    assert thread and panel and thread["x"] + thread["width"] <= panel["x"]  # side by side
    assert inside_viewport(page, panel) and inside_viewport(page, thread)

    page.mouse.move(thread["x"] + thread["width"] / 2, thread["y"] + thread["height"] / 2)
    page.mouse.wheel(0, 500)
    thread_top, panel_top = settled_scroll_tops(page, (0, 0))
    assert thread_top > 0 and panel_top == 0

    page.mouse.move(panel["x"] + panel["width"] / 2, panel["y"] + panel["height"] / 2)
    page.mouse.wheel(0, 300)
    after = settled_scroll_tops(page, (thread_top, panel_top))
    assert after[0] == thread_top and after[1] > 0
    assert page.evaluate("document.scrollingElement.scrollTop") == 0  # the window stays put
    # full width: the layout is not capped at 1,200 px
    assert page.evaluate("document.querySelector('main').getBoundingClientRect().width") >= (
        size[0] - 40
    )
    context.close()


def checked_name(page: Any, key: str) -> list[str]:
    return page.locator(f"#facet-{key} [data-option] input:checked ~ .name").all_inner_texts()


def test_a_key_pressed_again_keeps_the_choice_and_undo_restores_the_previous_one(
    browser, live_server
):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    expect(page.locator(".facet.current legend")).to_contain_text("Screening")
    page.keyboard.press("1")  # Relevant, and on to the next facet
    expect(page.locator(".facet.current legend")).to_contain_text("Distributed")
    page.keyboard.press("p")
    page.keyboard.press("1")  # the same key again: still Relevant
    assert checked_name(page, "screening") == ["Relevant"]
    expect(page.locator("[data-key-message]")).to_contain_text("stays chosen")
    expect(page.locator("#facet-screening [data-facet-choice]")).to_have_text("Relevant")

    page.keyboard.press("p")
    page.keyboard.press("2")
    assert checked_name(page, "screening") == ["Not a bug"]
    expect(page.locator("#facet-screening [data-facet-choice]")).to_have_text("Not a bug")
    page.keyboard.press("Control+z")
    assert checked_name(page, "screening") == ["Relevant"]
    expect(page.locator("#facet-screening [data-facet-choice]")).to_have_text("Relevant")
    expect(page.locator("[data-key-message]")).to_contain_text("back to Relevant")

    page.keyboard.press("p")
    page.keyboard.press("Backspace")  # the separate key that clears
    assert checked_name(page, "screening") == []
    page.keyboard.press("Control+z")
    assert checked_name(page, "screening") == ["Relevant"]
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    page.reload()  # the undone state is the saved draft
    assert checked_name(page, "screening") == ["Relevant"]
    context.close()


def test_a_group_the_rules_lock_is_shown_but_never_picked(browser, live_server):
    """The seed codebook's symptom facet is leaf-only: its groups carry no key, keys and the
    filter pick leaves, a click on a group chooses nothing and says why; the group's definition
    still shows on focus."""
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    go_to_facet(page, "symptom")
    group = page.locator("#facet-symptom [data-option][data-locked]").first
    expect(group.locator(".name")).to_have_text("Program failure")
    expect(group.locator("[data-key]")).to_have_text("")
    expect(
        page.locator("#facet-symptom [data-option]:not([data-locked]) [data-key]").first
    ).to_have_text("1")
    page.keyboard.press("1")
    assert checked_name(page, "symptom") == ["Setup failure"]  # the first leaf
    go_to_facet(page, "symptom")  # a single choice moved on to the next facet
    group.locator("label").click(force=True)  # aria-disabled: Playwright would wait
    assert checked_name(page, "symptom") == ["Setup failure"]
    expect(page.locator("[data-key-message]")).to_contain_text("Program failure is a group")
    group.locator("input").focus()
    expect(page.locator("[data-definition-pane]")).to_contain_text("Program failure")
    page.keyboard.press("Space")
    assert checked_name(page, "symptom") == ["Setup failure"]
    # the choice's draft is saved before the page closes: a save still in flight when the test
    # ends holds a row lock while the database is flushed
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    context.close()


def test_filter_enter_picks_the_highlighted_match(browser, live_server):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    go_to_facet(page, "symptom")
    page.keyboard.press("f")
    page.keyboard.type("error")
    best = page.locator("#facet-symptom [data-option].best")
    expect(best).to_have_count(1)
    first = best.inner_text()
    outline = best.locator("label").evaluate("l => getComputedStyle(l).outlineStyle")
    assert outline != "none"  # the highlight shows
    page.keyboard.press("ArrowDown")
    expect(best).not_to_have_text(first)
    chosen = best.locator(".name").inner_text()
    page.keyboard.press("Enter")
    assert checked_name(page, "symptom") == [chosen]
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    context.close()


def test_wrap_toggle_and_guidelines_drawer(browser, live_server):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    widest = """() => Math.max(0, ...[...document.querySelectorAll("[data-thread] pre")]
                   .map(p => p.scrollWidth - p.clientWidth))"""
    overflowing = page.evaluate(widest)
    page.keyboard.press("Shift+W")
    expect(page.locator("[data-wrap-toggle]")).to_have_attribute("aria-pressed", "true")
    if overflowing:  # a code line wider than its block now wraps
        assert page.evaluate(widest) <= 1
    assert page.evaluate(
        "getComputedStyle(document.querySelector('[data-thread] .markdown pre') || document.body)"
        ".whiteSpace"
    ) in {"pre-wrap", "normal"}

    page.keyboard.press("Shift+G")
    drawer = page.get_by_role("complementary", name="Guidelines")
    expect(drawer).to_be_visible()
    expect(drawer).to_contain_text("a hang after NCCL init is a hang")
    expect(drawer.locator("[data-codebook-guideline]")).to_contain_text("annotation guideline")
    expect(drawer.locator("[data-codebook-guideline]")).to_contain_text("Out of memory")
    page.keyboard.type("timeout")  # the search box has focus
    expect(drawer.locator("[data-guidelines-count]")).to_contain_text("matching")
    assert drawer.locator(".entry:visible").count() < drawer.locator(".entry").count()
    # the facets stay usable beside the open drawer
    facets = page.locator("[data-facet-panel]").bounding_box()
    box = drawer.bounding_box()
    assert facets and box and box["x"] + box["width"] <= facets["x"]
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    context.close()


def assignment_url(lab: Lab, *, open_only: bool = True) -> str:
    mine = Assignment.objects.filter(annotator=lab.annotator, item__study=lab.study)
    if open_only:
        mine = mine.filter(status=Assignment.Status.ASSIGNED)
    return mine.get().get_absolute_url()


def test_the_url_follows_the_item_after_submit_and_skip(browser, live_server):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    first = page.url
    assert first.endswith(assignment_url(lab))
    page.keyboard.press("2")  # not a bug: the rest is not needed
    page.locator("h1").click()
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(first)
    second = page.url
    assert second.endswith(assignment_url(lab))
    title = page.locator("h1").inner_text()
    page.reload()
    assert page.url == second and page.locator("h1").inner_text() == title

    page.keyboard.press("x")
    page.keyboard.press("Enter")
    expect(page).not_to_have_url(second)
    third = page.url
    assert third.endswith(assignment_url(lab))
    page.reload()
    assert page.url == third
    expect(page.locator("h1")).not_to_have_text(title)
    context.close()


@pytest.mark.skipif(not os.environ.get("SCREENSHOTS"), reason="SCREENSHOTS=1 writes the README's")
def test_screenshot_of_the_labeling_screen(browser, live_server):
    lab = make_lab()
    context, page = open_labeling(browser, live_server.url, lab, SIZES[0])
    for key in ("1", "1", "2"):  # relevant, distributed-specific, a stage: on to the symptom
        page.keyboard.press(key)
    page.keyboard.press("Shift+W")  # long code lines wrap
    page.locator("#facet-symptom [data-option] input").nth(2).focus()  # its definition shows
    page.mouse.move(5, 715)
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    path = REPO / "docs" / "screenshots" / "labeling.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    context.close()
