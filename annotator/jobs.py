"""Job progress that pages can poll while the job's own writes are still uncommitted.

An import (and later an export or agreement run) writes its data inside one transaction so that a
failure leaves nothing behind. Progress written through that same transaction would stay
invisible until the end, so progress goes through a second, autocommitting connection.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

_local = threading.local()


def report_progress(model: type[models.Model], pk: int, **fields: Any) -> None:
    """Set `fields` on row `pk` of `model` so that other connections see them now."""
    if not connection.in_atomic_block or connection.vendor != "postgresql":
        # Outside a transaction a plain update commits at once. SQLite allows one writer at a
        # time, so a second connection would wait for the job's own transaction: skip it there.
        if not connection.in_atomic_block:
            model._default_manager.filter(pk=pk).update(**fields)
        return
    side = _side_connection()
    columns = ", ".join(f'"{_column(model, name)}" = %s' for name in fields)
    with side.cursor() as cursor:
        cursor.execute(
            f'UPDATE "{model._meta.db_table}" SET {columns} WHERE "{model._meta.pk.column}" = %s',
            [*fields.values(), pk],
        )


def close_progress_connection() -> None:
    """Close the side connection; call when a job ends so no idle connection lingers."""
    side = getattr(_local, "connection", None)
    if side is not None:
        side.close()
        _local.connection = None


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or field.column is None:
        raise ValueError(f"{model.__name__}.{name} is not a concrete field")
    return field.column


def _side_connection() -> Any:
    side = getattr(_local, "connection", None)
    if side is None:
        side = connections.create_connection(DEFAULT_DB_ALIAS)
        _local.connection = side
    return side
