"""The benchmarks' own PostgreSQL databases: created fresh before a run, dropped after it.

Only a database whose name holds "bench" is ever dropped, so an exported DATABASE_URL cannot
cost anyone their data.
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit


def recreate_database(url: str) -> None:
    drop_database(url)
    _admin(url, f'CREATE DATABASE "{_name(url)}"')


def drop_database(url: str) -> None:
    _admin(url, f'DROP DATABASE IF EXISTS "{_name(url)}" WITH (FORCE)')


def _name(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    if "bench" not in name:
        sys.exit(f"refusing to drop database {name!r}: a benchmark database's name has 'bench'")
    return name


def _admin(url: str, sql: str) -> None:
    import psycopg2

    parts = urlsplit(url)
    conn = psycopg2.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "root",
        password=parts.password,
        dbname="postgres",
    )
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute(sql)
    conn.close()
