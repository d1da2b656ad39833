"""Accessibility of the main pages in Chromium at 1280x720: axe-core (npm, pinned in
package-lock.json; `make test` installs it) finds no serious or critical WCAG 2.0/2.1 A and AA
violation on any of them; keyboard focus is visible on every element Tab reaches; the skip link
is the first stop and takes focus to the page's main content."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.adjudication.helpers import label_next, make_scene
from tests.browser import log_in
from tests.main_pages import SIGNED_OUT, MainPages, main_pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORT = {"width": 1280, "height": 720}
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}
# axe's results, cut to what a failure message needs: the rule, its help, the first targets.
RUN_AXE = """async (tags) => {
  const results = await axe.run(document, {runOnly: {type: "tag", values: tags}});
  return results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(" ")),
  }));
}"""

# What axe leaves "to review" when an aria-describedby (or a label's `for`) names an id that is
# not on the page: on these server-rendered pages nothing arrives later, so it is a fault (a
# screen reader then reads a field without its help text or its error).
DANGLING_REFERENCES = """() => {
  const problems = [], ids = {};
  for (const el of document.querySelectorAll("[id]")) ids[el.id] = (ids[el.id] || 0) + 1;
  const named = (el, attr, id) => {
    const what = `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""} ${attr}="${id}"`;
    if (!ids[id]) problems.push(`${what} names no element`);
    else if (ids[id] > 1) problems.push(`${what} names ${ids[id]} elements`);
  };
  const attrs = ["aria-describedby", "aria-labelledby", "aria-controls", "aria-errormessage"];
  for (const el of document.querySelectorAll(attrs.map(a => `[${a}]`).join(","))) {
    for (const attr of attrs) {
      for (const id of (el.getAttribute(attr) || "").split(/\\s+/).filter(Boolean)) named(el, attr, id);
    }
  }
  for (const label of document.querySelectorAll("label[for]")) named(label, "for", label.htmlFor);
  return problems;
}"""


def new_page(browser: Any) -> Any:
    # axe comes in as an inline script, which the app's Content-Security-Policy refuses.
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Every WCAG A/AA violation axe finds on the page as it is now."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `make test` installs it (npm ci)")
    page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN_AXE, WCAG_TAGS)


def describe(violation: dict[str, Any]) -> str:
    targets = ", ".join(violation["targets"])
    more = f" and {violation['count'] - 3} more" if violation["count"] > 3 else ""
    return f"{violation['id']} ({violation['impact']}): {violation['help']} — {targets}{more}"


def test_no_main_page_has_a_serious_or_critical_axe_violation_or_a_dangling_reference(
    browser, live_server
):
    world: MainPages = main_pages()
    failures: list[str] = []
    checked = 0
    for reader, pages in world.by_reader().items():
        page = new_page(browser)
        if reader != SIGNED_OUT:
            log_in(page, live_server.url, world.username(reader))
        for main_page in pages:
            response = page.goto(live_server.url + main_page.path)
            assert response is not None and response.ok, (main_page, response and response.status)
            where = f"{main_page.name} ({main_page.path})"
            for violation in axe_violations(page):
                if violation["impact"] in BLOCKING:
                    failures.append(f"{where}: {describe(violation)}")
            failures += [f"{where}: {p}" for p in page.evaluate(DANGLING_REFERENCES)]
            checked += 1
        page.context.close()
    assert checked == len(world.pages) >= 30
    assert not failures, "\n".join(failures)


# Each focused element's own focus indicator: its outline and box shadow.
FOCUS_STYLE = """el => {
  const s = getComputedStyle(el), box = el.getBoundingClientRect();
  const name = (el.getAttribute("aria-label") || el.textContent || el.name || el.id || "").trim();
  return {
    element: `${el.tagName.toLowerCase()} "${name.slice(0, 40)}"`,
    outline: s.outlineStyle === "none" ? "" : `${s.outlineWidth} ${s.outlineStyle} ${s.outlineColor}`,
    outlineWidth: parseFloat(s.outlineWidth) || 0,
    shadow: s.boxShadow === "none" ? "" : s.boxShadow,
    visible: box.width > 0 && box.height > 0 && box.bottom > 0 && box.top < innerHeight,
  };
}"""
TABS = 25
# Focus on the body itself: the next Tab goes to the page's first focusable element.
FOCUS_TOP = """() => {
  document.body.tabIndex = -1;
  document.body.focus();
  document.body.removeAttribute("tabindex");
}"""


def focus_problems(page: Any) -> list[str]:
    """Tab from the top through the first focusable elements: each must show an outline of
    non-zero width or a box shadow while focused, unlike its look once focus has moved on."""
    page.evaluate(FOCUS_TOP)
    stops: list[tuple[Any, dict[str, Any]]] = []
    for _ in range(TABS):
        page.keyboard.press("Tab")
        element = page.evaluate_handle("document.activeElement")
        if element.evaluate("el => el === document.body"):
            break  # past the last one
        stops.append((element, element.evaluate(FOCUS_STYLE)))
    page.evaluate("document.activeElement.blur()")  # the last one unfocused as well
    problems = []
    for element, focused in stops:
        resting = element.evaluate(FOCUS_STYLE)
        shown = (focused["outline"] and focused["outlineWidth"] > 0) or focused["shadow"]
        changed = (focused["outline"], focused["shadow"]) != (resting["outline"], resting["shadow"])
        if not (shown and changed and focused["visible"]):
            problems.append(f"{focused['element']}: focused {focused}, unfocused {resting}")
    assert len(stops) >= 15, [s for _, s in stops]  # Tab went through the page
    return problems


def test_focus_is_visible_on_the_annotate_page_and_the_issue_list(browser, live_server):
    scene = make_scene()
    page = new_page(browser)
    log_in(page, live_server.url, scene.annotators[0].username)
    problems = {}
    for path in (reverse("studies:annotate_next", args=[scene.study.pk]), reverse("issues:list")):
        page.goto(live_server.url + path)
        problems[path] = focus_problems(page)
    page.context.close()
    assert problems == {path: [] for path in problems}


def test_the_skip_link_is_the_first_stop_and_moves_focus_to_the_main_content(browser, live_server):
    scene = make_scene()
    page = new_page(browser)
    log_in(page, live_server.url, scene.annotators[0].username)
    page.goto(live_server.url + reverse("issues:list"))
    page.keyboard.press("Tab")
    link = page.get_by_role("link", name="Skip to content")
    assert link.evaluate("el => el === document.activeElement")
    box = link.bounding_box()
    assert box is not None and box["y"] >= 0 and box["x"] >= 0 and box["height"] > 10
    assert link.is_visible()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    assert page.evaluate("document.activeElement.tagName") == "MAIN"
    page.context.close()


def test_what_the_adjudicate_page_shows_by_colour_it_also_says(browser, live_server):
    """Rows where the annotators differ (yellow), labels not everyone chose (red) and the
    current facet's field (blue) each carry words or a mark besides their colour."""
    scene = make_scene()
    item = label_next(scene, {"symptom": "hang", "fix": ["config"]}, {"symptom": "oom"})
    page = new_page(browser)
    log_in(page, live_server.url, scene.adjudicator.username)
    page.goto(live_server.url + reverse("adjudication:item", args=[item.pk]))
    differing = page.locator("table.compare tr.differs")
    assert differing.count() >= 2  # symptom and fix pattern
    told = page.get_by_role("rowheader", name=re.compile("the annotators differ"))
    assert told.count() == differing.count()
    odd = page.locator("table.compare .tag.odd")
    assert odd.count() >= 3  # hang, oom, config
    assert all("(not everyone chose it)" in text for text in odd.all_text_contents())
    shared = page.locator("table.compare .tag:not(.odd)").all_text_contents()
    assert not any("not everyone" in text for text in shared)
    label = page.locator(".decision-form .field.current label")
    assert label.count() == 1
    mark = label.evaluate("el => getComputedStyle(el, '::before').content")
    assert mark not in ("none", "normal", ""), mark
    page.context.close()
