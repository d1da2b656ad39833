"""The issues app's hand-written SQL, all of it PostgreSQL's: the search index's definition,
the COPY upsert of an import's issue rows (which stores their search vectors), the indexing of
issues left without one, and the advisory lock that keeps one sync per repository. Each
function's docstring says why it is not the ORM. Table and column names come from the models
(`annotator.sql.Table`): a renamed field fails at import, in every test, not in a request.

Callers decide when a statement applies (`connection.vendor`); SQLite, the local demo, takes the
ORM paths beside them (bulk.py) or has nothing to do (no search index, one process).
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import CharField, Field
from psycopg2.errors import UniqueViolation

from annotator.sql import Table

from .models import SEARCH_CODE_CONFIG, SEARCH_CONFIG, Issue, IssueComment

# --- the search index ----------------------------------------------------------------------------
# What an issue's search vector holds, in this order: its title (weight A), its body outside
# fenced code (B), the fenced code blocks (D) and its comments' bodies in id order (C), each text
# cut at SEARCH_TEXT_LIMIT characters. Fenced code is mostly logs and tracebacks: two thirds of a
# typical bug report's text and of its parsing, and hundreds of unique numbers (ranks, ports,
# addresses, timestamps) that nobody searches for but that each cost a GIN entry. So each block
# is indexed by its first CODE_HEAD and last CODE_TAIL characters (the command and the
# exception), with SEARCH_CODE_CONFIG, which drops numbers, versions and paths. Measured on
# benchmarks/import_issues.py's bodies: 0.24 ms of parsing per body became 0.07 ms.
SEARCH_TEXT_LIMIT = 100_000
CODE_HEAD, CODE_TAIL = 200, 500
_FENCE = "```"


def _weighted(config: str, text: str, weight: str) -> str:
    return f"setweight(to_tsvector('{config}'::regconfig, coalesce({text}, '')), '{weight}')"


def _cut(text: str, limit: int) -> str:
    """Column `text` cut to `limit` characters; a text of at most `limit` bytes is kept without
    counting its characters (left() walks UTF-8 character by character)."""
    cut = int(limit)
    return f"CASE WHEN octet_length({text}) <= {cut} THEN {text} ELSE left({text}, {cut}) END"


# The parts of a body between fences alternate, prose first, as GitHub renders them (an
# unclosed fence runs to the end): `_PARTS` joins the prose parts as `prose` and the code
# blocks, each cut to its head and tail, as `code`. It is a LATERAL subquery, so each body is
# read and split once per row: as two scalar subqueries, one per part, the vector of 20,000
# generated bug reports took 5.7 s of backend CPU, as one 3.0 s (benchmarks/import_issues.py).
_PARTS = "parts"
_CODE_PART = (
    f"CASE WHEN octet_length(u.part) <= {CODE_HEAD + CODE_TAIL} THEN u.part "
    f"ELSE left(u.part, {CODE_HEAD}) || ' ' || right(u.part, {CODE_TAIL}) END"
)


def _parts(body: str, limit: int) -> str:
    """A LATERAL subquery, `parts`, of one row: `body` (cut to `limit`) as its prose and its
    code (see _PARTS)."""
    return (
        f"LATERAL (SELECT string_agg(u.part, ' ' ORDER BY u.n) FILTER (WHERE mod(u.n, 2) = 1) "
        f"AS prose, string_agg({_CODE_PART}, ' ' ORDER BY u.n) FILTER (WHERE mod(u.n, 2) = 0) "
        f"AS code FROM unnest(string_to_array({_cut(body, limit)}, '{_FENCE}')) "
        f"WITH ORDINALITY AS u(part, n)) AS {_PARTS}"
    )


def _comments_text(issue_id: str) -> str:
    text = f"string_agg({_c.body}, ' ' ORDER BY {_c.id})"
    return f"(SELECT {text} FROM {_c} WHERE {_c.issue} = {issue_id})"


def _text_vector(
    title: str, limit: int, prose: str = f"{_PARTS}.prose", code: str = f"{_PARTS}.code"
) -> str:
    """SQL for the vector of an issue's title and body (weights A, B and D), its body's parts
    read from `_parts` beside it in the FROM clause (or from the columns named)."""
    return " || ".join(
        [
            _weighted(SEARCH_CONFIG, _cut(title, limit), "A"),
            _weighted(SEARCH_CONFIG, prose, "B"),
            _weighted(SEARCH_CODE_CONFIG, code, "D"),
        ]
    )


def body_parts(body: str, limit: int = SEARCH_TEXT_LIMIT) -> tuple[str, str]:
    """`_parts` in Python: the body cut to `limit` characters, split at its fences, as its
    prose and its code blocks cut to their heads and tails, each joined by spaces.
    tests/issues/test_sql.py holds the two equal to the character."""
    parts = body[:limit].split(_FENCE)
    return " ".join(parts[0::2]), " ".join(map(_code_part, parts[1::2]))


def _code_part(part: str) -> str:
    size = len(part) if part.isascii() else len(part.encode())  # octet_length
    if size <= CODE_HEAD + CODE_TAIL:
        return part
    return f"{part[:CODE_HEAD]} {part[-CODE_TAIL:]}"


def _comments_vector(issue_id: str, limit: int) -> str:
    """SQL for the vector of an issue's comments (weight C), appended last."""
    return _weighted(SEARCH_CONFIG, f"left({_comments_text(issue_id)}, {int(limit)})", "C")


