"""annotator/issues/sql.py: each statement against the ORM query it replaces, or, where the ORM
has none (advisory locks), against what it must do."""

from __future__ import annotations

import io
import json
import secrets
import struct
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.postgres.search import SearchVector
from django.core.exceptions import FieldDoesNotExist
from django.db import connection, connections, transaction
from django.db.models import Value
from django.db.models.functions import Left

from annotator.issues import bulk, sql
from annotator.issues.models import SEARCH_CODE_CONFIG, SEARCH_CONFIG, Issue, IssueComment
from annotator.sql import Table
from tests.factories import IssueCommentFactory, IssueFactory, RepositoryFactory

pytestmark = pytest.mark.django_db

AWKWARD = 'tab\there\\back\\slash\r\nCRLF\nnewline "quotes" \\N not null 中文 🔥 \\\\t'
# The repository differs; imported_at is now(); the search vector is compared on its own (the
# COPY upsert stores it, the ORM's leaves it to the indexer).
NOT_COMPARED = {"id", "repository", "imported_at", "search_vector"}


def test_a_renamed_field_fails_when_a_statement_is_built():
    with pytest.raises(FieldDoesNotExist):
        _ = Table(Issue, "i").no_such_field
    with pytest.raises(FieldDoesNotExist):
        Table(IssueComment, "c").c("issue_number")


# --- the import's upsert ------------------------------------------------------------------------
def _row(repository_id: int, number: int, **values: Any) -> tuple[Any, ...]:
    fields = {
        "repository": repository_id,
        "number": number,
        "github_id": 1000 + number,
        "title": f"Issue {number}",
        "body": "NCCL timeout",
        "state": "open",
        "state_reason": "",
        "labels": ["bug"],
        "author": "someone",
        "created_at": datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC),
        "updated_at": None,
        "closed_at": None,
        "is_pull_request": False,
        "html_url": f"https://github.com/o/r/issues/{number}",
        "comments_count": 0,
        "raw": {"number": number},
        "content_hash": f"{number:064x}",
    } | values
    return tuple(fields[f.name] for f in sql.IMPORTED_FIELDS)


def _rows_for(repository_id: int) -> list[tuple[Any, ...]]:
    return [
        # An update: GitHub says 1 comment, 3 are stored; the larger count wins.
        _row(
            repository_id,
            1,
            title="edited",
            comments_count=1,
            state="closed",
            closed_at=datetime(2023, 2, 1, tzinfo=UTC),
        ),
        # A new issue with every kind of value COPY's text format must escape.
        _row(
            repository_id,
            2,
            title=AWKWARD,
            body=AWKWARD,
            labels=[AWKWARD, "x"],
            raw={"body": AWKWARD, "n": [1, None, True]},
            github_id=None,
            is_pull_request=True,
            comments_count=5,
            author="",
        ),
    ]


def _stored(repository_id: int) -> list[dict[str, Any]]:
    names = [f.name for f in Issue._meta.concrete_fields if f.name not in NOT_COMPARED]
    return list(Issue.objects.filter(repository_id=repository_id).order_by("number").values(*names))


@pytest.mark.postgresql_only
def test_copy_upsert_stores_what_the_orm_upsert_stores():
    """bulk._bulk_create is the ORM's upsert (bulk_create(update_conflicts=True), then the
    stored-comment count) that the COPY statement replaces on PostgreSQL."""
    by_copy, by_orm = RepositoryFactory(), RepositoryFactory()
    for repository in (by_copy, by_orm):
        issue = IssueFactory(repository=repository, number=1, comments_count=0)
        IssueCommentFactory.create_batch(3, issue=issue)
        Issue.objects.filter(pk=issue.pk).update(search_vector="stale")

    with transaction.atomic():
        ids = sql.copy_upsert_issues(_rows_for(by_copy.pk))
    bulk._bulk_create(_rows_for(by_orm.pk))

    assert _stored(by_copy.pk) == _stored(by_orm.pk)
    assert sql.index_search_batch(batch_size=10) == 2  # the ORM's rows
    assert _vectors_by_number(by_copy.pk) == _vectors_by_number(by_orm.pk)
    assert all(_vectors_by_number(by_copy.pk).values())
    assert [row["comments_count"] for row in _stored(by_copy.pk)] == [3, 5]
    assert [row["title"] for row in _stored(by_copy.pk)] == ["edited", AWKWARD]
    assert sorted(ids) == sorted(
        Issue.objects.filter(repository=by_copy).values_list("pk", flat=True)
    )


