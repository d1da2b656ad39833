"""What each job model declares for the dispatcher and the sweep (annotator/jobs.py), and the two
statements jobs write by hand (annotator/sql.py) held equal to the ORM updates they stand for."""

from __future__ import annotations

import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from annotator import sql
from annotator.celery import app
from annotator.exports.services import partial_directory
from annotator.issues.models import ImportJob
from annotator.job_sweep import sweep_lost_jobs
from annotator.jobs import Job, job_models

HOLDER = "node-1:41"


def test_every_job_model_names_the_celery_task_that_runs_it() -> None:
    app.loader.import_default_modules()
    models = job_models()
    kinds = {"ImportJob", "SyncJob", "AgreementRun", "ExportJob", "BackupJob"}
    assert {model.__name__ for model in models} >= kinds
    for model in models:
        task = model.task()
        assert task.name == model.task_name and model.task_name in app.tasks, model


@pytest.mark.django_db
def test_the_sweep_removes_what_killed_jobs_of_every_kind_left() -> None:
    export_part = partial_directory() / "job-999999999.csv.part"  # of no running export
    export_part.write_bytes(b"study,item\n1,")
    fd, name = tempfile.mkstemp(prefix="backup-999999999-", suffix=".zip.part")
    os.close(fd)
    backup_part = Path(name)
    two_days_ago = time.time() - 2 * 86400
    os.utime(backup_part, (two_days_ago, two_days_ago))
    try:
        sweep_lost_jobs()
        assert not export_part.exists() and not backup_part.exists()
    finally:
        export_part.unlink(missing_ok=True)
        backup_part.unlink(missing_ok=True)


def _twins(**fields: object) -> tuple[ImportJob, ImportJob]:
    return (
        ImportJob.objects.create(original_name="a.json", **fields),
        ImportJob.objects.create(original_name="a.json", **fields),
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "worker"),
    [("running", HOLDER), ("running", "node-2:7"), ("succeeded", HOLDER), ("queued", "")],
)
def test_touch_heartbeat_does_what_the_orm_update_does(status: str, worker: str) -> None:
    old, at = timezone.now() - timedelta(minutes=5), timezone.now()
    by_sql, by_orm = _twins(status=status, worker=worker, heartbeat_at=old)

    touched = sql.touch_heartbeat(
        ImportJob, by_sql.pk, worker=HOLDER, status=Job.Status.RUNNING, at=at
    )
    updated = ImportJob.objects.filter(
        pk=by_orm.pk, status=Job.Status.RUNNING, worker=HOLDER
    ).update(heartbeat_at=at)

    assert touched == bool(updated)
    by_sql.refresh_from_db()
    by_orm.refresh_from_db()
    assert by_sql.heartbeat_at == by_orm.heartbeat_at


@pytest.mark.django_db(transaction=True)
def test_touch_heartbeat_skips_a_row_another_transaction_holds_rather_than_wait() -> None:
    job = ImportJob.objects.create(original_name="a.json", status="running", worker=HOLDER)
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("SELECT 1 FROM issues_importjob WHERE id = %s FOR UPDATE", [job.pk])
        with transaction.atomic(), connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '5s'")  # a wait would fail, not hang
            assert not sql.touch_heartbeat(
                ImportJob, job.pk, worker=HOLDER, status=Job.Status.RUNNING, at=timezone.now()
            )
    finally:
        other.rollback()
        other.close()
    assert ImportJob.objects.get(pk=job.pk).heartbeat_at is None


@pytest.mark.django_db(transaction=True)
def test_an_update_through_the_side_connection_stores_what_the_orm_update_stores() -> None:
    by_sql, by_orm = _twins()
    values = {"bytes_read": 42, "records_read": 7, "heartbeat_at": timezone.now()}
    side = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with transaction.atomic():  # the job's transaction: the side connection is outside it
            sql.update_row_through(side, ImportJob, by_sql.pk, values)
            ImportJob.objects.filter(pk=by_orm.pk).update(**values)
            with side.cursor() as cursor:  # committed already: another connection sees it
                cursor.execute("SELECT bytes_read FROM issues_importjob WHERE id = %s", [by_sql.pk])
                assert cursor.fetchone() == (42,)
    finally:
        side.close()
    rows = ImportJob.objects.filter(pk__in=[by_sql.pk, by_orm.pk]).order_by("pk")
    first, second = rows.values(*values, "status", "notes", "size_bytes")
    assert first == second
