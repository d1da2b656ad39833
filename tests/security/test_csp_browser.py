"""The pages work in Chromium under the enforced Content-Security-Policy: searching, labeling with
the keyboard, adjudicating and exporting (htmx swaps, polling, autosave) raise no
`securitypolicyviolation` event and no console error, while each interaction still does its job.
A deliberate inline style at the end proves the watcher sees violations when there are some."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from playwright.sync_api import expect

from annotator.adjudication.models import Decision
from annotator.exports.models import ExportJob
from annotator.exports.services import run_export_job
from annotator.issues.search import index_pending_issues
from annotator.studies.models import Annotation
from tests.adjudication.helpers import Scene, label_next, make_scene
from tests.browser import log_in
from tests.factories import IssueFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before any script of each page: reports every violation to the test, whatever the page.
WATCH = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.reportViolation(`${event.effectiveDirective} blocked ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || document.location.pathname}:${event.lineNumber}`);
});
"""


class Watched:
    """A logged-in browser context whose violations and console errors are collected."""

    def __init__(self, browser: Any, url: str, username: str) -> None:
        self.problems: list[str] = []
        self.context = browser.new_context()
        self.context.expose_function("reportViolation", self._violation)
        self.context.add_init_script(WATCH)
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        log_in(self.page, url, username)

    def _violation(self, text: str) -> None:
        self.problems.append(text)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.problems.append(f"console error: {message.text}")

    def settle(self) -> list[str]:
        """The problems so far, once in-flight events have had a moment to arrive."""
        self.page.wait_for_timeout(300)
        return list(self.problems)


@pytest.fixture
def scene(live_server) -> Scene:  # type: ignore[no-untyped-def]
    """A k = 2 study of four issues: one disputed and waiting for adjudication, three to label."""
    with transaction.atomic():
        scene = make_scene()
        label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
        IssueFactory(
            title="NCCL watchdog timeout on 64 ranks", repository=scene.world.issues[0].repository
        )
    index_pending_issues()
    return scene


@pytest.fixture
def watched(browser, live_server) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    opened: list[Watched] = []

    def open_as(username: str) -> Watched:
        opened.append(Watched(browser, live_server.url, username))
        return opened[-1]

    yield open_as
    for each in opened:
        each.context.close()


def test_search_codebook_and_printing_work_without_violations(scene, watched, live_server) -> None:  # type: ignore[no-untyped-def]
    owner = watched("study-owner")
    page = owner.page
    page.goto(f"{live_server.url}/issues/")
    page.locator("h1").first.click()  # leave the autofocused search box
    page.keyboard.press("/")
    expect(page.get_by_label("Search")).to_be_focused()
    page.keyboard.type("watchdog")
    expect(page.locator("[data-row-link]")).to_have_count(1)
    expect(page.locator("[data-row-link]")).to_contain_text("NCCL watchdog timeout")
    assert "q=watchdog" in page.url  # htmx pushed the search into the address bar

    version = scene.world.version
    page.goto(f"{live_server.url}/codebooks/versions/{version.pk}/")
    nested = page.locator("li.category.depth-1").first
    expect(nested).to_be_visible()
    indent = nested.evaluate("e => getComputedStyle(e).marginLeft")
    assert indent != "0px", "the depth class no longer indents nested categories"
    page.goto(f"{live_server.url}/codebooks/versions/{version.pk}/guideline/")
    page.evaluate("window.print = () => { window.printed = true; }")
    page.get_by_role("link", name="Print").click()
    assert page.evaluate("window.printed") is True
    assert owner.settle() == []

    page.evaluate("document.body.setAttribute('style', 'color: red')")
    assert any(problem.startswith("style-src-attr blocked inline") for problem in owner.settle())


def test_labeling_with_the_keyboard_works_without_violations(scene, watched, live_server) -> None:  # type: ignore[no-untyped-def]
    annotator = watched("annotator-0")
    page = annotator.page
    page.goto(f"{live_server.url}/studies/{scene.study.pk}/annotate/")
    expect(page.locator(".facet.current legend")).to_contain_text("Screening")
    first_title = page.locator("h1").inner_text()
    page.keyboard.press("1")  # Relevant: saved as a draft by fetch()
    expect(page.locator("[data-save-status]")).to_contain_text("Draft saved")
    page.locator("h1").click()
    page.keyboard.press("Enter")  # submit and go on to the next item
    expect(page.locator("h1")).not_to_have_text(first_title)
    mine = Annotation.objects.filter(assignment__annotator__username="annotator-0")
    assert mine.filter(status="submitted").count() == 2
    assert annotator.settle() == []


def test_adjudicating_and_exporting_work_without_violations(scene, watched, live_server) -> None:  # type: ignore[no-untyped-def]
    adjudicator = watched("adjudicator")
    page = adjudicator.page
    page.goto(f"{live_server.url}/adjudication/studies/{scene.study.pk}/")
    page.get_by_role("link", name="Start with the first").click()
    expect(page.locator("tr.current")).to_contain_text("Symptom")
    page.keyboard.press("2")  # take annotator 2's symptom
    page.keyboard.press("r")
    page.keyboard.type("annotator")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Decision saved")).to_be_visible()
    decision = Decision.objects.get()
    assert {label.category.code for label in decision.labels.all()} == {"relevant", "oom"}
    assert adjudicator.settle() == []

    owner = watched("study-owner")
    page = owner.page
    page.goto(f"{live_server.url}/exports/studies/{scene.study.pk}/")
    page.get_by_role("button", name="Export").click()
    status = page.locator("#export-status")
    expect(status).to_be_visible()
    job = ExportJob.objects.get()
    page.wait_for_timeout(1200)  # the page polls every 500 ms while the job waits for a worker
    run_export_job(job_id=job.pk)
    expect(page.get_by_role("link", name="Download")).to_be_visible()
    assert owner.settle() == []
