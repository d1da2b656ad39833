"""What each pytest-xdist worker ("gw0", "gw1", …) needs of its own, besides what pytest-django
and pytest give it (a test database named test_annotator_gw0, a temporary directory, free ports
for live servers): a Redis database, and a test database that costs a copy, not the migrations.

tests/conftest.py applies these; a run without xdist (`PYTEST_ARGS="-n 0"`) uses none of them.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg2
import pytest


def worker_id() -> str:
    """This xdist worker's id ("gw0", …), or "" outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "")


def redis_url_of_worker(url: str, worker: str) -> str:
    """The Redis database of one xdist worker: those below the run's own (14, 13, … under 15),
    so that a parallel run and a serial one (which keeps 15) never share one. A database of its
    own holds the worker's cache and its Celery queues (with their unacknowledged messages):
    `cache.clear()` and `app.control.purge()` in one worker never reach another's."""
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) - 1 - int(worker.removeprefix("gw"))
    if database < 0:
        raise pytest.UsageError(
            f"{url} leaves no Redis database for xdist worker {worker}: start from a higher "
            "database number (TEST_REDIS_URL) or run fewer workers"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


# --- the test database: migrated once per run, copied for each worker ---------------------------
# Every worker migrating its own database at the same moment costs the server as much as the
# first minute of the run. Instead the first worker to get here builds a template database
# (migrated as Django builds a test database), and each worker's database is a copy of it
# (CREATE DATABASE … TEMPLATE, a second or so). pytest-django then finds the database there
# (keepdb) and only checks that nothing is left to migrate.
def template_name(test_database: str, worker: str) -> str:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "run")[:8]
    return f"{test_database.removesuffix('_' + worker)}_template_{run}"[:63]


def clone_test_database(worker: str) -> str:
    """Make this worker's test database a copy of the run's template (built here if no other
    worker has built it yet); returns the template's name."""
    from django.db import connection

    test_database = connection.settings_dict["TEST"]["NAME"]  # pytest-django's, with "_gw0"
    assert test_database and test_database.endswith(worker), test_database
    template = template_name(test_database, worker)
    with _maintenance(lock=template.rsplit("_template_", 1)[0]) as cursor:
        if not _exists(cursor, template):
            _drop_stale_templates(cursor, template)
            _build_template(template)
        cursor.execute(f'DROP DATABASE IF EXISTS "{test_database}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{test_database}" TEMPLATE "{template}"')
    return template


def drop_cloned_test_database(template: str) -> None:
    """Drop this worker's database, and the template unless a worker is still copying it (the
    last one to finish drops it; one that comes later builds it again)."""
    from django.db import connection, connections

    connections.close_all()
    with _maintenance(lock=template.rsplit("_template_", 1)[0]) as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{connection.settings_dict["NAME"]}" WITH (FORCE)')
        cursor.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')


def _build_template(name: str) -> None:
    """Create and migrate `name` as pytest-django would a test database, then put the
    connection back as it was."""
    from django.conf import settings
    from django.db import connection

    saved_name, saved_test = (
        connection.settings_dict["NAME"],
        dict(connection.settings_dict["TEST"]),
    )
    connection.settings_dict["TEST"]["NAME"] = name
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    finally:
        connection.close()
        connection.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = saved_name
        connection.settings_dict["TEST"] = saved_test


def _drop_stale_templates(cursor: psycopg2.extensions.cursor, current: str) -> None:
    """Templates of runs that ended without dropping theirs (an interrupted run)."""
    prefix = current.rsplit("_template_", 1)[0] + "_template_"
    cursor.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [prefix])
    for (stale,) in cursor.fetchall():
        cursor.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')


def _exists(cursor: psycopg2.extensions.cursor, database: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database])
    return cursor.fetchone() is not None


@contextmanager
def _maintenance(lock: str) -> Iterator[psycopg2.extensions.cursor]:
    """A cursor on the server's `postgres` database (CREATE and DROP DATABASE run outside a
    transaction), holding an advisory lock that the workers of a run take in turn."""
    from django.db import connection

    settings = connection.settings_dict
    admin = psycopg2.connect(
        dbname="postgres",
        user=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or "127.0.0.1",
        port=settings.get("PORT") or 5432,
    )
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [zlib.crc32(lock.encode())])
            yield cursor
    finally:
        admin.close()  # which releases the lock