# --- the import's upsert -------------------------------------------------------------------------
# The fields an import writes, in the order of its rows (bulk.ISSUE_COLUMNS); `imported_at` and
# the search vector are set by the statement, the rest is left to other services.
_NOT_IMPORTED = {"id", "search_vector", "imported_at", "changed_at"}
IMPORTED_FIELDS: tuple[Field[Any, Any], ...] = tuple(
    f for f in Issue._meta.concrete_fields if f.name not in _NOT_IMPORTED
)
# Kept on a conflict: the key, and the count, which takes the larger of two (see writer.py).
_KEPT = {"repository", "number", "comments_count"}

_issue = Table(Issue)
_i = Table(Issue, "i")
_c = Table(IssueComment, "c")
_STAGE = "issue_stage"  # a temporary table of this statement's own, not a model's
_COLUMNS = ", ".join(_issue.c(f.name) for f in IMPORTED_FIELDS)
# The stage holds the imported fields and, last, the search vector where the import computed it
# beforehand (`text_vectors`), else NULL: the upsert then computes it.
_CREATE_STAGE = (
    f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} ON COMMIT DROP AS "
    f"SELECT {_COLUMNS}, {_issue.search_vector} FROM {_issue} WITH NO DATA"
)
_COPY = f"COPY {_STAGE} ({_COLUMNS}, {_issue.search_vector}) FROM STDIN (FORMAT binary)"
_GIVEN = f"{_STAGE}.{_issue.search_vector}"
_STORED_COMMENTS = (
    f"(SELECT count(*) FROM {_c} WHERE {_c.issue} = {_issue.bare()}.{_issue.c('id')})"
)
# A new issue has no comments yet, so its vector is its title's and body's; an updated one
# appends its stored comments' (a tsvector concatenation shifts the right side's positions past
# the left's, so this equals the whole vector computed at once, as the indexer does).
_UPSERT = (
    f"INSERT INTO {_issue} ({_COLUMNS}, {_issue.imported_at}, {_issue.search_vector}) "
    f"SELECT {_COLUMNS}, now(), "
    f"coalesce({_GIVEN}, {_text_vector(_issue.title, SEARCH_TEXT_LIMIT)}) FROM {_STAGE}, "
    # A body whose vector is given is not split (unnest(NULL) is no rows).
    f"{_parts(f'CASE WHEN {_GIVEN} IS NULL THEN {_issue.body} END', SEARCH_TEXT_LIMIT)} "
    f"ON CONFLICT ({_issue.repository}, {_issue.number}) DO UPDATE SET "
    + ", ".join(
        f"{_issue.c(f.name)} = EXCLUDED.{_issue.c(f.name)}"
        for f in IMPORTED_FIELDS
        if f.name not in _KEPT
    )
    # GitHub's count, or the comments stored, whichever is larger (see writer.py).
    + f", {_issue.comments_count} = greatest(EXCLUDED.{_issue.comments_count}, {_STORED_COMMENTS})"
    + f", {_issue.imported_at} = EXCLUDED.{_issue.imported_at}"
    + f", {_issue.search_vector} = EXCLUDED.{_issue.search_vector} || "
    + _comments_vector(f"{_issue.bare()}.{_issue.id}", SEARCH_TEXT_LIMIT)
    + f" RETURNING {_issue.id}"
)


