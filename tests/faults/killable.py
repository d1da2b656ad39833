"""Celery workers that a test can kill outright, and the broker's view of their tasks.

Each worker runs in a process group of its own (so SIGKILL reaches all of it at once), on a
queue of its own (so a worker another test module started for the session never takes these
tasks) and with a media folder of its own, against the test database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection

from annotator.jobs import Job
from tests.conftest import CELERY_WORKER, ROOT, _database_url, _wait_until_ready

QUEUE = "annotator-killed-worker-tests"
# Delivery tags of the messages the killed workers held unacknowledged: those that Redis hands
# out again. Not whatever else is unacknowledged later (a live worker's task in progress).
KILLED_TAGS: set[str] = set()


@dataclass
class Worker:
    process: subprocess.Popen[str]

    def kill(self) -> None:
        """SIGKILL the worker's whole process group: no handler, no `finally`, no ack runs."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        with _broker() as broker:
            KILLED_TAGS.update(_unacked(broker.default_channel))

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(name="workers")
def workers_fixture(
    django_db_setup, django_db_blocker, settings, tmp_path
) -> Iterator[Callable[..., Worker]]:
    """Start workers on a queue of their own and a media folder of their own; each in its own
    process group (to be killed whole); all stopped at the end."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("REDIS_URL is not set: run the suite with `make test`")
    from annotator.celery import app

    with django_db_blocker.unblock():
        database = _database_url(connection.settings_dict["NAME"])
    settings.MEDIA_ROOT = tmp_path / "media"
    default_queue = app.conf.task_default_queue
    app.conf.task_default_queue = QUEUE
    _forget_messages()
    KILLED_TAGS.clear()
    started: list[Worker] = []

    def start(**env: str) -> Worker:
        environment = {
            **os.environ,
            "DATABASE_URL": database,
            "DATABASE_CONN_MAX_AGE": "0",
            "CELERY_QUEUE": QUEUE,
            "DJANGO_MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "JOB_HEARTBEAT_TIMEOUT_SECONDS": "2",
            **env,
        }
        process = subprocess.Popen(
            [*CELERY_WORKER, "-n", f"killable{len(started)}@%h"],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        worker = Worker(process)
        started.append(worker)
        _wait_until_ready(process)
        return worker

    yield start
    for worker in started:
        worker.stop()
    _forget_messages()
    app.conf.task_default_queue = default_queue


@pytest.fixture(name="queue_nobody_reads")
def queue_nobody_reads_fixture() -> Iterator[str]:
    """Tasks sent meanwhile go to a queue no worker reads: a test that runs a job itself must not
    race the session's worker (tests/conftest.py) for it, which takes the default queue's."""
    from annotator.celery import app

    queue = f"annotator-unread-{uuid.uuid4().hex}"
    default, app.conf.task_default_queue = app.conf.task_default_queue, queue
    try:
        yield queue
    finally:
        app.conf.task_default_queue = default
        if os.environ.get("REDIS_URL"):
            with _broker() as broker:
                broker.default_channel.client.delete(queue)


def _broker() -> Any:
    from annotator.celery import app

    return app.connection_for_write()


def _unacked(channel: Any) -> dict[str, list[Any]]:
    """The broker's unacknowledged messages of our queue: delivery tag → [payload, exchange,
    routing key], as kombu's Redis transport keeps them."""
    entries = channel.client.hgetall(channel.unacked_key).items()
    decoded = {tag.decode(): json.loads(raw) for tag, raw in entries}
    return {tag: entry for tag, entry in decoded.items() if entry[2] == QUEUE}


def _forget_messages() -> None:
    with _broker() as broker:
        channel = broker.default_channel
        channel.client.delete(QUEUE)
        for tag in _unacked(channel):
            channel.qos._remove_from_indices(tag).execute()


def redeliver_killed_tasks() -> int:
    """What Redis does once the visibility timeout (an hour) has passed: the killed worker's
    unacknowledged task goes back on the queue, marked redelivered."""
    with _broker() as broker:
        channel = broker.default_channel
        tags = [tag for tag in _unacked(channel) if tag in KILLED_TAGS]
        for tag in tags:
            channel.qos.restore_by_tag(tag)
    return len(tags)


def wait_until_delivered(timeout: float = 30) -> None:
    """Until our queue is empty and nothing of it is unacknowledged: every task taken and done."""
    deadline = time.monotonic() + timeout
    with _broker() as broker:
        channel = broker.default_channel
        while time.monotonic() < deadline:
            if not channel.client.llen(QUEUE) and not _unacked(channel):
                return
            time.sleep(0.05)
    raise AssertionError(f"the queue still holds tasks after {timeout} s")


def wait_for(job: Job, condition: Callable[[Any], bool], timeout: float = 90) -> Any:
    """Poll the job row (as its page does, but every 5 ms) until `condition` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if condition(job):
            return job
        if job.is_finished:
            raise AssertionError(f"{job} ended ({job.error}) before it could be caught under way")
        time.sleep(0.005)
    raise AssertionError(f"{job} not in the awaited state after {timeout} s")


def finished(job: Job, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            return job
        time.sleep(0.05)
    raise AssertionError(f"{job} still {job.status} after {timeout} s")


def eventually(condition: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
