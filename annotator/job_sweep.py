"""The sweep over every kind of job (Celery beat, `annotator.jobs.sweep_lost_jobs_task`): a job
whose worker stopped giving signs of life is marked failed, with an error saying so.

Why failed and not retried automatically: a job that killed its worker (an import that ran the
machine out of memory) would kill the next one too, and a retry loop would hide that. Every
job leaves consistent data when it dies — an import, an agreement run and an export write
all or nothing; a GitHub sync commits page by page with its cursor and resumes after the last
page written — so starting it again is safe, and the person who started it decides. Why not a
short broker visibility timeout instead: jobs run for up to hours (a sync waits out GitHub's
rate limit), and the broker would hand a job still running to a second worker.

What a killed job leaves outside the database (an export's partial file) each job model removes
itself (`Job.remove_leftovers`): the sweep goes over the job models and imports no app. What a
killed request or job leaves in the app's temporary directory (settings.TEMP_DIR: an upload
being received, the sheets an XLSX export was spooling) the sweep removes too, once untouched for
TEMP_FILE_MAX_AGE_SECONDS — longer than any task may run — and open in no process.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from annotator.jobs import Job, fail_lost_jobs, job_models

__all__ = ["job_models", "open_files", "remove_temp_leftovers", "sweep_lost_jobs"]

logger = logging.getLogger(__name__)


def sweep_lost_jobs(*, now: datetime | None = None) -> list[Job]:
    """Fail every running job with no heartbeat for JOB_HEARTBEAT_TIMEOUT_SECONDS, then remove
    what lost jobs left behind (each job model's `remove_leftovers`); return the jobs failed."""
    now = now or timezone.now()
    lost = [job for model in job_models() for job in fail_lost_jobs(model, now=now)]
    for job in lost:
        logger.warning("%s lost with its worker %s", job, job.worker or "(unknown)")
    for model in job_models():
        model.remove_leftovers()
    remove_temp_leftovers()
    return lost


def remove_temp_leftovers(*, now: float | None = None) -> list[Path]:
    """Remove the files under settings.TEMP_DIR (at any depth) last modified more than
    TEMP_FILE_MAX_AGE_SECONDS before `now` (a Unix time; default now) that no process on this
    machine has open. Returns the paths removed."""
    root = Path(settings.TEMP_DIR)
    cutoff = (time.time() if now is None else now) - settings.TEMP_FILE_MAX_AGE_SECONDS
    old: list[Path] = []
    for folder, _, names in os.walk(root):  # links to folders are not followed
        for name in names:
            path = Path(folder, name)
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(info.st_mode) and info.st_mtime < cutoff:
                old.append(path)
    if not old:
        return []
    held = open_files()
    removed = []
    for path in old:
        if os.path.realpath(path) in held:
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    if removed:
        logger.info("removed %d leftover temporary files from %s", len(removed), root)
    return removed


def open_files() -> set[str]:
    """The paths of the files open in any process this one may look at (/proc on Linux; empty
    elsewhere, where the age alone decides)."""
    held: set[str] = set()
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return held
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone meanwhile, or another user's
            continue
        for fd in descriptors:
            try:
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
    return held