# The long values an import writes (the body, the raw object holding it again, the search
# vector) pass PostgreSQL's 2 KB TOAST threshold and are compressed, with pglz by default: half
# of the COPY's CPU (100,000 generated bug reports: 8.6 s of backend CPU into the stage with
# pglz, 4.4 s with lz4, same load). lz4 compresses several times faster and reads back faster;
# values keep the method they were compressed with when the upsert copies them from the stage,
# and any reader decompresses either. SET LOCAL ends with the import's transaction. PostgreSQL
# 14+ built with lz4 (Debian's and the official images are); without it the default stays.
_LZ4 = "SET LOCAL default_toast_compression = lz4"
_lz4: bool | None = None


def _compress_with_lz4(cursor: Any) -> None:
    """SET LOCAL default_toast_compression = lz4, where the server has it (asked once)."""
    global _lz4
    if _lz4 is None:
        cursor.execute(
            "SELECT coalesce('lz4' = ANY(enumvals), false) FROM pg_settings "
            "WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
        _lz4 = bool(row and row[0])
    if _lz4:
        cursor.execute(_LZ4)


# --- COPY's binary format ------------------------------------------------------------------------
# An import's rows reach PostgreSQL in COPY's binary format: each value is its length and its
# bytes, so a body or raw object is encoded once and neither escaped here nor unescaped there,
# and a search vector computed ahead (`text_vectors`) comes back and goes in as PostgreSQL's own
# binary tsvector, which it reads at memcpy speed where its text form was parsed again (100,000
# generated bug reports: the vectors' text alone took 3.5-5 s of the import backend's CPU).
# A vector's binary form is tsvector's own, read back by the server that wrote it.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)
_NULL = struct.pack("!i", -1)
_COPY_CHUNK = 2**16  # bytes per read of the stream (psycopg2's default, 8 KB, is a few rows)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class CopyValueError(ValueError):
    """A value its column cannot hold (out of range, too long, not encodable); `field` names
    the column's model field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


_LENGTH = struct.Struct("!i")
_JSONB_HEAD = struct.Struct("!iB")  # the length, then jsonb's version byte


def _sized(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def _jsonb(text: bytes) -> bytes:  # jsonb's binary form: a version byte, then the JSON text
    return _JSONB_HEAD.pack(len(text) + 1, 1) + text


def _text_encoder(field: Field[Any, Any]) -> Callable[[Any], bytes]:
    limit = field.max_length if isinstance(field, CharField) else None

    def encode(value: Any) -> bytes:
        if limit is not None and len(value) > limit:
            detail = f"{len(value):,} characters, more than the {limit} this field holds"
            raise CopyValueError(field.name, detail)
        return _sized(_utf8(field, value))

    return encode


def _utf8(field: Field[Any, Any], text: str) -> bytes:
    """`text` in UTF-8; CopyValueError naming `field` for an unpaired surrogate, which neither
    text nor jsonb can hold."""
    try:
        return text.encode()
    except UnicodeEncodeError as error:
        detail = f"holds an unpaired surrogate ({text[error.start]!a}), not text"
        raise CopyValueError(field.name, detail) from None


def _int_encoder(field: Field[Any, Any], low: int, high: int, code: str) -> Callable[[Any], bytes]:
    size = struct.calcsize(f"!{code}")
    form = struct.Struct(f"!i{code}")

    def encode(value: Any) -> bytes:
        if not low <= value <= high:
            raise CopyValueError(field.name, f"{value} is out of range ({low} to {high})")
        return form.pack(size, value)

    return encode


# A \u0000 escape in JSON text, not an escaped backslash before "u0000".
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _json_encoder(field: Field[Any, Any]) -> Callable[[Any], bytes]:
    """A value in jsonb's binary form. A value given as bytes is its JSON text already (an
    imported object as its file held it: formats.IssueRecord.raw_json)."""

    def encode(value: Any) -> bytes:
        if isinstance(value, bytes):
            return _jsonb(value)
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if "\\u0000" in text and _NUL_ESCAPE.search(text):  # jsonb refuses it
            raise CopyValueError(field.name, "holds a NUL character (\\u0000)")
        return _jsonb(_utf8(field, text))

    return encode


def _timestamp(value: datetime) -> bytes:  # microseconds since 2000-01-01 UTC; naive is UTC
    moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    return struct.pack("!iq", 8, (moment - _PG_EPOCH) // _MICROSECOND)


def _boolean(value: bool) -> bytes:
    return b"\x00\x00\x00\x01\x01" if value else b"\x00\x00\x00\x01\x00"


def _encoder(field: Field[Any, Any]) -> Callable[[Any], bytes]:
    kind = field.get_internal_type()
    if kind in ("ForeignKey", "BigIntegerField"):
        return _int_encoder(field, -(2**63), 2**63 - 1, "q")
    if kind == "PositiveIntegerField":
        return _int_encoder(field, 0, 2**31 - 1, "i")
    if kind == "IntegerField":
        return _int_encoder(field, -(2**31), 2**31 - 1, "i")
    if kind in ("CharField", "TextField"):
        return _text_encoder(field)
    if kind == "JSONField":
        return _json_encoder(field)
    encoders: dict[str, Callable[[Any], bytes]] = {
        "DateTimeField": _timestamp,
        "BooleanField": _boolean,
    }
    if kind not in encoders:
        raise TypeError(f"no COPY encoding for {field.name} ({kind})")
    return encoders[kind]


_ENCODERS = tuple(_encoder(f) for f in IMPORTED_FIELDS)


def copy_fields(values: Sequence[Any], start: int = 0) -> bytes:
    """`values`, of IMPORTED_FIELDS from the `start`th on, in COPY's binary format (without
    the row's count of fields, which the COPY adds). Raises CopyValueError for a value its
    column cannot hold."""
    encoders = _ENCODERS[start : start + len(values)]
    return b"".join(
        [
            _NULL if value is None else encode(value)
            for encode, value in zip(encoders, values, strict=True)
        ]
    )


def copy_upsert_issues(
    rows: Sequence[tuple[Any, ...] | bytes], vectors: Sequence[bytes | None] | None = None
) -> list[int]:
    """Insert or update issues given as tuples of IMPORTED_FIELDS' values, or as those tuples'
    `copy_fields`, with their search vectors; return their ids. PostgreSQL only, inside a
    transaction (the staging table is dropped when it commits). `vectors`, beside the rows,
    are their title's and body's vectors as `text_vectors` gives them, where computed already
    (None: computed here).

    The vector is stored in the same statement (given, or computed there), so an import is
    searchable when it commits and each row is written once: indexing after the commit wrote
    every row a second time, with an entry in each of the table's indexes (100,000 issues: 38 s
    of indexing after a 15 s import; benchmarks/import_issues.py).

    Not the ORM: COPY into a temporary table and one INSERT … SELECT … ON CONFLICT send 1,000
    issues in one round trip in COPY's binary format, where `bulk_create(update_conflicts=True)`
    sends a statement of 17,000 parameters that Django builds and PostgreSQL parses (10,000
    GitHub-shaped issues: 2.5 s through the ORM, under 1 s here; benchmarks/import_issues.py).
    The ORM has no COPY; its twin is the portable path, bulk._bulk_create, and
    tests/issues/test_sql.py holds what the two store equal."""
    with connection.cursor() as cursor:
        _compress_with_lz4(cursor)
        cursor.execute(_CREATE_STAGE)
        cursor.execute(f"TRUNCATE {_STAGE}")
        stream = _CopyStream(rows, vectors or [None] * len(rows))
        cursor.copy_expert(_COPY, stream, size=_COPY_CHUNK)
        cursor.execute(_UPSERT)
        return [pk for (pk,) in cursor.fetchall()]


_INSERT = (
    f"COPY {_issue} ({_COLUMNS}, {_issue.search_vector}, {_issue.imported_at}) "
    "FROM STDIN (FORMAT binary)"
)


def copy_insert_issues(rows: Sequence[tuple[Any, ...] | bytes], vectors: Sequence[bytes]) -> bool:
    """Insert issues that no row holds yet, given as `copy_upsert_issues` takes them and with
    every search vector given, by COPY straight into the table, stamped with the database's
    now() as the upsert stamps them. Whether it did: False, having written nothing, when one of
    them was stored meanwhile (a sync or another import committed it after the caller looked);
    the caller then upserts. PostgreSQL only, inside a transaction.

    Why: an import's issues are mostly new, and the upsert wrote each one twice, into its
    stage and then the table: 100,000 generated bug reports took 11.2 s of the import
    backend's CPU that way, 9.0 s this way (benchmarks/import_issues.py). The ORM has no COPY;
    `copy_upsert_issues` is what it does when this declines."""
    with connection.cursor() as cursor:
        _compress_with_lz4(cursor)
        cursor.execute("SELECT now()")
        (now,) = cursor.fetchone()
        stream = _CopyStream(rows, vectors, after=_timestamp(now))
        try:
            # A savepoint, so that a conflict undoes this COPY only; the errors of copy_expert,
            # which Django's cursor does not wrap, as Django's.
            with transaction.atomic(), connection.wrap_database_errors:
                cursor.copy_expert(_INSERT, stream, size=_COPY_CHUNK)
        except IntegrityError as error:
            if not isinstance(error.__cause__, UniqueViolation):
                raise
            return False
    return True


class _CopyStream:
    """Rows in COPY's binary format, read by COPY a chunk at a time: one batch as a single
    bytes object would be megabytes, and allocations that large fragment the heap so that the
    process grows with the number of batches."""

    def __init__(
        self,
        rows: Sequence[tuple[Any, ...] | bytes],
        vectors: Sequence[bytes | None],
        after: bytes | None = None,
    ) -> None:
        # Each row: its count of fields, its values, its vector, then `after` if given.
        head = struct.pack("!h", len(IMPORTED_FIELDS) + (1 if after is None else 2))
        lines = (
            head
            + (row if isinstance(row, bytes) else copy_fields(row))
            + (_NULL if vector is None else _sized(vector))
            + (after or b"")
            for row, vector in zip(rows, vectors, strict=True)
        )
        self._lines: Iterator[bytes] = chain([_COPY_HEADER], lines, [_COPY_TRAILER])

    def read(self, size: int = -1) -> bytes:
        """Whole rows, at least `size` bytes of them (COPY sends a chunk of any length), or
        all that is left."""
        chunk: list[bytes] = []
        length = 0
        for line in self._lines:
            chunk.append(line)
            length += len(line)
            if 0 <= size <= length:
                break
        return b"".join(chunk)

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)


def text_vectors(
    titles: Sequence[str], bodies: Sequence[str], *, text_limit: int = SEARCH_TEXT_LIMIT
) -> list[bytes]:
    """The search vectors of issues' titles and bodies (weights A, B and D, as the upsert
    computes them), in order, in tsvector's binary form, which `copy_upsert_issues` takes as
    it is; computed by this thread's connection, which reads no table. The import computes
    them on a connection of their own, beside its upsert (services.py). The bodies are split
    here (`body_parts`), so the server receives the prose and the ends of the logs, not whole
    bodies, and splits nothing: 100,000 generated bug reports, 2 to 5 s less of the machine's CPU
    (benchmarks/import_issues.py). They come back as one array, in one row: row by row,
    psycopg2 handed each vector to Python apart, taking the interpreter's lock from the parse
    thread once per issue (100,000 issues, in process, back to back: 2.8-3.4 s less Python CPU,
    4,251/4,372 -> 4,738/5,064 issues/s). Not the ORM: it is the index's definition above,
    over arrays, and COPY, which the ORM has not, to have the binary form."""
    statement = (
        f"COPY (SELECT array_agg({_text_vector('s.title', text_limit, 's.prose', 's.code')} "
        "ORDER BY s.n) FROM unnest(%(titles)s::text[], %(prose)s::text[], %(code)s::text[]) "
        "WITH ORDINALITY AS s(title, prose, code, n)) TO STDOUT (FORMAT binary)"
    )
    parts = [body_parts(body, text_limit) for body in bodies]
    params = {"titles": list(titles), "prose": [p for p, _ in parts], "code": [c for _, c in parts]}
    out = io.BytesIO()
    with connection.cursor() as cursor:
        cursor.copy_expert(cursor.mogrify(statement, params), out)
    return _binary_array(out.getbuffer())


def _binary_array(data: memoryview) -> list[bytes]:
    """The elements of a one-dimensional array without nulls (or of NULL: none), the one value
    of the one row of COPY's binary output."""
    at = len(_COPY_HEADER) + 2  # past the row's count of fields
    (length,) = struct.unpack_from("!i", data, at)
    at += 4
    if length < 0 or struct.unpack_from("!i", data, at)[0] == 0:  # NULL, or no dimensions
        return []
    (count,) = struct.unpack_from("!i", data, at + 12)
    at += 20
    values = []
    for _ in range(count):
        (size,) = struct.unpack_from("!i", data, at)
        values.append(bytes(data[at + 4 : at + 4 + size]))
        at += 4 + size
    return values


