"""Sending a job's task to the queue (Redis) without letting a missing queue break the request.

Labeling and adjudication need only PostgreSQL; only jobs need Redis. A plain `delay_on_commit`
raises into the request once the job row has committed when Redis is down, and waits for ever
when Redis hangs. So every job is sent through `enqueue_job`: after commit, with the short broker
timeouts and the single publish retry of settings (a dead Redis costs about a second), and a job
that could not be sent stays "queued" with `QUEUE_UNAVAILABLE` in its notes, which the page shows
(`warn_if_waiting`) and the API returns as `detail` (`with_queue_notice`).

Such a job is sent again when the queue is back: by Celery beat (`redispatch_waiting_jobs_task`)
and as soon as a worker starts (`worker_ready`). Each job row is locked (SKIP LOCKED) while it is
sent again, so two senders never send the same job; and a worker runs a job only after claiming
it (`annotator.jobs.claim_job`, an UPDATE … WHERE status = 'queued'), so a second message for a
job already taken does nothing.

Each job model names its own task (`Job.task_name`); the dispatcher goes over every concrete job
model (`annotator.jobs.job_models`) and imports no app.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.contrib import messages
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from annotator.jobs import Job, job_models

logger = logging.getLogger(__name__)

QUEUE_UNAVAILABLE = (
    "Background jobs are unavailable right now (the queue, Redis, cannot be reached). "
    "The job will start when the queue is back."
)

# A worker that starts sends again the jobs queued longer than this whose message Redis may have
# lost (a Redis restarted without persistence): a queued job has no other way to start.
STARTUP_RESEND_AFTER = timedelta(minutes=1)


def enqueue_job(job: Job) -> None:
    """Send `job`'s task once the current transaction commits (at once outside one).

    Never raises into the caller: when the queue cannot be reached the job stays queued with
    QUEUE_UNAVAILABLE in its notes (on the row and on `job`) and starts when the queue is back.
    """
    transaction.on_commit(lambda: send_job(job), robust=True)


def send_job(job: Job) -> bool:
    """Publish `job`'s task now; False (and the job marked waiting) when the queue is down."""
    try:
        type(job).task().apply_async(args=[job.pk])
    except Exception as error:  # any broker failure: connection refused, timeout, auth, …
        logger.warning("%s %s waits for the queue: %s", type(job).__name__, job.pk, error)
        _mark_waiting(type(job), job.pk)
        job.notes = QUEUE_UNAVAILABLE
        return False
    return True


def queue_notice(job: Job) -> str:
    """QUEUE_UNAVAILABLE while `job` waits for the queue to come back, else ""."""
    waiting = job.status == Job.Status.QUEUED and job.notes == QUEUE_UNAVAILABLE
    return QUEUE_UNAVAILABLE if waiting else ""


def warn_if_waiting(request: HttpRequest, job: Job) -> None:
    """Tell the person who started `job` on a page that it waits for the queue."""
    if notice := queue_notice(job):
        messages.warning(request, notice)


def with_queue_notice(data: Any, job: Job) -> Any:
    """An API answer for a started job, with `detail` when the job waits for the queue."""
    if notice := queue_notice(job):
        return {**data, "detail": notice}
    return data


def redispatch_waiting_jobs(*, resend_older_than: timedelta | None = None) -> int:
    """Send again every queued job that could not be sent; with `resend_older_than`, also the
    queued jobs older than that (messages a restarted Redis may have lost). Stops at the first
    failure, as the queue is down again. Returns how many jobs were sent."""
    sent = 0
    for model in job_models():
        wanted = Q(notes=QUEUE_UNAVAILABLE)
        if resend_older_than is not None:
            wanted |= Q(created_at__lt=timezone.now() - resend_older_than)
        with transaction.atomic():
            # Locked until sent and unmarked: a concurrent sender skips these rows, and a worker
            # claiming one waits for the commit.
            waiting = model._default_manager.select_for_update(skip_locked=True).filter(
                wanted, status=Job.Status.QUEUED
            )
            for job in waiting.order_by("created_at", "pk"):
                if not send_job(job):
                    return sent
                model._default_manager.filter(pk=job.pk, notes=QUEUE_UNAVAILABLE).update(notes="")
                sent += 1
    if sent:
        logger.info("sent %s job(s) that waited for the queue", sent)
    return sent


@shared_task(time_limit=120, soft_time_limit=110)  # type: ignore[untyped-decorator]
def redispatch_waiting_jobs_task(startup: bool = False) -> None:
    """Celery beat (and a worker that starts): send the jobs that waited for the queue."""
    redispatch_waiting_jobs(resend_older_than=STARTUP_RESEND_AFTER if startup else None)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _redispatch_on_worker_start(**kwargs: Any) -> None:
    # Through the queue rather than here: the worker's main process keeps no database connection.
    try:
        redispatch_waiting_jobs_task.apply_async(kwargs={"startup": True})
    except Exception:
        logger.exception("could not queue the re-dispatch of waiting jobs")


def _mark_waiting(model: type[Job], pk: int) -> None:
    # Only while still queued: a message that did get through may have been claimed already.
    model._default_manager.filter(pk=pk, status=Job.Status.QUEUED).update(notes=QUEUE_UNAVAILABLE)
