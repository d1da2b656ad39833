"""Dump one study into a backup archive: one consistent snapshot, streamed table by table.

Every table is read with a server-side cursor (`.iterator()`) and written row by row into its
zip member, so memory does not grow with the study; the whole dump reads one REPEATABLE READ
snapshot, so a study being labeled while it is dumped comes out as it was at one instant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.db import connection, transaction
from django.utils import timezone

from annotator.studies.models import Study

from .archive import FORMAT, FORMAT_VERSION, ArchiveWriter
from .schema import app_version, describe_fields, migration_heads
from .sql import begin_snapshot
from .tables import TABLES, Scope, Table

PROGRESS_EVERY = 5000
NOTES = [
    "One JSON object per line; foreign keys hold the ids of the source database, which a "
    "restore maps to new ids (natural keys for users, repositories, issues, comments and "
    "codebooks, whose rows may already exist where the study is restored).",
    "Users carry no password, staff or superuser flag: restored accounts cannot log in until "
    "an administrator sets a password (manage.py changepassword, or the admin).",
    "Export jobs are records only: their files are not archived.",
]

Progress = Callable[[int, int], None]


def dump_study(
    *, study: Study, target: str | Path | IO[bytes], on_progress: Progress | None = None
) -> dict[str, Any]:
    """Write the backup archive of `study` to `target` (a path or a binary stream) and return
    its manifest. `on_progress(rows written, rows in all)` is called as tables stream."""
    with snapshot():
        scope = Scope(study=Study.objects.get(pk=study.pk))
        total = sum(table.select(scope).count() for table in TABLES)
        counter = _Counter(total, on_progress)
        writer = ArchiveWriter(target)
        try:
            for table in TABLES:
                writer.write_member(table.label, counter.count(table_rows(table, scope)))
            manifest = build_manifest(scope.study, writer.entries)
        except BaseException:
            writer.abort()  # no manifest: a reader refuses what is left
            raise
        writer.close(manifest)
    return manifest


@contextmanager
def snapshot() -> Iterator[None]:
    """A transaction whose reads all see one instant (PostgreSQL: REPEATABLE READ, read only).
    Nested in an outer transaction, it reads that transaction's view instead."""
    outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not outer:
            begin_snapshot()
        yield


def table_rows(table: Table, scope: Scope) -> Iterator[dict[str, Any]]:
    """The table's rows of the study as {field name: value}, foreign keys as ids, by id."""
    fields = table.fields()
    names = [f.name for f in fields]
    rows = table.select(scope).order_by("pk").values_list(*[f.attname for f in fields])
    # Issues carry their bodies and raw GitHub objects (long logs: up to ~100 KB each): fetch
    # fewer per round trip, so one fetch stays a few MB.
    size = 50 if table.label == "issues.issue" else 2000
    for row in rows.iterator(chunk_size=size):
        yield dict(zip(names, row, strict=True))


def build_manifest(study: Study, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The manifest: what the archive is, what made it, and per table its member, counts,
    SHA-256 and fields (a reader needs nothing else to know what is inside)."""
    version = study.codebook_version
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "app_version": app_version(),
        "created_at": timezone.now().isoformat(),
        "study": {
            "id": study.pk,
            "name": study.name,
            "codebook": version.codebook.slug,
            "codebook_version": version.number,
        },
        "database": connection.vendor,
        "migrations": migration_heads(sorted({t.label.split(".")[0] for t in TABLES})),
        "notes": NOTES,
        "tables": [_table_entry(table, entries[table.label]) for table in TABLES],
    }


def _table_entry(table: Table, entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "table": table.label,
        **entry,
        "natural_key": list(table.natural_key),
        "fields": describe_fields(table),
    }


class _Counter:
    def __init__(self, total: int, on_progress: Progress | None) -> None:
        self.total, self.done, self.on_progress = total, 0, on_progress

    def count(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            yield row
            self.done += 1
            if self.on_progress and self.done % PROGRESS_EVERY == 0:
                self.on_progress(self.done, self.total)
        if self.on_progress:
            self.on_progress(self.done, self.total)
