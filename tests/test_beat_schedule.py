"""Every task Celery beat sends can be sent: a task whose own time limit is below the global
soft limit, without a soft limit of its own, is refused by Celery at send time (ValueError) —
beat then never runs it. Sent for real through Redis, to a queue no worker reads."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.conf import settings

from annotator.celery import app

SCHEDULED = sorted(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())


def test_the_schedule_names_every_periodic_task() -> None:
    assert {
        "annotator.agreement.tasks.agreement_sweep_task",
        "annotator.studies.tasks.release_stale_assignments_task",
        "annotator.issues.tasks.index_search_task",
    } <= set(SCHEDULED)


@pytest.mark.skipif(not settings.REDIS_URL, reason="sends through the Redis broker")
@pytest.mark.parametrize("name", SCHEDULED)
def test_beat_can_send(name: str) -> None:
    app.loader.import_default_modules()
    task = app.tasks[name]
    queue = f"test-beat-{uuid.uuid4().hex}"
    try:
        task.apply_async(queue=queue)
        assert redis.Redis.from_url(settings.REDIS_URL).llen(queue) == 1
    finally:
        redis.Redis.from_url(settings.REDIS_URL).delete(queue)