def _vectors_by_number(repository_id: int) -> dict[int, str]:
    issues = Issue.objects.filter(repository_id=repository_id)
    return dict(issues.values_list("number", "search_vector"))


@pytest.mark.postgresql_only
def test_copy_upsert_stamps_the_import_time():
    """imported_at is the database's now(): the start of the transaction the import runs in
    (the test's own transaction here), whatever this process's clock says."""
    repository = RepositoryFactory()
    with transaction.atomic():
        sql.copy_upsert_issues([_row(repository.pk, 1)])
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            (now,) = cursor.fetchone()
    assert Issue.objects.get(repository=repository).imported_at == now


@pytest.mark.postgresql_only
def test_copy_upsert_compresses_long_values_with_lz4_where_the_server_has_it():
    """An import's bodies, raw objects and search vectors pass the 2 KB TOAST threshold; they
    are stored compressed with lz4 (half the COPY's CPU of pglz) when the server offers it, and
    read back unchanged."""
    repository = RepositoryFactory()
    body = " ".join(f"word{n} NCCL timeout at step {n}" for n in range(400))
    with transaction.atomic():
        sql.copy_upsert_issues([_row(repository.pk, 1, body=body, raw={"body": body})])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce('lz4' = ANY(enumvals), false) FROM pg_settings "
            "WHERE name = 'default_toast_compression'"
        )
        (has_lz4,) = cursor.fetchone()
        cursor.execute(
            "SELECT pg_column_compression(body), pg_column_compression(raw) "
            "FROM issues_issue WHERE repository_id = %s",
            [repository.pk],
        )
        methods = cursor.fetchone()
    assert methods == (("lz4", "lz4") if has_lz4 else ("pglz", "pglz"))
    issue = Issue.objects.get(repository=repository)
    assert (issue.body, issue.raw) == (body, {"body": body})


@pytest.mark.postgresql_only
def test_copy_insert_stores_new_issues_as_the_upsert_stores_them():
    """An import's new issues go into the table by COPY (no stage, no ON CONFLICT): the same
    rows, vectors and import time as the upsert's."""
    by_insert, by_upsert = RepositoryFactory(), RepositoryFactory()
    texts = {"title": AWKWARD, "body": f"{AWKWARD}\n```\nNCCL WARN timeout\n```"}
    rows = {r.pk: [_row(r.pk, n, **texts) for n in (1, 2)] for r in (by_insert, by_upsert)}
    vectors = sql.text_vectors([AWKWARD, AWKWARD], [texts["body"]] * 2)
    with transaction.atomic():
        assert sql.copy_insert_issues(rows[by_insert.pk], vectors)
        sql.copy_upsert_issues(rows[by_upsert.pk])
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            (now,) = cursor.fetchone()

    assert _stored(by_insert.pk) == _stored(by_upsert.pk)
    assert _vectors_by_number(by_insert.pk) == _vectors_by_number(by_upsert.pk)
    assert all(_vectors_by_number(by_insert.pk).values())
    stamps = Issue.objects.filter(repository=by_insert).values_list("imported_at", flat=True)
    assert set(stamps) == {now}


