"""Fixtures for the backup tests: fast password hashing, and empty PostgreSQL databases to
restore into (each a copy of one migrated template, so only the first costs a migration)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg2
import pytest
from django.db import connection

from annotator.backup.tables import TABLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fast_passwords(settings):  # type: ignore[no-untyped-def]
    """The factories hash a password per user; PBKDF2's cost is not what these tests measure."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class Database:
    name: str
    url: str

    def connect(self) -> psycopg2.extensions.connection:
        return psycopg2.connect(self.url)

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `manage.py ARGS` against this database in a separate process."""
        env = {**os.environ, "DATABASE_URL": self.url, "DATABASE_CONN_MAX_AGE": "0"}
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )


def _url(name: str) -> str:
    settings = connection.settings_dict
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host, port = settings.get("HOST") or "127.0.0.1", settings.get("PORT") or 5432
    return f"postgres://{settings.get('USER') or ''}{password}@{host}:{port}/{name}"


def _admin(sql: str) -> None:
    """CREATE/DROP DATABASE, which must run outside a transaction, on the server's `postgres`."""
    admin = psycopg2.connect(_url("postgres"))
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(sql)
    finally:
        admin.close()


@pytest.fixture(scope="session")
def migrated_template(django_db_setup, django_db_blocker) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with django_db_blocker.unblock():
        name = f"{connection.settings_dict['NAME']}_restore_template"[:63]
    _admin(f'DROP DATABASE IF EXISTS "{name}"')
    _admin(f'CREATE DATABASE "{name}"')
    migrate = Database(name, _url(name)).manage("migrate", "--noinput", "-v", "0")
    assert migrate.returncode == 0, migrate.stderr
    yield name
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def empty_database(migrated_template: str) -> Iterator[Database]:
    """A migrated database with no study data, whose id sequences start far apart (so an id
    restored without being mapped cannot match by accident), dropped afterwards."""
    name = f"{migrated_template.removesuffix('_template')}_{uuid.uuid4().hex[:8]}"[:63]
    _admin(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
    database = Database(name, _url(name))
    try:
        with database.connect() as conn, conn.cursor() as cursor:
            for n, table in enumerate(TABLES):
                if not table.model._meta.pk.is_relation:
                    cursor.execute(
                        "SELECT setval(pg_get_serial_sequence(%s, %s), %s)",
                        [table.model._meta.db_table, table.model._meta.pk.column, 10_000 * (n + 1)],
                    )
        yield database
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
