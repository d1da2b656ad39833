"""The analysis page of a reference-sized study (849 decided issues, 34 leaf symptoms, 28 root
causes) in Chromium at 1280 by 720: no horizontal page overflow (wide tables scroll in their own
box), and the symptom level selector turns the symptom tables from groups to leaves.
`SCREENSHOTS=1` also writes docs/screenshots/analysis.png (the README's picture)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.browser import log_in
from tests.exports.study849 import build_reference_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REPO = Path(__file__).resolve().parents[2]
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const page = document.documentElement.scrollWidth;
  const outside = [...document.querySelectorAll("main *")]
    .filter(e => e.getClientRects().length && !e.closest(".scroll"))
    .filter(e => { const r = e.getBoundingClientRect(); return r.right > width + 0.5 || r.left < -0.5; })
    .map(e => e.tagName + (e.id ? "#" + e.id : "") + "." + e.className);
  return {width, page, outside};
}"""


def first_column(page: Any, table_id: str) -> list[str]:
    return page.locator(f"#{table_id} tbody tr td:first-child").all_inner_texts()


def open_analysis(browser: Any, live_server: Any, query: str = "") -> tuple[Any, Any]:
    reference = build_reference_study()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    log_in(page, live_server.url, reference.study.created_by.username)
    url = reverse("exports:analysis", args=[reference.study.pk])
    page.goto(f"{live_server.url}{url}{query}")
    return context, page


def test_analysis_page_fits_1280_and_the_level_selector_shows_leaves(browser, live_server) -> None:  # type: ignore[no-untyped-def]
    context, page = open_analysis(browser, live_server, "?level-symptom=1")
    assert first_column(page, "cross-symptom-root-cause") == [
        "program-failure",
        "unexpected-performance",
        "other",
    ]
    measured = page.evaluate(OVERFLOW)
    assert measured["page"] <= measured["width"] <= 1280, measured
    assert measured["outside"] == [], measured

    page.get_by_label("Symptom level").select_option("leaf")
    expect(page).to_have_url(re.compile(r"[?&]level-symptom=leaf"))
    leaves = first_column(page, "cross-symptom-root-cause")
    assert len(leaves) == 34 and leaves[0] == "setup-failure" and "program-failure" not in leaves
    share = page.locator("#share-symptom tbody tr")
    assert share.count() == 34 + 2 + 1  # the leaves, their two groups and the total
    measured = page.evaluate(OVERFLOW)
    assert measured["page"] <= measured["width"] and measured["outside"] == [], measured
    # the 34 x 28 table scrolls inside its own box, whose right edge stays in the window
    box = page.locator("#cross-symptom-root-cause .scroll")
    assert box.evaluate("e => e.scrollWidth > e.clientWidth")
    bounds = box.bounding_box()
    assert bounds is not None and bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= 1280
    context.close()


@pytest.mark.skipif(not os.environ.get("SCREENSHOTS"), reason="SCREENSHOTS=1 writes the README's")
def test_screenshot_of_the_analysis_page(browser, live_server) -> None:  # type: ignore[no-untyped-def]
    context, page = open_analysis(browser, live_server)
    path = REPO / "docs" / "screenshots" / "analysis.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    context.close()