@pytest.mark.postgresql_only
def test_copy_insert_writes_nothing_when_one_issue_is_stored_already():
    """An issue stored after the writer looked (a sync committed it): the COPY is undone to
    its savepoint, the transaction goes on, and the upsert writes the batch."""
    repository = RepositoryFactory()
    IssueFactory(repository=repository, number=2, title="stored meanwhile")
    rows = [_row(repository.pk, 1), _row(repository.pk, 2)]
    vectors = sql.text_vectors(["Issue 1", "Issue 2"], ["NCCL timeout"] * 2)
    with transaction.atomic():
        assert not sql.copy_insert_issues(rows, vectors)
        assert Issue.objects.filter(repository=repository).count() == 1
        sql.copy_upsert_issues(rows, vectors)

    stored = dict(Issue.objects.filter(repository=repository).values_list("number", "title"))
    assert stored == {1: "Issue 1", 2: "Issue 2"}


def test_upsert_issue_rows_creates_then_updates_on_this_database():
    """The public upsert: COPY on PostgreSQL, bulk_create on SQLite (the SQLite run checks that
    path)."""
    repository = RepositoryFactory()
    with transaction.atomic():
        created = bulk.upsert_issue_rows([_row(repository.pk, 1), _row(repository.pk, 2)])
        updated = bulk.upsert_issue_rows([_row(repository.pk, 2, title="edited")])

    stored = dict(Issue.objects.filter(repository=repository).values_list("number", "title"))
    assert stored == {1: "Issue 1", 2: "edited"}
    assert sorted(created) == sorted(
        Issue.objects.filter(repository=repository).values_list("pk", flat=True)
    )
    assert updated == [Issue.objects.get(repository=repository, number=2).pk]


# --- the search index ---------------------------------------------------------------------------
LIMIT = 40  # short, so that the cut at the text limit is part of what is compared
FENCE = "```"
LONG_LOG = (
    "python train.py --zero-stage 3\n"
    + "node-7:1234:1234 [7] NCCL INFO Channel 05/32 : 7 -> 5 via P2P/IPC/read\n" * 20
    + "middlemarker\n"
    + "step=1200 lr=0.0001 loss=nan\n" * 30
    + "torch.distributed.DistBackendError: NCCL error, unhandled system error 2.18.7\n"
)


def _orm_index(batch_size: int) -> int:
    """The ORM's locking batch update beside sql.index_search_batch (which rows a batch takes;
    the vectors' text is held equal by the test below): a SearchVector update of a locking
    subquery."""
    vector = SearchVector(Left("title", LIMIT), config=SEARCH_CONFIG, weight="A")
    pending = (
        Issue.objects.filter(search_vector__isnull=True)
        .order_by("id")
        .select_for_update(skip_locked=True)
        .values("id")
    )
    return Issue.objects.filter(pk__in=pending[:batch_size]).update(search_vector=vector)


def _vectors(ids: list[int]) -> dict[int, str]:
    return dict(Issue.objects.filter(pk__in=ids).values_list("pk", "search_vector"))


def _code(block: str) -> str:
    kept = sql.CODE_HEAD + sql.CODE_TAIL
    return block if len(block) <= kept else f"{block[: sql.CODE_HEAD]} {block[-sql.CODE_TAIL :]}"


def _expected_vector(issue: Issue, limit: int) -> str:
    """The ORM's SearchVector of the texts the index defines, split in Python: the title (A),
    the body outside fences (B), each fenced block's head and tail (D, code configuration) and
    the comments in id order (C), each cut at `limit`."""
    parts = issue.body[:limit].split(FENCE)
    comments = " ".join(issue.comments.order_by("id").values_list("body", flat=True))
    texts = [
        (issue.title[:limit], SEARCH_CONFIG, "A"),
        (" ".join(parts[0::2]), SEARCH_CONFIG, "B"),
        (" ".join(_code(block) for block in parts[1::2]), SEARCH_CODE_CONFIG, "D"),
        (comments[:limit], SEARCH_CONFIG, "C"),
    ]
    vector = SearchVector(Value(texts[0][0]), config=texts[0][1], weight=texts[0][2])
    for text, config, weight in texts[1:]:
        vector = vector + SearchVector(Value(text), config=config, weight=weight)
    found = Issue.objects.filter(pk=issue.pk).annotate(expected=vector)
    return str(found.values_list("expected", flat=True).get())


