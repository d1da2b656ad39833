"""annotator/backup/sql.py: the restore's multi-row insert against `bulk_create`, and the dump's
snapshot (no ORM twin) against what it must do."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import DatabaseError, connection, connections, transaction

from annotator.backup.rows import TablePlan
from annotator.backup.sql import RowInsert, begin_snapshot
from annotator.backup.tables import BY_MODEL
from annotator.issues.models import Issue, Repository
from annotator.sql import Table
from annotator.studies.models import Study
from tests.factories import RepositoryFactory

ARCHIVED_AT = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
NOT_COMPARED = {"id", "repository", "imported_at"}


def test_a_renamed_field_fails_when_a_statement_is_built():
    with pytest.raises(FieldDoesNotExist):
        _ = Table(Study, "s").title
    with pytest.raises(FieldDoesNotExist):
        RowInsert(
            Issue,
            [*Issue._meta.concrete_fields, Study._meta.get_field("name")],
            returning=True,
            batch=10,
        )


def _values(repository: Repository, number: int) -> dict[str, Any]:
    """An archived issue as a restore holds it: {attname: Python value}."""
    return {
        "repository_id": repository.pk,
        "number": number,
        "github_id": None,
        "title": f"Issue {number}",
        "body": "tab\there\nnewline 中文",
        "state": "closed",
        "state_reason": "completed",
        "labels": ["bug", "nccl"],
        "author": "someone",
        "created_at": datetime(2023, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC),
        "updated_at": None,
        "closed_at": datetime(2023, 2, 1, tzinfo=UTC),
        "is_pull_request": True,
        "html_url": f"https://github.com/o/r/issues/{number}",
        "comments_count": 2,
        "raw": {"number": number, "nested": [1, None, {"a": "b"}]},
        "content_hash": "ab" * 32,
        "search_vector": None,
        "imported_at": ARCHIVED_AT,
        "changed_at": None,
    }


def _stored(repository: Repository) -> list[dict[str, Any]]:
    names = [f.name for f in Issue._meta.concrete_fields if f.name not in NOT_COMPARED]
    return list(Issue.objects.filter(repository=repository).order_by("number").values(*names))


@pytest.mark.django_db
def test_row_insert_stores_what_bulk_create_stores_but_keeps_the_archived_timestamps():
    by_sql, by_orm = RepositoryFactory(), RepositoryFactory()
    plan = TablePlan(BY_MODEL[Issue], connection)

    ids = plan.insert([plan.database_row(_values(by_sql, n)) for n in (1, 2)])
    Issue.objects.bulk_create([Issue(**_values(by_orm, n)) for n in (1, 2)])

    assert _stored(by_sql) == _stored(by_orm)
    assert ids == [Issue.objects.get(repository=by_sql, number=n).pk for n in (1, 2)]
    # Why not bulk_create: it stamps auto_now fields with the time of the restore.
    restored = set(Issue.objects.filter(repository=by_sql).values_list("imported_at", flat=True))
    assert restored == {ARCHIVED_AT}
    assert ARCHIVED_AT not in set(
        Issue.objects.filter(repository=by_orm).values_list("imported_at", flat=True)
    )


@pytest.mark.django_db
def test_row_insert_sends_one_statement_per_batch_and_returns_keys_in_row_order(
    django_assert_num_queries,
):
    repository = RepositoryFactory()
    fields = [f for f in Repository._meta.concrete_fields if not f.primary_key]
    statement = RowInsert(Repository, fields, returning=True, batch=2)
    rows = [[f"owner{n}", "name", ARCHIVED_AT] for n in range(3)]
    assert [f.name for f in fields] == ["owner", "name", "created_at"]

    with django_assert_num_queries(2):
        ids = statement.insert(rows)

    stored = dict(Repository.objects.exclude(pk=repository.pk).values_list("pk", "owner"))
    assert [stored[pk] for pk in ids] == ["owner0", "owner1", "owner2"]
    unreturned = RowInsert(Repository, fields, returning=False, batch=2)
    assert unreturned.insert([["owner9", "name", ARCHIVED_AT]]) == []
    assert Repository.objects.filter(owner="owner9").exists()


@pytest.mark.postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_snapshot_reads_one_instant_and_writes_nothing():
    """No ORM twin: Django sets isolation per connection, and has no read-only transactions."""
    other = connections.create_connection("default")
    try:
        with transaction.atomic():
            begin_snapshot()
            assert _setting("transaction_isolation") == "repeatable read"
            assert _setting("transaction_read_only") == "on"
            assert Repository.objects.count() == 0  # the snapshot is taken here
            with other.cursor() as cursor:  # autocommits: visible to every later snapshot
                t = Table(Repository)
                cursor.execute(
                    f"INSERT INTO {t} ({t.owner}, {t.c('name')}, {t.created_at})"
                    " VALUES ('late', 'commit', now())"
                )
            assert Repository.objects.count() == 0
            with pytest.raises(DatabaseError, match="read-only transaction"), transaction.atomic():
                RepositoryFactory()
        assert Repository.objects.count() == 1
        assert _setting("transaction_read_only") == "off"  # for that transaction only
    finally:
        other.close()


def _setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return str(cursor.fetchone()[0])
