"""In Chromium, with a real Celery worker: an owner downloads a study's backup from the study
page, and a staff member restores it from the studies list, seeing what it holds first."""

from __future__ import annotations

import re

import pytest
from django.core.files.storage import default_storage
from playwright.sync_api import expect

from annotator.backup.archive import ArchiveReader
from annotator.backup.models import BackupJob
from tests.backup.archives import labelled_world
from tests.browser import log_in as browser_log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def log_in(browser, live_server, user, policy_errors):  # type: ignore[no-untyped-def]
    page = browser.new_context(accept_downloads=True).new_page()
    page.set_default_timeout(15_000)
    page.on(
        "console",
        lambda m: policy_errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    browser_log_in(page, live_server.url, user.username)
    expect(page.locator(".who")).to_have_text(user.username)
    return page


def test_an_owner_downloads_a_backup_and_staff_restore_it(
    live_server, browser, celery_worker_process, tmp_path
):
    world = labelled_world()
    staff = UserFactory(username="admin", is_staff=True)
    policy_errors: list[str] = []
    try:
        owner = log_in(browser, live_server, world.owner, policy_errors)
        owner.goto(f"{live_server.url}{world.study.get_absolute_url()}")
        owner.get_by_role("button", name="Download backup").click()
        expect(owner.locator("h1")).to_have_text("Backup of Study")
        expect(owner.locator("[data-status]")).to_have_text("succeeded", timeout=60_000)
        with owner.expect_download() as download:
            owner.get_by_role("link", name=re.compile(r"Download study-\d+-backup-")).click()
        archive = tmp_path / "backup.zip"
        download.value.save_as(archive)
        with ArchiveReader(archive) as reader:
            reader.verify()
            assert reader.manifest.study["name"] == "Study"

        admin = log_in(browser, live_server, staff, policy_errors)
        admin.goto(f"{live_server.url}/studies/")
        admin.get_by_role("link", name="Restore from backup").click()
        admin.get_by_label("Backup archive").set_input_files(str(archive))
        admin.get_by_role("button", name="Upload and check").click()
        expect(admin.locator("h1")).to_have_text("Restore “Study”?")
        expect(admin.locator("[data-restored-as]")).to_contain_text("Study (restored ")
        expect(admin.locator("#restore-summary")).to_contain_text("3 with an account here")
        admin.get_by_role("button", name="Restore").click()
        expect(admin.locator("[data-status]")).to_have_text("succeeded", timeout=60_000)
        admin.get_by_role("link", name=re.compile(r"Open Study \(restored .*\) →")).click()
        expect(admin.locator("h1")).to_contain_text("Study (restored ")
        expect(admin.locator("nav.toolbar")).to_contain_text("Download backup")  # an owner now
        assert policy_errors == []
    finally:
        for job in BackupJob.objects.exclude(file=""):
            default_storage.delete(job.file.name)
