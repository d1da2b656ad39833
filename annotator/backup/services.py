"""Backups as background jobs: a study's archive made by a worker, an uploaded archive checked
and, once a person has seen what it holds and confirmed, restored by a worker.

Both run as jobs rather than inside a request because both grow with the study (a study of
100,000 items is millions of rows): the request only starts them, the page polls the job row.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import unicodedata
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from annotator.issues.search import index_pending_issues
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.models import Study

from .archive import ArchiveReader
from .dump import dump_study
from .errors import REFUSALS, RestoreError
from .matching import free_study_name
from .models import BackupJob
from .restore import RestoreOptions, open_archive, restore_study
from .tables import USERS

logger = logging.getLogger(__name__)
UPLOADS = "backups/uploads"
Kind, Status = BackupJob.Kind, BackupJob.Status


class _Abandoned(Exception):
    """The job was failed as lost while it ran: its restore must not be kept."""


def upload_limit() -> int:
    return int(getattr(settings, "BACKUP_UPLOAD_MAX_MB", 2048)) * 1024 * 1024


# --- dump ----------------------------------------------------------------------------------------
def start_backup_job(*, study: Study, user: Any = None) -> BackupJob:
    """Queue a dump of `study`; its archive is offered for download once the job succeeded."""
    from annotator.dispatch import enqueue_job

    job = BackupJob.objects.create(
        kind=Kind.DUMP, study=study, study_name=study.name, created_by=_person(user)
    )
    enqueue_job(job)
    return job


def run_backup_job(*, job_id: int) -> None:
    """The job body for both kinds. A refusal (a bad archive) fails the job with its message."""
    job = BackupJob.objects.select_related("study", "created_by").get(pk=job_id)
    if not claim_job(BackupJob, job.pk):
        return  # finished, or held by another worker (a redelivered task)
    with job_heartbeat(BackupJob, job.pk):
        try:
            if job.kind == Kind.DUMP:
                _dump(job)
            else:
                _restore(job)
        except (*REFUSALS, _Abandoned) as error:
            finish_job(BackupJob, job.pk, status=Status.FAILED, error=str(error))
        except Exception as error:
            logger.exception("backup job %s failed", job.pk)
            error_text = f"internal error: {type(error).__name__}: {error}"
            finish_job(BackupJob, job.pk, status=Status.FAILED, error=error_text)
            raise
        finally:
            if job.kind == Kind.RESTORE and job.file.name:
                default_storage.delete(job.file.name)  # the uploaded copy has served
                BackupJob.objects.filter(pk=job.pk).update(file="")


def _dump(job: BackupJob) -> None:
    if job.study is None:
        raise RestoreError("the study no longer exists")
    _remove_stray_parts()
    handle, name = tempfile.mkstemp(prefix=f"backup-{job.pk}-", suffix=".zip.part")
    path = Path(name)
    try:
        with open(handle, "wb") as out:
            manifest = dump_study(study=job.study, target=out, on_progress=_progress(job))
        with path.open("rb") as written:
            stored = default_storage.save(f"backups/{job.download_name}", File(written))
        rows = {t["table"]: t["rows"] for t in manifest["tables"]}
        total = sum(rows.values())
        if not finish_job(
            BackupJob,
            job.pk,
            status=Status.SUCCEEDED,
            file=stored,
            tables=rows,
            size_bytes=path.stat().st_size,
            rows_done=total,
            rows_total=total,
        ):
            default_storage.delete(stored)  # failed as lost meanwhile: offer nothing
    finally:
        path.unlink(missing_ok=True)


def _remove_stray_parts(older_than: timedelta = timedelta(days=1)) -> int:
    """Archives being written that a killed worker left in the temporary folder."""
    cutoff = (timezone.now() - older_than).timestamp()
    removed = 0
    for part in Path(tempfile.gettempdir()).glob("backup-*.zip.part"):
        with contextlib.suppress(OSError):
            if part.stat().st_mtime < cutoff:
                part.unlink()
                removed += 1
    return removed


def remove_backup_leftovers() -> int:
    """What killed backup jobs left (the lost-jobs sweep, through `BackupJob.remove_leftovers`):
    archives being written, and uploads no restore uses any more, each after a day. Returns how
    many files were removed."""
    return _remove_stray_parts() + remove_stale_uploads()


def _progress(job: BackupJob) -> Any:
    return lambda done, total: report_progress(BackupJob, job.pk, rows_done=done, rows_total=total)


# --- restore -------------------------------------------------------------------------------------
def receive_upload(*, uploaded: Any) -> dict[str, Any]:
    """Keep an uploaded archive under a generated name and check it whole (structure,
    checksums, schema). Returns what it holds, for the person to confirm; raises a refusal
    (and keeps nothing) when it is not a restorable backup."""
    shown = display_name(getattr(uploaded, "name", ""))
    if uploaded.size is not None and uploaded.size > upload_limit():
        raise RestoreError(f"{shown} is larger than the limit of {upload_limit() // 1024**2} MB")
    remove_stale_uploads()
    stored = default_storage.save(f"{UPLOADS}/{uuid.uuid4().hex}.zip", uploaded)
    try:
        with default_storage.open(stored, "rb") as stream, open_archive(stream, name=shown) as r:
            contents = describe(r)
    except BaseException:
        default_storage.delete(stored)
        raise
    return {"file": stored, "original_name": shown, "size": uploaded.size or 0, **contents}


def describe(reader: ArchiveReader) -> dict[str, Any]:
    """What an archive holds, as the confirmation page shows it."""
    manifest = reader.manifest
    users = reader.manifest.table(USERS)
    names = [row["username"] for _, row in reader.rows(users)] if users else []
    return {
        "study": manifest.study,
        "created_at": manifest.created_at,
        "app_version": manifest.app_version,
        "format_version": manifest.format_version,
        "tables": {t.table: t.rows for t in manifest.tables},
        "usernames": [str(name) for name in names],
    }


def restore_preview(pending: dict[str, Any]) -> dict[str, Any]:
    """The name the study would get here, and which of its people have accounts here."""
    names = pending["usernames"]
    here = set(
        get_user_model()
        .objects.annotate(lowered=Lower("username"))
        .filter(lowered__in=[n.lower() for n in names])
        .values_list("lowered", flat=True)
    )
    return {
        "restored_as": free_study_name(str(pending["study"].get("name", ""))),
        "existing_users": [n for n in names if n.lower() in here],
        "new_users": [n for n in names if n.lower() not in here],
    }


def start_restore_job(
    *, pending: dict[str, Any], user: Any, prefer_existing_issues: bool = False
) -> BackupJob:
    """Queue the restore of a checked upload; `user` becomes an owner of the restored study."""
    from annotator.dispatch import enqueue_job

    if not default_storage.exists(pending["file"]):
        raise RestoreError("the uploaded archive is gone (cleaned up); upload it again")
    job = BackupJob.objects.create(
        kind=Kind.RESTORE,
        file=pending["file"],
        original_name=pending["original_name"],
        size_bytes=pending["size"],
        study_name=str(pending["study"].get("name", ""))[:200],
        rows_total=sum(pending["tables"].values()),
        tables=pending["tables"],
        prefer_existing_issues=prefer_existing_issues,
        created_by=_person(user),
    )
    enqueue_job(job)
    return job


def _restore(job: BackupJob) -> None:
    options = RestoreOptions(
        owner=job.created_by,
        prefer_existing_issues=job.prefer_existing_issues,
        on_progress=_progress(job),
    )
    with job.file.open("rb") as stream, transaction.atomic():
        result = restore_study(
            stream, options=options, name=job.original_name, index_for_search=False
        )
        assert result.study is not None
        # In the restore's own transaction: a restore is kept exactly when its job succeeded.
        tables = {
            label: {"written": n, "reused": result.reused.get(label, 0)}
            for label, n in result.written.items()
        }
        if not finish_job(
            BackupJob,
            job.pk,
            status=Status.SUCCEEDED,
            study=result.study,
            tables=tables,
            summary=result.summary(),
            rows_done=job.rows_total,
        ):
            raise _Abandoned("the job was declared lost while it ran; nothing was kept")
    index_pending_issues()


def remove_stale_uploads(*, older_than: timedelta = timedelta(days=1)) -> int:
    """Delete uploaded archives nobody confirmed (or whose job ended) after a day."""
    try:
        _, files = default_storage.listdir(UPLOADS)
    except FileNotFoundError:
        return 0
    cutoff = timezone.now() - older_than
    in_use = set(
        BackupJob.objects.filter(
            kind=Kind.RESTORE, status__in=[Status.QUEUED, Status.RUNNING]
        ).values_list("file", flat=True)
    )
    removed = 0
    for name in files:
        path = f"{UPLOADS}/{name}"
        if path not in in_use and default_storage.get_modified_time(path) < cutoff:
            default_storage.delete(path)
            removed += 1
    return removed


def display_name(name: str) -> str:
    """An uploaded file's name as data for messages: its last part, no control characters,
    at most 120 characters. Never used as a path."""
    base = re.split(r"[/\\]", name or "")[-1]
    clean = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return clean[:120] or "the file"


def _person(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None
