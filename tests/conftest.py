"""Shared fixtures: users, a real Celery worker process, and Chromium through Playwright."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from hypothesis import settings as hypothesis_settings

from tests.factories import UserFactory

ROOT = Path(__file__).resolve().parent.parent
# Playwright's sync API runs an event loop in the test thread; the ORM calls made beside it in
# browser tests are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# In CI, property tests replay the same examples every run, so a red build is reproducible.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


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
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotator", "worker", "--pool=solo",
         "--loglevel=INFO", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    _wait_until_ready(worker)
    yield worker
    worker.terminate()
    worker.wait(timeout=30)
    app.control.purge()


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
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"],
        )  # fmt: skip
        yield browser
        browser.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
