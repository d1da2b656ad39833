"""Steps of a whole study as people do them in Chromium, and readers of what it produced.

The journey test strings these together; each step waits for what the page shows when the step
is done (a job's status, the next item's page), never for a fixed time, so a slow machine makes
the test slower, not flaky.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, expect

from annotator.adjudication.models import Decision
from annotator.studies.models import Annotation, Item
from tests.browser import log_in

JOB_TIMEOUT_MS = 60_000  # a job waits for the worker, which may be busy with another test's job


# --- sessions --------------------------------------------------------------------------------
def open_session(browser: Browser, url: str, username: str, password: str) -> Page:
    """A fresh browser context (its own cookies: one person) logged in as `username`."""
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, url, username, password)
    return page


def close_sessions(*pages: Page) -> None:
    contexts: list[BrowserContext] = [page.context for page in pages]
    for context in contexts:
        context.close()


# --- owner's steps ---------------------------------------------------------------------------
def upload_issues(page: Page, path: Path) -> str:
    """Upload a file on the Import page; returns the job's summary once the worker is done."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Import").click()
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_role("button", name="Upload and import").click()
    expect(page.locator("h1")).to_have_text(f"Importing {path.name}")
    expect(page.locator("[data-status]")).to_have_text("succeeded", timeout=JOB_TIMEOUT_MS)
    return page.get_by_role("status").inner_text()


def import_and_publish_codebook(page: Page, path: Path, changelog: str) -> None:
    """Import a codebook file as a draft on the Codebooks page, then review and publish it."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Codebooks").click()
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("v1")
    page.get_by_role("link", name="Review and publish…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Publish v1?")
    page.get_by_label("Changelog").fill(changelog)
    page.get_by_role("button", name="Publish v1").click()
    expect(page.locator(".messages")).to_contain_text("Published v1")


def study_nav(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="This study").get_by_role("link", name=name).click()


def add_member_accounts(page: Page, names: list[str], role: str) -> dict[str, str]:
    """On the Members page: create an account per name with `role`; returns the passwords the
    page prints once."""
    passwords = {}
    add = page.locator("form").filter(has=page.get_by_role("heading", name="Add a member"))
    for name in names:
        add.get_by_label("Username").fill(name)
        add.get_by_label("Role").select_option(role)
        add.get_by_label("Create a new account").check()
        add.get_by_role("button", name="Add").click()
        created = page.get_by_role("status").filter(has_text="created with password")
        expect(created).to_contain_text(name)
        passwords[name] = created.locator("code").inner_text()
    return passwords


def add_issues_to_new_round(page: Page, round_choice: str, sample: int, seed: int) -> None:
    """On the Add issues page: a seeded sample of the issues not yet in the study, into a new
    round ("A new calibration round" or "A new main round")."""
    page.get_by_label("Round:", exact=True).select_option(label=round_choice)
    page.get_by_label("Sample size:", exact=True).fill(str(sample))
    page.get_by_label("Seed:", exact=True).fill(str(seed))
    page.get_by_role("button", name="Add to the round").click()
    expect(page.locator(".messages")).to_contain_text(f"Added {sample} issues to round")


# --- annotator's steps -----------------------------------------------------------------------
def annotate_page_ready(page: Page) -> bool:
    """Wait until the page is an item to label with its keyboard script running (it marks the
    current facet), or the "all done" page. True for an item."""
    item_or_done = page.locator(".facet.current, [data-all-done]")
    expect(item_or_done.first).to_be_visible()
    return page.locator("[data-all-done]").count() == 0


def current_issue(page: Page) -> str:
    """The issue on the annotate or adjudicate page, as `owner/name#number`."""
    return page.locator("h1 .number").inner_text().strip()


def press_keys(page: Page, keys: list[str]) -> None:
    for key in keys:
        page.keyboard.press(key)


def submit_with(page: Page, keys: list[str]) -> None:
    """Press `keys` on an item (the last one submits or skips) and wait for the page that
    follows: the next item or "all done"."""
    before = page.url
    press_keys(page, keys)
    page.wait_for_url(lambda url: url != before)
    annotate_page_ready(page)


# --- downloads and what the database holds ---------------------------------------------------
def download_export(page: Page, study_id: int, url: str, fmt: str, dest: Path) -> Path:
    """Start an export of the final dataset on the Export page, wait for the worker, and catch
    the file the Download link sends."""
    page.goto(f"{url}/exports/studies/{study_id}/")
    page.get_by_label("Format").select_option(fmt)
    page.get_by_label("Table").select_option("final")
    page.get_by_role("button", name="Export", exact=True).click()
    expect(page.locator("[data-status]")).to_have_text("succeeded", timeout=JOB_TIMEOUT_MS)
    with page.expect_download() as caught:
        page.get_by_role("link", name=re.compile(r"^Download ")).click()
    download = caught.value
    path = dest / download.suggested_filename
    download.save_as(path)
    return path


def read_final_dataset(path: Path) -> dict[int, dict[str, Any]]:
    """Rows of a downloaded final dataset (CSV or JSON) by item id."""
    if path.suffix == ".json":
        rows = json.loads(path.read_text(encoding="utf-8"))
    else:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    return {int(row["item_id"]): row for row in rows}


def exported_codes(row: dict[str, Any], facet_key: str) -> set[str]:
    """The codes a final-dataset row gives a facet, by the column contract in
    annotator/exports/writers.py: `<facet>` (a code, or a list: `;`-joined in CSV), or
    `<facet>_l1`, `_l2`… for a hierarchy, whose deepest filled level is the label."""
    column = facet_key.replace("-", "_")
    if column in row:
        value = row[column]
        if isinstance(value, list):
            return set(value)
        return {code for code in (value or "").split(";") if code}
    levels = sorted(name for name in row if re.fullmatch(rf"{column}_l\d+", name))
    filled = [row[name] for name in levels if row[name]]
    return {filled[-1]} if filled else set()


def decisions_in_database(study_id: int) -> dict[int, dict[str, Any]]:
    """Every item of the study with its decision's source and codes per facet key."""
    out: dict[int, dict[str, Any]] = {}
    items = Item.objects.filter(study_id=study_id).select_related("issue__repository")
    decisions = {
        d.item_id: d
        for d in Decision.objects.filter(item__study_id=study_id).prefetch_related(
            "labels__category", "labels__facet"
        )
    }
    for item in items:
        decision = decisions.get(item.pk)
        codes: dict[str, set[str]] = defaultdict(set)
        for label in decision.labels.all() if decision else ():
            codes[label.facet.key].add(label.category.code)
        out[item.pk] = {
            "issue": str(item.issue),
            "source": decision.source if decision else None,
            "codes": dict(codes),
        }
    return out


def annotation_codes(study_id: int) -> dict[tuple[str, str], dict[str, set[str]]]:
    """Submitted labels by (issue, annotator username) → {facet key: codes}."""
    out: dict[tuple[str, str], dict[str, set[str]]] = {}
    annotations = Annotation.objects.filter(
        assignment__item__study_id=study_id, status=Annotation.Status.SUBMITTED
    ).select_related("assignment__annotator", "assignment__item__issue__repository")
    for annotation in annotations.prefetch_related("labels__category", "labels__facet"):
        codes: dict[str, set[str]] = defaultdict(set)
        for label in annotation.labels.all():
            codes[label.facet.key].add(label.category.code)
        key = (str(annotation.assignment.item.issue), annotation.assignment.annotator.username)
        out[key] = dict(codes)
    return out