def _issues_to_index() -> list[Issue]:
    issues = [
        IssueFactory(title="Pipeline parallel hang at step 1000", body="NCCL " * 30),
        IssueFactory(title="ZeRO stage 3 optimizer OOM", body="", comments_count=3),
        IssueFactory(title="Tensor parallel deadlock", body="Stuck in all-reduce."),
        IssueFactory(
            title="Loss is NaN with bf16 on 64 ranks",
            body=f"Fails at step 1200 on A100s.\n\n{FENCE}\n{LONG_LOG}{FENCE}\n\nWorks on "
            f"one node.\n{FENCE}python\nimport deepspeed\n{FENCE}\nAlso {FENCE}unclosed tail",
        ),
        IssueFactory(title="中文 标题", body=f"说明 {FENCE}{'日志 ' * 300}错误{FENCE}"),
    ]
    for body in ["Later comment mentions gradients", "first said checkpoint", "a third " * 10]:
        IssueCommentFactory(issue=issues[1], body=body)
    IssueCommentFactory(issue=issues[2], body="same here")
    return issues


@pytest.mark.postgresql_only
@pytest.mark.parametrize("limit", [LIMIT, sql.SEARCH_TEXT_LIMIT])
def test_search_vectors_equal_the_orm_search_vectors_of_the_texts_split_in_python(limit):
    issues = _issues_to_index()
    ids = [issue.pk for issue in issues]

    assert sql.index_search_batch(batch_size=10, text_limit=limit) == len(issues)

    by_sql = _vectors(ids)
    assert by_sql == {issue.pk: _expected_vector(issue, limit) for issue in issues}
    assert all(by_sql.values())


@pytest.mark.postgresql_only
def test_the_vector_holds_prose_log_ends_and_comments_but_not_numbers_or_the_middle_of_logs():
    issues = _issues_to_index()
    sql.index_search_batch(batch_size=10)
    vectors = _vectors([issue.pk for issue in issues])

    # Comments in id order, their text cut at the limit: "checkpoint" is past it.
    Issue.objects.filter(pk=issues[1].pk).update(search_vector=None)
    sql.index_search_batch(batch_size=10, text_limit=LIMIT)
    short = _vectors([issues[1].pk])[issues[1].pk]
    assert "'gradient':9C" in short and "'first':10C" in short and "checkpoint" not in short

    log = vectors[issues[3].pk]
    # Prose, numbers included; a log's first and last lines, words only; not its middle.
    assert "'1200':" in log and "'a100s':" in log and "'one':" in log
    assert "'zero':" in log and "'unhandl':" in log and "'deepspe':" in log
    assert "'unclos':" in log and "'tail':" in log  # an unclosed fence runs to the end
    assert "middlemark" not in log and "'2.18.7'" not in log and "'1234'" not in log
    assert "'错误':" in vectors[issues[4].pk]  # the tail of a block in characters, not bytes


BODIES = [
    "",
    "no fence at all",
    f"prose {FENCE}log{FENCE} more prose {FENCE}unclosed",
    f"{FENCE}{FENCE}{FENCE}",
    f"a{FENCE}{'x' * 701}{FENCE}b",
    f"a{FENCE}{'y' * 700}{FENCE}b",
    f"{FENCE}{'日志' * 200}{FENCE}",  # 400 characters, 1,200 bytes: cut by its bytes' count
    f"说明 {FENCE}{'日志 ' * 300}错误{FENCE}" + "tail " * 20,
]


