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
itself (`Job.remove_leftovers`): the sweep goes over the job models and imports no app.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from annotator.jobs import Job, fail_lost_jobs, job_models

__all__ = ["job_models", "sweep_lost_jobs"]

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
    return lost
