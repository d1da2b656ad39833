"""Background jobs: the row a page polls (Job), and progress it can see mid-transaction.

An import (and later an export or agreement run) writes its data inside one transaction so that a
failure leaves nothing behind. Progress written through that same transaction would stay
invisible until the end, so progress goes through a second, autocommitting connection.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.utils import timezone

_local = threading.local()


class Job(models.Model):
    """What every background job row has: its state, who started it, when, and how it ended.

    The row, not Celery's result backend, is the source of truth that pages poll.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}


def mark_job_running(model: type[Job], pk: int) -> None:
    model._default_manager.filter(pk=pk).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), error=""
    )


def finish_job(model: type[Job], pk: int, **fields: Any) -> None:
    """Record the end of job `pk`: its status and counts, error or notes, and the time."""
    model._default_manager.filter(pk=pk).update(finished_at=timezone.now(), **fields)


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
