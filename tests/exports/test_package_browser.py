"""The export page in Chromium at 1280 by 720: the owner picks the replication package, ticks
Pseudonymise with the keyboard (its label says what it does, it sits inside the window), and
the Pseudonyms page lists the codes the export gave. Screenshots go to /tmp."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotator.exports.models import ExportJob
from annotator.exports.services import run_export_job
from tests.browser import log_in
from tests.exports.factories import exported_world
from tests.exports.test_analysis_browser import OVERFLOW

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_owner_exports_a_pseudonymised_package_in_the_browser(browser, live_server) -> None:  # type: ignore[no-untyped-def]
    world = exported_world()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    log_in(page, live_server.url, world.owner.username)
    page.goto(live_server.url + reverse("exports:start", args=[world.study.pk]))
    page.get_by_label("Format").select_option("replication")
    box = page.get_by_label("Pseudonymise")
    box.focus()
    page.keyboard.press("Space")
    expect(box).to_be_checked()
    bounds = box.bounding_box()
    assert bounds is not None and bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= 1280
    page.get_by_label("Licence of the labels").select_option("cc0-1.0")
    measured = page.evaluate(OVERFLOW)
    assert measured["page"] <= measured["width"] and measured["outside"] == [], measured
    page.screenshot(path="/tmp/export-page-pseudonymise.png", full_page=True)
    page.get_by_role("button", name="Export").click()
    expect(page).to_have_url(re.compile(r"/exports/\d+/$"))
    job = ExportJob.objects.get()
    assert (job.format, job.pseudonymise, job.license) == ("replication", True, "cc0-1.0")
    # Run here unless a worker of an earlier test took the job first; either way, wait for it.
    run_export_job(job_id=job.pk)
    deadline = time.monotonic() + 60
    while job.status != "succeeded" and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "succeeded", (job.status, job.error)
    page.goto(live_server.url + reverse("exports:start", args=[world.study.pk]))
    page.get_by_role("link", name="Pseudonyms").click()
    expect(page.get_by_role("heading", name="Pseudonyms")).to_be_visible()
    rows = page.locator("table tbody tr")
    expect(rows.first).to_contain_text("A01")
    assert "annotator-0" in page.locator("table").inner_text()
    page.screenshot(path="/tmp/pseudonyms-page.png", full_page=True)
    context.close()