def index_search_batch(*, batch_size: int, text_limit: int = SEARCH_TEXT_LIMIT) -> int:
    """Fill in the search vector of up to `batch_size` issues that have none, skipping rows
    another indexer holds; return how many were filled in. PostgreSQL only.

    The vector is the one the import's upsert stores (see "the search index" above), each text
    cut to `text_limit` characters. Imports store it with the row; this fills in the issues
    whose comments changed and rows written before. Why not the ORM: the ORM has no function
    for the split at code fences (string_to_array, unnest WITH ORDINALITY), and it is kept as
    written because it is the index's definition, read in one place beside the upsert that
    shares it. tests/issues/test_sql.py holds it equal to vectors the ORM's SearchVector builds
    from the same texts split in Python, and its batches to the ORM's locking update."""
    vector = f"{_text_vector(_i.title, text_limit)} || {_comments_vector(_i.id, text_limit)}"
    statement = (
        f"UPDATE {_issue} SET {_issue.search_vector} = v.vector "
        f"FROM (SELECT {_i.id}, {vector} AS vector FROM {_i}, {_parts(_i.body, text_limit)} "
        f"WHERE {_i.id} IN (SELECT {_issue.id} FROM {_issue} "
        f"WHERE {_issue.search_vector} IS NULL "
        f"ORDER BY {_issue.id} LIMIT %(batch)s FOR UPDATE SKIP LOCKED)) AS v "
        f"WHERE {_issue.bare()}.{_issue.id} = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, {"batch": batch_size})
        return int(cursor.rowcount)


def analyze_issues() -> None:
    """Refresh the planner's statistics of the issues table (ANALYZE samples ~30,000 rows:
    under a second at a million issues). Why here: the issue list takes the planner's row
    estimates for its counts (annotator/paging.py), and right after a large import they still
    describe the table before it, until autovacuum gets round to it. No ORM equivalent."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {_issue}")


# --- one sync per repository ---------------------------------------------------------------------
def try_advisory_lock(space: int, key: int) -> bool:
    """Take PostgreSQL's session advisory lock (`space`, `key`) if nobody holds it; whether it
    was taken. It is held until `advisory_unlock` or until the connection closes, so a killed
    process never leaves it behind.

    Not the ORM: advisory locks are PostgreSQL functions with no model and no ORM form; a row
    lock would need a transaction around the whole sync, which commits page by page."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", [space, key])
        (taken,) = cursor.fetchone()
    return bool(taken)


def advisory_unlock(space: int, key: int) -> bool:
    """Release the advisory lock (`space`, `key`) this connection holds; whether it held it.
    Not the ORM, for the reason `try_advisory_lock` gives."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", [space, key])
        (held,) = cursor.fetchone()
    return bool(held)
