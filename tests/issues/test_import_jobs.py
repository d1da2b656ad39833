"""Import jobs end to end: a real Celery worker process over Redis, against PostgreSQL."""

from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections, transaction

from annotator.issues.models import ImportJob, Issue
from annotator.issues.services import start_import_job
from annotator.jobs import close_progress_connection, report_progress
from tests.issues.test_import_service import ISSUES, rest_issue

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def upload(name: str, content: bytes) -> ImportJob:
    with transaction.atomic():
        return start_import_job(uploaded=SimpleUploadedFile(name, content), format="auto")


def wait_for(job: ImportJob, timeout: float = 90) -> tuple[ImportJob, list[tuple[str, int]]]:
    """Poll the job row as the progress page does; return it finished and what was seen."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        seen.append((job.status, job.bytes_read))
        if job.is_finished:
            return job, seen
        time.sleep(0.02)
    raise AssertionError(f"job {job.pk} still {job.status} after {timeout} s")


def test_worker_imports_an_uploaded_file(celery_worker_process):
    job, _ = wait_for(upload("issues.json", ISSUES.read_bytes()))

    assert job.status == ImportJob.Status.SUCCEEDED, job.error
    assert job.summary == "created 36, updated 0, unchanged 0, skipped 0"
    assert job.percent == 100
    assert job.started_at is not None and job.finished_at is not None
    assert Issue.objects.count() == 36


def test_worker_reports_progress_while_the_import_is_uncommitted(celery_worker_process):
    records = [rest_issue(n, body="x" * 2000) for n in range(1, 20_001)]
    content = json.dumps(records).encode()

    job, seen = wait_for(upload("big.json", content))

    assert job.status == ImportJob.Status.SUCCEEDED, job.error
    partial = [read for status, read in seen if status == "running" and 0 < read < len(content)]
    assert partial, "the progress bar never moved before the import finished"
    assert partial == sorted(partial)
    assert Issue.objects.count() == 20_000
    # The worker indexes the issues for search after the import commits; wait for it, or the
    # database's flush after this test would race the indexer (a deadlock, seen under load).
    deadline = time.monotonic() + 120
    while Issue.objects.filter(search_vector__isnull=True).exists():
        assert time.monotonic() < deadline, "the worker never indexed the imported issues"
        time.sleep(0.2)


def test_failed_job_records_the_error_and_writes_nothing(celery_worker_process):
    bad = json.dumps([rest_issue(1), rest_issue(2, created_at="someday")]).encode()

    job, _ = wait_for(upload("bad.json", bad))

    assert job.status == ImportJob.Status.FAILED
    assert "record 2" in job.error and "'created_at'" in job.error
    assert Issue.objects.count() == 0


def test_progress_is_visible_to_other_connections_before_commit():
    job = ImportJob.objects.create(original_name="x.json", size_bytes=100)
    other = connections.create_connection("default")
    try:
        with transaction.atomic():
            Issue.objects.none()  # the job's own writes would happen here, uncommitted
            report_progress(ImportJob, job.pk, bytes_read=42, records_read=7)
            with other.cursor() as cursor:
                cursor.execute(
                    "SELECT bytes_read, records_read FROM issues_importjob WHERE id = %s", [job.pk]
                )
                assert cursor.fetchone() == (42, 7)
    finally:
        other.close()
        close_progress_connection()
