"""Shared fixtures: users, a real Celery worker process, and Chromium through Playwright."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from hypothesis import settings as hypothesis_settings

from tests import parallel
from tests.factories import UserFactory

ROOT = Path(__file__).resolve().parent.parent
# Playwright's sync API runs an event loop in the test thread; the ORM calls made beside it in
# browser tests are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# In CI, property tests replay the same examples every run, so a red build is reproducible.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def _give_this_worker_its_own_redis() -> None:
    """Settings are read before this module is imported (pytest-django sets Django up first),
    but neither the cache nor the Celery app has connected yet: point both, and the processes
    the tests start (which inherit the environment), at this worker's database."""
    worker, url = parallel.worker_id(), os.environ.get("REDIS_URL")
    if not worker or not url:
        return
    from django.conf import settings

    url = parallel.redis_url_of_worker(url, worker)
    os.environ["REDIS_URL"] = settings.REDIS_URL = settings.CELERY_BROKER_URL = url
    settings.CACHES["default"]["LOCATION"] = url
    from annotator.celery import app

    app.conf.broker_url = url


_give_this_worker_its_own_redis()


def _flush_after_the_stragglers() -> None:
    """A transactional test ends by emptying the database (TRUNCATE of every table). What the
    test started may still hold a transaction on it: a request of the live server the browser
    sent as the page closed (a draft's autosave), a job of the worker, a thread of a
    concurrency test. TRUNCATE then waits on it or deadlocks, the flush fails, and the next
    test finds the rows this one left. At that point nothing of the test may still write: its
    other sessions on the database are ended first, and the flush is tried again should one
    start in between."""
    from django.core.management.base import CommandError
    from django.db import connections
    from django.test import TransactionTestCase

    flush = TransactionTestCase._fixture_teardown

    def end_other_sessions() -> None:
        for alias in connections:
            other = connections[alias]
            if other.vendor != "postgresql":
                continue
            with other.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )

    def flush_alone(self: TransactionTestCase) -> None:
        for attempt in range(3):
            end_other_sessions()
            try:
                return flush(self)
            except CommandError:
                if attempt == 2:
                    raise
                time.sleep(0.5)

    TransactionTestCase._fixture_teardown = flush_alone  # type: ignore[method-assign]


_flush_after_the_stragglers()


@pytest.fixture(scope="session")
def django_db_keepdb(
    request: pytest.FixtureRequest, django_db_modify_db_settings: None, django_db_blocker: Any
) -> Iterator[bool]:
    """pytest-django's --reuse-db; and under xdist, the worker's database copied from a template
    migrated once for the run (tests/parallel.py), kept for pytest-django to find, dropped here
    at the end."""
    copy = (
        parallel.worker_id()
        and not request.config.getvalue("reuse_db")
        and not request.config.getvalue("create_db")
        and not request.config.getvalue("nomigrations")
        and connection.vendor == "postgresql"
    )
    if not copy:
        yield bool(request.config.getvalue("reuse_db"))
        return
    with django_db_blocker.unblock():
        template = parallel.clone_test_database(parallel.worker_id())
    yield True
    with django_db_blocker.unblock():
        parallel.drop_cloned_test_database(template)


@pytest.fixture(scope="session", autouse=True)
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Uploads and exports of this run (of this xdist worker) in a folder of its own, shared
    with the worker processes it starts (DJANGO_MEDIA_ROOT), not under the checkout's var/."""
    from django.test import override_settings

    media = tmp_path_factory.mktemp("media")
    previous = os.environ.get("DJANGO_MEDIA_ROOT")
    os.environ["DJANGO_MEDIA_ROOT"] = str(media)
    with override_settings(MEDIA_ROOT=media):
        yield media
    if previous is None:
        os.environ.pop("DJANGO_MEDIA_ROOT")
    else:
        os.environ["DJANGO_MEDIA_ROOT"] = previous


