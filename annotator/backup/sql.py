"""The backup app's hand-written SQL: the dump's snapshot and the restore's multi-row inserts.
Each function's docstring says why it is not the ORM; table and column names come from the
models (`annotator.sql.Table`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, Model

from annotator.sql import Table


def begin_snapshot() -> None:
    """Make the transaction just begun REPEATABLE READ and READ ONLY (PostgreSQL only): every
    read of the dump sees one instant, and nothing can write through it. Must come before the
    transaction's first query.

    Not the ORM: Django sets an isolation level per connection (OPTIONS), not per transaction,
    and has no read-only transactions, so this has no ORM twin."""
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


class RowInsert:
    """Multi-row INSERTs of one model's `fields` (… RETURNING the primary key when
    `returning`), `batch` rows a statement; built once per table of a restore.

    Not the ORM: `bulk_create` builds a model instance per row and runs every value through the
    SQL compiler, two thirds of a restore's time at 200,000 rows; here the statement is built
    once and the values, already adapted by the caller (backup/rows.py), go to the driver as they
    are. And rows go in raw, as `loaddata` writes them: `bulk_create` would overwrite the
    archive's `auto_now` timestamps with the time of the restore. tests/backup/test_sql.py holds
    the rows equal, field by field, to `bulk_create`'s but for those."""

    def __init__(
        self, model: type[Model], fields: Sequence[Field[Any, Any]], *, returning: bool, batch: int
    ) -> None:
        table = Table(model)
        self.batch = batch
        self.head = f"INSERT INTO {table} ({', '.join(table.c(f.name) for f in fields)}) VALUES "
        self.one_row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        self.returning = f" RETURNING {table.pk}" if returning else ""

    def insert(self, rows: Sequence[Sequence[Any]]) -> list[int]:
        """Insert the rows (values in `fields` order); the new primary keys in the same order
        (with `returning`; else an empty list)."""
        new: list[int] = []
        with connection.cursor() as cursor:
            for start in range(0, len(rows), self.batch):
                chunk = rows[start : start + self.batch]
                sql = self.head + ", ".join([self.one_row] * len(chunk)) + self.returning
                cursor.execute(sql, [value for row in chunk for value in row])
                if self.returning:
                    new.extend(r[0] for r in cursor.fetchall())
        return new