@pytest.mark.postgresql_only
@pytest.mark.parametrize("limit", [LIMIT, sql.SEARCH_TEXT_LIMIT])
def test_bodies_split_in_python_as_the_index_splits_them(limit):
    """sql.body_parts, which the import's vectors computed ahead use, is the index's own split
    (sql._parts) to the character, at the text limit too."""
    with connection.cursor() as cursor:
        for body in BODIES:
            cursor.execute(
                "SELECT coalesce(parts.prose, ''), coalesce(parts.code, '') "
                f"FROM (SELECT %s::text AS body) AS b, {sql._parts('b.body', limit)}",
                [body],
            )
            assert sql.body_parts(body, limit) == cursor.fetchone(), body


@pytest.mark.postgresql_only
@pytest.mark.parametrize("limit", [LIMIT, sql.SEARCH_TEXT_LIMIT])
def test_text_vectors_are_the_vectors_the_indexer_stores_for_the_title_and_body(limit):
    """The import computes vectors ahead on a connection of their own (text_vectors), its
    bodies split in Python: for an issue without comments they are the indexer's."""
    issues = [issue for issue in _issues_to_index() if not issue.comments.exists()]
    sql.index_search_batch(batch_size=10, text_limit=limit)

    ahead = sql.text_vectors([i.title for i in issues], [i.body for i in issues], text_limit=limit)

    stored = _vectors([issue.pk for issue in issues])
    assert [_tsvector_text(vector) for vector in ahead] == [stored[i.pk] for i in issues]
    assert len(ahead) == 3 and all(stored.values())


@pytest.mark.postgresql_only
def test_text_vectors_of_no_issues_or_of_many_come_back_in_order():
    """The vectors come back as one array in one row (an empty batch: NULL, none)."""
    assert sql.text_vectors([], []) == []
    titles = [f"word{n} title" for n in range(1, 1201)]
    vectors = sql.text_vectors(titles, [""] * len(titles))
    assert [_tsvector_text(v) for v in vectors] == [
        f"'titl':2A 'word{n}':1A" for n in range(1, 1201)
    ]


@pytest.mark.postgresql_only
def test_copy_upsert_stores_a_vector_given_and_computes_the_others():
    repository = RepositoryFactory()
    (given,) = sql.text_vectors(["given"], [""])
    with transaction.atomic():
        ids = sql.copy_upsert_issues(
            [_row(repository.pk, 1, title="computed here"), _row(repository.pk, 2)],
            [None, given],
        )
    vectors = _vectors(ids)
    assert vectors[ids[1]] == "'given':1A"
    (computed,) = sql.text_vectors(["computed here"], ["NCCL timeout"])
    assert vectors[ids[0]] == _tsvector_text(computed) == "'comput':1A 'nccl':2B 'timeout':3B"


def _tsvector_text(vector: bytes) -> str:
    """A tsvector's binary form (tsvectorsend) as PostgreSQL prints it (tsvectorout): each
    lexeme quoted, its quotes and backslashes doubled, then its positions with their weights
    (D unmarked)."""
    (count,) = struct.unpack_from("!i", vector)
    at, entries = 4, []
    for _ in range(count):
        end = vector.index(b"\0", at)
        lexeme = vector[at:end].decode().replace("'", "''").replace("\\", "\\\\")
        (npos,) = struct.unpack_from("!H", vector, end + 1)
        positions = struct.unpack_from(f"!{npos}H", vector, end + 3)
        at = end + 3 + 2 * npos
        marks = [f"{p & 0x3FFF}{'DCBA'[p >> 14].replace('D', '')}" for p in positions]
        entries.append(f"'{lexeme}'" + (":" + ",".join(marks) if marks else ""))
    return " ".join(entries)


INDEXERS = {
    "sql": lambda batch: sql.index_search_batch(batch_size=batch, text_limit=LIMIT),
    "orm": lambda batch: _orm_index(batch_size=batch),
}


