"""Background jobs: the row a page polls (Job), the worker holding it, and progress it can see
mid-transaction.

An import (and an export or agreement run) writes its data inside one transaction so that a
failure leaves nothing behind. Progress written through that same transaction would stay
invisible until the end, so progress goes through a second, autocommitting connection.

A worker killed outright (SIGKILL, the kernel's OOM killer, a lost machine) runs no `except` or
`finally`: its job would stay "running", and Redis hands the unacknowledged task out again only
after the broker's visibility timeout (an hour). So a running job keeps a heartbeat — every
progress report touches `heartbeat_at`, and a thread touches it while a long step reports
nothing — and `annotator.job_sweep` fails the jobs whose heartbeat stopped. A job is claimed and
finished by conditional updates (still running, still this worker), so a redelivered task never
runs a job twice and a job declared lost never turns "succeeded" afterwards.

Each concrete job model names the Celery task that runs it (`task_name`) and removes what its
killed jobs left behind (`remove_leftovers`), so that the dispatcher (`annotator.dispatch`) and
the sweep (`annotator.job_sweep`) go over `job_models()` and import no app.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, ClassVar

from celery import shared_task
from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator import sql

logger = logging.getLogger(__name__)
_local = threading.local()


class Job(models.Model):
    """What every background job row has: its state, who started it, when, and how it ended.

    The row, not Celery's result backend, is the source of truth that pages poll.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="the last sign of life of the worker running it"
    )
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid that ran it")

    # What the error of a job lost with its worker says became of the job's writes.
    lost_outcome: ClassVar[str] = "nothing it wrote was kept"
    # The dotted path of the Celery task that runs a job of this kind (it takes the job's pk),
    # imported only when a job is sent: a models module imports no tasks.
    task_name: ClassVar[str]

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}

    @classmethod
    def task(cls) -> Any:
        """The Celery task that runs a job of this kind (`annotator.dispatch` sends it)."""
        return import_string(cls.task_name)

    @classmethod
    def remove_leftovers(cls) -> int:
        """Remove what jobs of this kind killed with their worker left behind (files: their rows
        are consistent by design) and return how many were removed; the sweep calls it after
        failing the lost jobs. Nothing by default."""
        return 0


def job_models() -> list[type[Job]]:
    """Every concrete job model of the installed apps."""
    return [model for model in apps.get_models() if issubclass(model, Job)]


def worker_identity() -> str:
    """host:pid of this process, recorded on the jobs it runs and checked when it ends them."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def claim_job(model: type[Job], pk: int) -> bool:
    """Mark queued job `pk` running in this worker; False when it is not to be run here.

    A task the broker delivers again (its worker died, or it outlived the visibility timeout)
    finds the job finished, or running: held by a live worker (fresh heartbeat), it is left
    alone; held by a lost one, it is failed as the sweep would. Never run twice.
    """
    now = timezone.now()
    claimed = model._default_manager.filter(pk=pk, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        worker=worker_identity(),
        error="",
    )
    if not claimed:
        fail_lost_jobs(model, now=now, pks=[pk])
    return bool(claimed)


def finish_job(model: type[Job], pk: int, **fields: Any) -> bool:
    """Record the end of job `pk` — its status and counts, error or notes, and the time — if
    this worker still holds it; False when the sweep has meanwhile failed it as lost."""
    held = model._default_manager.filter(pk=pk, status=Job.Status.RUNNING, worker=worker_identity())
    return bool(held.update(finished_at=timezone.now(), **fields))


def fail_lost_jobs(
    model: type[Job], *, now: datetime | None = None, pks: list[int] | None = None
) -> list[Job]:
    """Mark failed the running jobs of `model` with no sign of life for longer than
    JOB_HEARTBEAT_TIMEOUT_SECONDS, and return them (as they were when found)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT_SECONDS)
    silent = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    silent |= Q(heartbeat_at__isnull=True, started_at__isnull=True)
    lost = model._default_manager.filter(silent, status=Job.Status.RUNNING)
    if pks is not None:
        lost = lost.filter(pk__in=pks)
    failed = []
    for job in lost:
        # Only if it is still as found: a heartbeat that came meanwhile proves the worker alive.
        unchanged = model._default_manager.filter(
            pk=job.pk, status=Job.Status.RUNNING, heartbeat_at=job.heartbeat_at
        )
        if unchanged.update(status=Job.Status.FAILED, finished_at=now, error=lost_job_error(job)):
            failed.append(job)
    return failed


