"""The stopping panel as an owner sees it at 1280x720 in Chromium: the verdict at the top, in
the viewport and not covered, the curve drawn, the audit form usable with the keyboard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from annotator.screening.retrain import retrain
from annotator.screening.services import draw_audit
from tests.browser import log_in
from tests.screening.world import screening_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOT = Path(os.environ.get("SCREENSHOT_DIR", "/tmp")) / "screening_panel.png"


def test_the_panel_reads_at_1280_by_720(live_server, page: Page) -> None:
    sw = screening_world(n=120, share=0.2)
    a, b = sw.screeners
    for turn in range(40):
        sw.screen(a), sw.screen(b)
        if turn == 20:
            retrain(sw.world.round.pk)
    draw_audit(round=sw.world.round, size=20, seed=5)
    for _ in range(10):
        sw.screen(a), sw.screen(b)
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in(page, live_server.url, sw.world.owner.username)
    page.goto(f"{live_server.url}/screening/studies/{sw.study.pk}/rounds/{sw.world.round.number}/")
    verdict = page.locator("[data-verdict]")
    expect(verdict).to_contain_text("go on")
    box = verdict.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 720 and box["x"] + box["width"] <= 1280
    on_top = page.evaluate(
        "([x, y]) => document.querySelector('[data-verdict]')"
        ".contains(document.elementFromPoint(x, y))",
        [box["x"] + 5, box["y"] + box["height"] / 2],
    )
    assert on_top
    expect(page.locator("[data-audit]")).to_contain_text("10 of 20 audit items screened")
    chart = page.locator("#figures svg")
    expect(chart).to_be_visible()
    assert chart.get_attribute("aria-label", timeout=1000) is not None
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    # The audit form works from the keyboard: focus the size, type, Enter.
    size = page.locator("#audit").get_by_label("Extend the audit to")
    size.fill("25")
    size.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Audit of 25 items drawn")