@pytest.mark.postgresql_only
@pytest.mark.parametrize("indexer", INDEXERS)
def test_a_batch_fills_at_most_its_size_of_pending_issues_in_id_order(indexer):
    index = INDEXERS[indexer]
    done = IssueFactory(title="already indexed")
    Issue.objects.filter(pk=done.pk).update(search_vector="kept")
    pending = [IssueFactory().pk for _ in range(3)]

    assert index(2) == 2
    assert [pk for pk, vector in sorted(_vectors(pending).items()) if vector] == pending[:2]
    assert (index(2), index(2)) == (1, 0)
    assert _vectors([done.pk])[done.pk] == "'kept'"


# --- one sync per repository --------------------------------------------------------------------
@pytest.mark.postgresql_only
def test_an_advisory_lock_is_held_until_unlocked_and_only_by_one_connection():
    """No ORM twin: advisory locks are PostgreSQL functions with no model behind them."""
    space, key = 31_337, secrets.randbelow(2**31)
    other = connections.create_connection("default")
    try:
        assert sql.try_advisory_lock(space, key)
        assert not _try_lock(other, space, key)
        assert sql.advisory_unlock(space, key)
        assert not sql.advisory_unlock(space, key)  # not held any more
        assert _try_lock(other, space, key)
        assert not sql.try_advisory_lock(space, key)
    finally:
        other.close()  # its lock dies with its session


def _try_lock(other: Any, space: int, key: int) -> bool:
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", [space, key])
        return bool(cursor.fetchone()[0])


def test_a_prepared_issue_is_its_copy_row_after_the_repository_id(db):
    """The import makes each issue's COPY row in its parse thread, all but the repository's
    id, which the writer resolves and puts first: the row is the tuple's, in the column order
    COPY names (repository_id first)."""
    from annotator.issues.formats import iter_records
    from annotator.issues.writer import RecordWriter, _issue_row
    from tests.issues.test_import_service import rest_issue

    if connection.vendor != "postgresql":
        pytest.skip("COPY rows are PostgreSQL's")
    assert bulk.ISSUE_COLUMNS[0] == "repository_id"
    text = json.dumps([rest_issue(7)]).encode()
    (record,) = iter_records(io.BytesIO(text), format="auto", filename="issues.json")
    prepared = RecordWriter().prepare(record)
    row = _issue_row(42, record, prepared.content_hash, raw_text=True)
    assert sql.copy_fields([42]) + prepared.copy_tail == sql.copy_fields(row)
    # The raw object goes as the file's own JSON text (jsonb's binary form: 1, then the text).
    assert record.raw_json == text[1:-1]
    assert b"\x01" + text[1:-1] in prepared.copy_tail


RAW = [f.name for f in sql.IMPORTED_FIELDS].index("raw")


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ({"milestone": {"title": "v1\x00"}}, "holds a NUL character (\\u0000)"),
        ({"user": {"login": "\udc00"}}, "holds an unpaired surrogate ('\\udc00'), not text"),
    ],
)
def test_a_raw_object_jsonb_cannot_hold_is_refused_naming_the_field(raw, detail):
    """A raw object given as an object (a GitHub sync's) is encoded here: what jsonb would
    refuse is refused naming the field, where the database's error named neither."""
    with pytest.raises(sql.CopyValueError) as caught:
        sql.copy_fields([raw], start=RAW)
    assert (caught.value.field, str(caught.value)) == ("raw", detail)


def test_a_raw_object_with_text_that_only_looks_like_a_nul_escape_is_encoded():
    raw = {"body": "a \\u0000 b \\\\u0000", "emoji": "🔥"}
    text = json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode()
    assert sql.copy_fields([raw], start=RAW) == struct.pack("!i", len(text) + 1) + b"\x01" + text
    given = b'{"body": "as the file wrote it"}'
    assert (
        sql.copy_fields([given], start=RAW) == struct.pack("!i", len(given) + 1) + b"\x01" + given
    )
