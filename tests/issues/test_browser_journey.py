"""The newcomer's journey in Chromium: log in, browse, search, read a log, upload a file."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotator.issues.models import ImportJob
from tests.factories import PASSWORD, UserFactory
from tests.issues.test_import_service import COMMENTS, ISSUES, rest_issue

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_researcher_logs_in_searches_reads_a_log_and_uploads(
    live_server, page, celery_worker_process, tmp_path
):
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())
    owner = UserFactory(username="owner", is_staff=True)

    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.get_by_label("Username").fill(owner.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    expect(page.locator(".count")).to_have_text("36 issues")
    page.locator("h1").click()
    page.keyboard.press("/")
    expect(page.get_by_label("Search")).to_be_focused()
    page.keyboard.type("NCCL")  # results follow the typing; no Enter needed
    expect(page.locator(".count")).to_contain_text("matching “NCCL”")
    expect(page).to_have_url(re.compile(r"q=NCCL"))
    expect(page.locator("#issue-results")).to_have_count(1)  # swapped, not nested in itself
    page.locator("h1").click()
    page.keyboard.press("j")
    expect(page.locator("[data-row-link]").first).to_be_focused()
    page.get_by_role("link", name=re.compile("multi-node training hanging")).click()

    expect(page.locator("h1")).to_contain_text("#6377")
    log = page.locator(".markdown pre code").first
    expect(log).to_be_visible()
    expect(log).to_contain_text("torchrun --nnodes=4")

    upload = tmp_path / "new-issues.json"
    upload.write_text(
        json.dumps([rest_issue(n, repo="NVIDIA/Megatron-LM") for n in range(1, 3001)])
    )
    page.get_by_role("link", name="Import").click()
    page.get_by_label("File").set_input_files(str(upload))
    page.get_by_role("button", name="Upload and import").click()

    expect(page.locator("h1")).to_have_text("Importing new-issues.json")
    expect(page.locator("[data-status]")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("#import-progress")).to_have_attribute("value", "100")
    expect(page.get_by_role("status")).to_have_text(
        "created 3000, updated 0, unchanged 0, skipped 0"
    )
    assert ImportJob.objects.get().status == "succeeded"

    page.get_by_role("link", name="Browse the issues →").click()
    expect(page.locator(".count")).to_have_text("3,036 issues")