@pytest.fixture(scope="session", autouse=True)
def empty_cache() -> None:
    """The test database is new on each run, its ids start again: what an earlier run left in
    the cache (e.g. a round's progress by round id) must not be served."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def user(db):  # type: ignore[no-untyped-def]
    return UserFactory()


@pytest.fixture
def logged_in_client(client, user):  # type: ignore[no-untyped-def]
    client.force_login(user)
    return client


# A Celery worker as the tests start one: solo pool (one task at a time, in the process that can
# be killed), no heartbeat, gossip or mingle (no other workers to talk to).
CELERY_WORKER = [
    sys.executable,
    "-m",
    *["celery", "-A", "annotator", "worker", "--pool=solo", "--loglevel=INFO"],
    *["--without-heartbeat", "--without-gossip", "--without-mingle"],
]


# The key the worker decrypts people's GitHub tokens with (a fixed test key, nobody's secret):
# a test that stores a token for a job the worker runs sets settings.TOKEN_KEYS to it.
WORKER_TOKEN_KEY = "dGVzdC1vbmx5LXdvcmtlci10b2tlbi1rZXktMzJieXQ="


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[str]]:
    """A real `celery worker` process on Redis, connected to the test database.

    Tests using it must use the `transactional_db` (or live_server) fixture so that the rows
    they create are committed and visible to the worker.
    """
    if not os.environ.get("REDIS_URL"):
        pytest.skip("REDIS_URL is not set: run the suite with `make test`")
    with django_db_blocker.unblock():
        test_db = connection.settings_dict["NAME"]
    from annotator.celery import app

    app.control.purge()
    env = {**os.environ, "DATABASE_URL": _database_url(test_db), "DATABASE_CONN_MAX_AGE": "0"}
    env["ANNOTATOR_TOKEN_KEYS"] = WORKER_TOKEN_KEY  # tests storing GitHub tokens use it too
    worker = subprocess.Popen(
        CELERY_WORKER,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_until_ready(worker)
    _worker["consuming"] = True
    yield worker
    _worker["consuming"] = None
    worker.terminate()
    worker.wait(timeout=30)
    app.control.purge()


# Whether the session's worker, once started, takes jobs from the queue (None: not started).
_worker: dict[str, bool | None] = {"consuming": None}


@pytest.fixture(autouse=True)
def worker_only_for_its_tests(request: pytest.FixtureRequest) -> None:
    """The session's worker runs the jobs of the tests that ask for it, and only theirs.

    Once started it outlives its tests; a later test that did not ask for it (a screening round
    queueing retrains as it is screened) would see its jobs run at whatever moment the worker
    takes them, and its outcome would depend on the tests before it. Such tests run with the
    worker told to stop consuming, their jobs staying queued as they would with no worker; a
    test that asks for it starts from an emptied queue."""
    from annotator.celery import app

    wanted = "celery_worker_process" in request.fixturenames
    if _worker["consuming"] is None or _worker["consuming"] == wanted:
        return
    queue = app.conf.task_default_queue
    if wanted:
        app.control.purge()
        app.control.add_consumer(queue, reply=True, limit=1, timeout=10)
    else:
        app.control.cancel_consumer(queue, reply=True, limit=1, timeout=10)
    _worker["consuming"] = wanted


def _database_url(name: str) -> str:
    settings = connection.settings_dict
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{name}"


def _wait_until_ready(worker: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    seen = []
    assert worker.stdout is not None
    while time.monotonic() < deadline:
        line = worker.stdout.readline()
        if not line and worker.poll() is not None:
            break
        seen.append(line)
        if " ready." in line:
            # Keep draining the pipe so the worker never blocks on a full buffer.
            _drain_in_background(worker)
            return
    worker.kill()
    raise RuntimeError("celery worker did not start:\n" + "".join(seen[-40:]))


def _drain_in_background(worker: subprocess.Popen[str]) -> None:
    import threading

    def drain() -> None:
        assert worker.stdout is not None
        for line in worker.stdout:
            if os.environ.get("SHOW_WORKER_LOG"):
                sys.stderr.write("[worker] " + line)

    threading.Thread(target=drain, daemon=True).start()


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    """Debian's Chromium, headless, driven by Playwright (no browser download needed)."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