def lost_job_error(job: Job) -> str:
    last = job.heartbeat_at or job.started_at
    when = f" at {timezone.localtime(last):%Y-%m-%d %H:%M:%S %Z}" if last else ""
    who = f" ({job.worker})" if job.worker else ""
    return (
        f"The worker running this job{who} stopped before it finished (worker lost{when}); "
        f"{job.lost_outcome}. Start it again."
    )


@shared_task(time_limit=300, soft_time_limit=270)  # type: ignore[untyped-decorator]
def sweep_lost_jobs_task() -> None:
    """Celery beat: fail every job whose worker stopped (annotator/job_sweep.py)."""
    from annotator.job_sweep import sweep_lost_jobs

    sweep_lost_jobs()


# --- heartbeat and progress -------------------------------------------------------------------
@contextmanager
def job_heartbeat(model: type[Job], pk: int, *, every: float | None = None) -> Iterator[None]:
    """Run the body with job `pk`'s heartbeat touched every `every` seconds (a quarter of
    JOB_HEARTBEAT_TIMEOUT_SECONDS) from a thread with its own connection, so that a long step
    reporting no progress is not taken for a lost worker. Closes the job's side connections."""
    stop = threading.Event()
    beat = None
    # SQLite allows one writer at a time and runs its jobs in-process: no thread there.
    if connection.vendor == "postgresql":
        interval = every or settings.JOB_HEARTBEAT_TIMEOUT_SECONDS / 4
        args = (model, pk, worker_identity(), stop, interval)
        beat = threading.Thread(target=_beat, args=args, daemon=True, name=f"heartbeat {pk}")
        beat.start()
    try:
        yield
    finally:
        stop.set()
        if beat is not None:
            beat.join(timeout=10)
        close_progress_connection()


def _beat(model: type[Job], pk: int, worker: str, stop: threading.Event, every: float) -> None:
    try:
        while not stop.wait(every):
            try:
                if not _touch(model, pk, worker):
                    return  # finished, or failed as lost: nothing left to keep alive
            except DatabaseError as error:  # PostgreSQL restarting: try again next beat
                logger.warning("heartbeat of %s %s missed: %s", model.__name__, pk, error)
                connection.close()
    finally:
        connections.close_all()  # this thread's connection only


def _touch(model: type[Job], pk: int, worker: str) -> bool:
    """Touch the heartbeat if this worker still holds the job; False once it does not. A row
    locked by the job's own transaction (finishing) is skipped, not waited for."""
    if sql.touch_heartbeat(model, pk, worker=worker, status=Job.Status.RUNNING, at=timezone.now()):
        return True
    held = model._default_manager.filter(pk=pk, status=Job.Status.RUNNING, worker=worker)
    return held.exists()


def report_progress(model: type[models.Model], pk: int, **fields: Any) -> None:
    """Set `fields` on row `pk` of `model` so that other connections see them now (a job's
    heartbeat too: progress is a sign of life)."""
    if issubclass(model, Job):
        fields["heartbeat_at"] = timezone.now()
    if not connection.in_atomic_block or connection.vendor != "postgresql":
        # Outside a transaction a plain update commits at once. SQLite allows one writer at a
        # time, so a second connection would wait for the job's own transaction: skip it there.
        if not connection.in_atomic_block:
            model._default_manager.filter(pk=pk).update(**fields)
        return
    sql.update_row_through(_side_connection(), model, pk, fields)


def close_progress_connection() -> None:
    """Close the side connection; call when a job ends so no idle connection lingers."""
    side = getattr(_local, "connection", None)
    if side is not None:
        side.close()
        _local.connection = None


def _side_connection() -> Any:
    side = getattr(_local, "connection", None)
    if side is None:
        side = connections.create_connection(DEFAULT_DB_ALIAS)
        _local.connection = side
    return side


@contextmanager
def memory_budget(megabytes: int) -> Iterator[None]:
    """Let the block grow this process's address space by at most `megabytes` (RLIMIT_AS), so a
    runaway parse raises MemoryError in its own job instead of starving the machine and every
    job queued behind it; the previous limit is back afterwards. 0, or no /proc, sets none."""
    if megabytes <= 0 or not os.path.exists("/proc/self/statm"):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * resource.getpagesize()
    limit = size + megabytes * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
