"""Parsing files of GitHub issues and comments into plain records: the importer's pure core.

Imports no Django (tests/issues/test_formats.py checks this in a subprocess), so a notebook can
use it as is. Every format is streamed and memory does not grow with the file. Bad input raises
ImportFormatError as soon as it is met, naming the record and field; the import service
(annotator/issues/services.py) writes in one transaction, so the first error rolls back all.

Formats (``iter_records(format=...)``):

github  A JSON array of GitHub REST objects as ``GET /repos/{owner}/{repo}/issues`` (issues and
        pull requests) or ``GET /repos/{owner}/{repo}/issues/comments`` returns them. An element
        with ``issue_url`` and no ``number`` is a comment; one with gh's camelCase keys is read
        as in ``gh`` (detection sees only the first 64 KB).
gh      A JSON array as printed by ``gh issue list --json number,title,body,state,stateReason,
        labels,author,createdAt,updatedAt,closedAt,url,comments``.
jsonl   One JSON object per line, each shaped as a REST issue, REST comment or gh issue (decided
        per line). Blank lines are skipped; errors name the line.
csv     UTF-8 with a header row; column names are case-insensitive, unknown columns are kept in
        ``raw`` only. Cells are trimmed (except body); an empty cell counts as absent.
          number           required, integer >= 1
          title            required, not blank
          repository       owner/name; else taken from html_url, else the default repository
          body, author, state_reason, html_url
          state            open | closed (merged counts as closed); empty: closed if closed_at
          labels           label names separated by ";"
          created_at, updated_at, closed_at   ISO 8601; without an offset it means UTC
          is_pull_request  true/false, 1/0, yes/no; empty: false
          comments_count   integer; empty: 0
          github_id        integer; empty: none
auto    detect_format() on the first 64 KB and the file name.

A UTF-8 byte-order mark is skipped in every format. Dates come out timezone-aware in UTC.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import hashlib
import io
import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeAlias

import ijson

from annotator.json_depth import DepthScan, TooDeep

FORMATS = ("github", "jsonl", "gh", "csv")

_HEAD_SIZE = 64 * 1024
# Deeper JSON is refused before it is parsed (annotator/json_depth.py); an issue from GitHub's
# API nests 4 levels, a gh one 5. IMPORT_MAX_DEPTH in settings.
MAX_DEPTH = 64
_DETECTION_DEPTH = 8
_BOM = codecs.BOM_UTF8
_GH_ONLY_KEYS = frozenset({"createdAt", "updatedAt", "closedAt", "isPullRequest", "stateReason"})
_STATES = {"open": "open", "closed": "closed", "merged": "closed"}
_FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False, "": False}
_API_URL = re.compile(r"^https?://[^/]+(?:/api/v3)?/repos/([^/]+)/([^/]+)(?:/issues/(\d+))?")
_WEB_URL = re.compile(r"^https?://[^/]+/([^/]+)/([^/]+)/(?:issues|pull)/(\d+)")
_REPOSITORY = re.compile(r"[^/\s]+/[^/\s]+")
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


class ImportFormatError(ValueError):
    """Bad input. str() is the whole message, prefixed with the record and field when known.

    ``message`` may be the bare detail or already carry that prefix (the import service passes
    full messages); ``detail`` is the message without it.
    """

    def __init__(
        self, message: str, *, record: str | None = None, field: str | None = None
    ) -> None:
        prefix = ": ".join(part for part in (record, field and f"field {field!r}") if part)
        if prefix and message.startswith(prefix + ": "):
            message = message[len(prefix) + 2 :]
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.detail, self.record, self.field = message, record, field


@dataclass(frozen=True, slots=True)
class IssueRecord:
    index: int
    repository: str | None
    number: int
    github_id: int | None
    title: str
    body: str
    state: str
    state_reason: str
    labels: tuple[str, ...]
    author: str
    created_at: datetime | None
    updated_at: datetime | None
    closed_at: datetime | None
    is_pull_request: bool
    html_url: str
    comments_count: int
    raw: dict[str, Any]
    # `raw` as the file wrote it (its JSON text), where the parser kept it: stored as it is.
    raw_json: bytes | None = dataclasses.field(default=None, repr=False, compare=False)

    def content_hash(self) -> str:
        """Stored with the issue to tell an unchanged re-import from an update; keep stable."""
        return _content_hash(self)


@dataclass(frozen=True, slots=True)
class CommentRecord:
    index: int
    repository: str | None
    issue_number: int
    github_id: int | None
    author: str
    body: str
    created_at: datetime | None
    updated_at: datetime | None
    raw: dict[str, Any]
    raw_json: bytes | None = dataclasses.field(default=None, repr=False, compare=False)

    def content_hash(self) -> str:
        return _content_hash(self)

    def identity(self) -> str:
        """The comment's key within its issue: its GitHub id, else a hash of what it says.

        Exports without ids (the shipped demo data) make two identical comments by one author
        on one date the same comment.
        """
        if self.github_id is not None:
            return f"id:{self.github_id}"
        created = self.created_at.isoformat() if self.created_at else ""
        return "h:" + _sha256([self.author, created, self.body])[:40]


Record = IssueRecord | CommentRecord


def _content_hash(record: Record) -> str:
    values = {name: getattr(record, name) for name in _HASHED[type(record)]}
    return _sha256({k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()})


# The fields a record's content hash covers: all but its index and its raw object.
_HASHED = {
    kind: tuple(
        f.name for f in dataclasses.fields(kind) if f.name not in ("index", "raw", "raw_json")
    )
    for kind in (IssueRecord, CommentRecord)
}


def _sha256(value: object) -> str:
    # ASCII escapes keep lone surrogates (legal in JSON strings) encodable.
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# --- reading ----------------------------------------------------------------------------------
class ByteSource(Protocol):
    """What is read of the input: a file opened "rb", an upload, a byte-counting wrapper."""

    def read(self, size: int = -1, /) -> bytes: ...


class _CheckedReader(io.RawIOBase):
    """The source stream with the size limit and UTF-8 checked before any parser sees a byte,
    so every format reports those two faults alike, with the byte offset (the parsers' own UTF-8
    error has none)."""

    def __init__(self, source: ByteSource, max_bytes: int | None) -> None:
        self._source, self._max_bytes = source, max_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not len(buffer):
            return 0  # an empty read here must not be taken for the end of the file
        chunk = self._read_full(len(buffer))
        self._check(chunk)
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def _read_full(self, size: int) -> bytes:
        # Sources such as upload streams return short reads; filling the buffer lets the first
        # BufferedReader.peek() see a whole head for detect_format().
        parts: list[bytes] = []
        while size > 0 and (part := self._source.read(size)):
            parts.append(part)
            size -= len(part)
        return b"".join(parts)

    def _check(self, chunk: bytes) -> None:
        start = self._bytes_read - len(self._decoder.getstate()[0])
        self._bytes_read += len(chunk)
        if self._max_bytes is not None and self._bytes_read > self._max_bytes:
            raise ImportFormatError(
                f"file is larger than the limit of {self._max_bytes / 2**20:g} MB"
            )
        try:
            self._decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as error:
            raise ImportFormatError(f"not valid UTF-8 at byte {start + error.start}") from None


_Reader: TypeAlias = "io.BufferedReader[_CheckedReader]"


def _open(stream: ByteSource, max_bytes: int | None) -> tuple[_Reader, bytes]:
    """The stream buffered for peeking (no seek needed) and its head, past any BOM."""
    reader = io.BufferedReader(_CheckedReader(stream, max_bytes), buffer_size=_HEAD_SIZE)
    head = reader.peek(_HEAD_SIZE)[:_HEAD_SIZE]
    if head.startswith(_BOM):
        reader.read(len(_BOM))
        head = head[len(_BOM) :]
    if not head.strip():
        raise ImportFormatError("file is empty")
    return reader, head


# --- format detection -------------------------------------------------------------------------
def detect_format(head: bytes, filename: str = "") -> str:
    """The format of a file, from its first few KB and its name (see the module docstring)."""
    text = head.removeprefix(_BOM).lstrip()
    if not text:
        raise ImportFormatError("file is empty")
    if filename.lower().endswith(".csv") or text[:1] not in (b"[", b"{"):
        return "csv"
    if text[:1] == b"{":
        return "jsonl"
    return "gh" if _looks_like_gh(_first_element(text)) else "github"


def _first_element(head: bytes) -> dict[str, Any]:
    """The first array element's keys, read from a head that may end mid-object. Nested
    values stand in as {} or []: enough for _looks_like_gh()."""
    found: dict[str, Any] = {}
    key = None
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(_shallow_part(head))):
            if prefix == "item" and event == "map_key":
                key = value
            elif key is not None and prefix == f"item.{key}":
                found[key] = {} if event == "start_map" else [] if event == "start_array" else value
                key = None
            elif prefix == "item" and event != "start_map":
                break
    except ijson.JSONError:
        pass  # the head ends mid-file; what was read is enough
    return found


def _shallow_part(head: bytes) -> bytes:
    """The head up to its first bracket nested past _DETECTION_DEPTH: ijson's memory grows with
    the square of the depth (64 KB of "[" took 2.5 GB), and detection needs only the top of the
    first element. Deeper files are refused by the scan in _iter_array, with the real limit."""
    try:
        DepthScan(_DETECTION_DEPTH).feed(head)
    except TooDeep as error:
        return head[: error.offset]
    return head


def _looks_like_gh(obj: Mapping[str, Any]) -> bool:
    state, url = obj.get("state"), obj.get("url")
    if obj.keys() & _GH_ONLY_KEYS or isinstance(obj.get("author"), dict):
        return True
    if isinstance(state, str) and state.isupper():
        return True
    # REST objects carry an API url too, so only a web url counts as gh's.
    web_url = isinstance(url, str) and "/repos/" not in url
    return web_url and "number" in obj and not obj.keys() & {"repository_url", "issue_url"}


def _kind(obj: Any, previous: str, format: str) -> str:
    """'rest', 'gh' or 'comment'. An object with neither number nor issue_url is taken for the
    kind of the record before it, so a comment that lost its issue_url is reported as one."""
    if format == "gh" or not isinstance(obj, dict):
        return "gh" if format == "gh" else "rest"
    if "number" not in obj and ("issue_url" in obj or previous == "comment"):
        return "comment"
    # Also in "github" arrays: detection may have seen too little of a gh file to tell.
    return "gh" if _looks_like_gh(obj) else "rest"


# --- entry point ------------------------------------------------------------------------------
def iter_records(
    stream: ByteSource,
    *,
    format: str = "auto",
    filename: str = "",
    max_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
    default_repository: str | None = None,
    max_records: int | None = None,
    max_string: int | None = None,
) -> Iterator[Record]:
    """Parse `stream` lazily into IssueRecord and CommentRecord, in file order.

    `default_repository` (owner/name) fills records that name no repository. JSON nested
    deeper than `max_depth` is refused before it is parsed, naming the byte or column; a file
    of more than `max_records` records, or a record holding a string longer than `max_string`
    characters (in any field, kept ones and the raw object alike), is refused at that record,
    naming it and the field. Raises ImportFormatError at the first bad byte, record or field;
    nothing else escapes.
    """
    if format != "auto" and format not in FORMATS:
        raise ImportFormatError(f"unknown format {format!r}; expected auto, {', '.join(FORMATS)}")
    if default_repository and not _REPOSITORY.fullmatch(default_repository):
        raise ImportFormatError(f"repository must be owner/name, got {default_repository!r}")
    reader, head = _open(stream, max_bytes)
    chosen = detect_format(head, filename) if format == "auto" else format
    parse = _iter_jsonl if chosen == "jsonl" else _iter_csv if chosen == "csv" else _iter_array
    for count, record in enumerate(parse(reader, head, chosen, max_depth), 1):
        if max_records is not None and count > max_records:
            raise ImportFormatError(
                f"the file holds more than the limit of {max_records:,} records "
                "(ANNOTATOR_IMPORT_MAX_RECORDS)",
                record=f"record {record.index}",
            )
        if max_string is not None:
            _check_strings(record, max_string)
        if record.repository is None and default_repository:
            record = dataclasses.replace(record, repository=default_repository)
        yield record


def _check_strings(record: Record, limit: int) -> None:
    """Refuse a record with a string longer than `limit` characters, naming the field (a key of
    the raw object, dotted, when the string is one the record keeps only there)."""
    if record.raw_json is not None and len(record.raw_json) <= limit:
        return  # a string has no more characters than its JSON has bytes, nor has any field
    for name in ("title", "body", "author", "state_reason", "html_url"):
        value = getattr(record, name, "")
        if isinstance(value, str) and len(value) > limit:
            raise _too_long(record, name, len(value), limit)
    # The raw object's own strings are measured as they are; a string inside one of its
    # objects or arrays is no longer than that value's JSON text (a C-speed measure, and these
    # values are small: the user, the labels), so most records need no walk, and the body, the
    # long string, is not serialised for it.
    nested: list[tuple[str, Any]] = []
    for key, value in record.raw.items():
        if isinstance(value, str):
            if len(value) > limit:
                raise _too_long(record, str(key), len(value), limit)
        elif isinstance(value, dict | list):
            nested.append((str(key), value))
    # All of them at once first: one measure per record where none is that long.
    if not nested or _json_length([value for _, value in nested]) <= limit:
        return
    stack = [(key, value) for key, value in nested if _json_length(value) > limit]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                raise _too_long(record, path or "raw", len(value), limit)
        elif isinstance(value, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))


def _json_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _too_long(record: Record, field: str, length: int, limit: int) -> ImportFormatError:
    return ImportFormatError(
        f"{length:,} characters, more than the limit of {limit:,} (ANNOTATOR_IMPORT_MAX_STRING)",
        record=f"record {record.index}",
        field=field,
    )


def _iter_array(reader: _Reader, head: bytes, format: str, max_depth: int) -> Iterator[Record]:
    first = head.lstrip()[:1]
    if first == b"{":
        raise ImportFormatError("expected a JSON array at the top level, found an object")
    if first != b"[":
        found = first.decode("utf-8", "replace")
        raise ImportFormatError(
            f"not valid JSON: expected an array starting with '[', got {found!r}"
        )
    kind = "rest"
    elements = _ArrayElements(reader, max_depth)
    for index, (obj, text) in enumerate(elements, 1):
        kind = _kind(obj, kind, format)
        yield _build(obj, index, f"record {index}", _BUILDERS[kind], text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


# The decoder of every JSON record: NaN and Infinity, which JSON has not (Python writes them),
# are refused, and so is a number past a float's range, which Python would read as infinity.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)
_SPACE = re.compile(r"[ \t\n\r]*")
# Where the file ends inside a value: a literal, a number or a \uXXXX escape begun and not done.
_CUT_VALUE = re.compile(
    r"(?:t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?|-|[.eE][+-]?|\\?u[0-9a-fA-F]{0,4})?"
)
_ARRAY_CHUNK = 64 * 1024


class _ArrayElements:
    """The elements of a JSON array, in order, each with its own JSON text: read a chunk at a
    time and each decoded by the standard library's C decoder, so memory holds a chunk and the
    element being read, and an element's text is kept as its record's raw object (jsonb takes
    it as it is, where encoding the object again cost as much as decoding it).

    Depth: the decoder recurses, and refuses (RecursionError) near 1,000 levels before it has
    built much; an element decoded whole is measured (`_within`), so one past `max_depth` is
    refused, naming the byte of its first bracket past the limit (a DepthScan over its text,
    on the error's path only), as is one that is bad JSON or cut short after going past it.
    Other errors name the record (the element reached) and the byte.

    100,000 generated bug reports (the file of benchmarks/import_issues.py, read through the UTF-8
    check, back to back): ijson behind a depth scan of every byte, then each raw object encoded
    again for jsonb, 4.9-5.5 s of CPU; this, 2.2-2.3 s."""

    def __init__(self, reader: _Reader, max_depth: int) -> None:
        self._reader, self._max_depth = reader, max_depth
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._text, self._pos, self._eof = "", 0, False
        self._consumed = 0  # bytes of the file before self._text[self._pos]
        self._count = 0

    def __iter__(self) -> Iterator[tuple[Any, bytes]]:
        self._skip_space()
        if not self._at_end() and self._text[self._pos] == "[":
            self._step(1)
        while True:
            self._skip_space()
            if self._at_end():
                raise self._truncated()
            if self._count == 0 and self._text[self._pos] == "]":
                break
            yield self._element()
            self._skip_space()
            if self._at_end():
                raise self._truncated()
            delimiter = self._text[self._pos]
            if delimiter == "]":
                break
            if delimiter != ",":
                where = self._byte_at(self._pos)
                raise ImportFormatError(
                    f"not valid JSON (expected ',' or ']' after the record, at byte {where})",
                    record=f"record {self._count + 1}",
                )
            self._step(1)
        self._step(1)
        self._skip_space()
        if not self._at_end():
            raise ImportFormatError(
                f"not valid JSON: text after the end of the array (after record {self._count})"
            )

    def _element(self) -> tuple[Any, bytes]:
        want = _ARRAY_CHUNK
        while True:
            start = self._pos
            try:
                obj, end = _DECODER.raw_decode(self._text, start)
            except json.JSONDecodeError as error:
                if not _cut_short(error):
                    raise self._decode_error(start, error.pos + 1, error) from None
                if self._eof:
                    raise self._decode_error(start, len(self._text)) from None
                self._read(want)  # the element goes on past what is read: read more, and
                want *= 2  # twice as much each time it still does, so a long one costs linear
                continue
            except RecursionError:
                raise self._too_deep(start, len(self._text)) from None
            except ValueError as error:  # a number the decoder refused
                raise ImportFormatError(
                    f"not valid JSON ({error})", record=f"record {self._count + 1}"
                ) from None
            text = self._text[start:end].encode()
            if not _within(obj, text, self._max_depth - 1):  # 1: the array's own level
                raise self._too_deep(start, end)
            self._count += 1
            self._pos = end
            self._consumed += len(text)
            return obj, text

    # --- the buffer ---------------------------------------------------------------------
    def _read(self, size: int) -> None:
        """Append at least `size` more bytes' text (or the rest of the file), dropping what
        was read past."""
        chunk = self._reader.read(size)
        self._eof = not chunk
        self._text = self._text[self._pos :] + self._decoder.decode(chunk, final=self._eof)
        self._pos = 0

    def _at_end(self) -> bool:
        while self._pos >= len(self._text) and not self._eof:
            self._read(_ARRAY_CHUNK)
        return self._pos >= len(self._text)

    def _skip_space(self) -> None:
        while True:
            end = _SPACE.match(self._text, self._pos).end()  # type: ignore[union-attr]
            self._step(end - self._pos)
            if end < len(self._text) or self._eof:
                return
            self._read(_ARRAY_CHUNK)

    def _step(self, size: int) -> None:  # past ASCII only: whitespace, "[", "," and "]"
        self._pos += size
        self._consumed += size

    def _byte_at(self, pos: int) -> int:
        return self._consumed + len(self._text[self._pos : pos].encode())

    # --- errors -------------------------------------------------------------------------
    def _truncated(self) -> ImportFormatError:
        detail = "JSON is truncated: the file ends before this record is complete"
        return ImportFormatError(detail, record=f"record {self._count + 1}")

    def _decode_error(
        self, start: int, end: int, error: json.JSONDecodeError | None = None
    ) -> ImportFormatError:
        """The element at `start` is bad JSON up to `end` (`error`), or cut short by the end of
        the file (no error); unless it nests past the limit before that, which is named first
        (as a scan ahead of the parser would)."""
        if deep := self._past_limit(start, end):
            return self._deep_error(deep)
        if error is None:
            return self._truncated()
        return ImportFormatError(
            f"not valid JSON ({error.msg} at byte {self._byte_at(error.pos)})",
            record=f"record {self._count + 1}",
        )

    def _too_deep(self, start: int, end: int) -> ImportFormatError:
        """The element at `start` nests too deeply: name the byte of its first bracket past
        the limit (the array's own bracket counts as the first level)."""
        return self._deep_error(self._past_limit(start, end))

    def _deep_error(self, deep: TooDeep | None) -> ImportFormatError:
        if deep is None:  # deeper than the decoder reads, and the limit set above that
            return _unreadably_deep(f"record {self._count + 1}")
        return ImportFormatError(
            f"JSON is nested deeper than the limit of {deep.limit} levels at byte {deep.offset}"
        )

    def _past_limit(self, start: int, end: int) -> TooDeep | None:
        """Where the element's text from `start` to `end` goes past the limit, counting the
        array's own bracket as the first level and its bytes from the file's start."""
        return _past_limit(
            self._text[start:end].encode(), self._max_depth, depth=1, offset=self._byte_at(start)
        )


def _cut_short(error: json.JSONDecodeError) -> bool:
    """Whether the text the decoder failed on may just end too soon: inside a string, or in a
    literal, number or escape begun, or with nothing at all after the failing position."""
    rest = error.doc[error.pos :].rstrip()
    return error.msg.startswith("Unterminated string") or bool(_CUT_VALUE.fullmatch(rest))


def _within(value: Any, text: bytes, limit: int) -> bool:
    """Whether `value`, decoded from `text`, nests no deeper than `limit`. It nests no deeper
    than `text` has brackets; nor than it has outside its body (a bug report's brackets are
    mostly its logs'), where the text spells them all as brackets, not escapes. Only a value
    with more is walked (`_nesting`): 100,000 issues, 0.6 s of walking -> 0.1 s of counting."""
    openers = text.count(b"[") + text.count(b"{")
    if openers <= limit:
        return True
    body = value.get("body") if type(value) is dict else None
    outside = openers - body.count("[") - body.count("{") if type(body) is str else openers
    if outside <= limit and not _ESCAPED_BRACKET.search(text):
        return True
    return _nesting(value, limit) <= limit


_ESCAPED_BRACKET = re.compile(rb"\\u00[57][bB]")


def _nesting(value: Any, limit: int) -> int:
    """How many levels `value` nests (an object or array of scalars: 1), counted no further
    than past `limit`. Walks the containers only, level by level; a record's are few (the user,
    the labels)."""
    if type(value) is not dict and type(value) is not list:
        return 0
    level, depth = [value], 0
    while level and depth <= limit:
        depth += 1
        inner: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            inner.extend(item for item in items if type(item) is dict or type(item) is list)
        level = inner
    return depth


# jsonb cannot hold a \u0000 escape (text cannot hold U+0000) or an escaped unpaired surrogate;
# a JSON text in which this finds neither escape holds neither character (see _build).
_RAW_UNSTORABLE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _refuse_unstorable(raw: dict[str, Any]) -> None:
    """Raise for the first string of `raw`, in the file's order, that jsonb cannot hold, naming
    its key (dotted, with indexes)."""
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            named = []
            for key, item in value.items():
                name = f"{path}.{key}" if path else key
                if problem := _unstorable(key):
                    raise ImportFormatError(f"its key {problem}", field=name)
                named.append((name, item))
            stack.extend(reversed(named))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", item) for i, item in enumerate(value)]))
        elif isinstance(value, str) and _unstorable(value):
            raise ImportFormatError(_unstorable(value), field=path)


def _unstorable(text: str) -> str:
    """Why jsonb cannot hold `text`, or ""."""
    if "\x00" in text:
        return "holds a NUL character (\\u0000)"
    try:
        text.encode()
    except UnicodeEncodeError as error:
        return f"holds an unpaired surrogate ({text[error.start]!a}), not text"
    return ""


def _iter_jsonl(reader: _Reader, head: bytes, format: str, max_depth: int) -> Iterator[Record]:
    kind = "rest"
    for number, line in enumerate(reader, 1):
        if line.strip():
            obj, text = _json_line(line, number, max_depth)
            kind = _kind(obj, kind, format)
            yield _build(obj, number, f"line {number}", _BUILDERS[kind], text)


def _json_line(line: bytes, number: int, max_depth: int) -> tuple[Any, bytes]:
    """A line's value and its JSON text (decoded as `_ArrayElements` decodes an element)."""
    text = line.rstrip()
    try:
        obj = _DECODER.decode(text.decode("utf-8"))
    except RecursionError:
        raise _line_too_deep(_past_limit(line, max_depth), number) from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError) and (deep := _past_limit(line, max_depth)):
            raise _line_too_deep(deep, number) from None  # as a depth scan first would
        detail = str(error)
        if isinstance(error, json.JSONDecodeError):
            detail = f"{error.msg} at column {error.colno}"
        raise ImportFormatError(f"not valid JSON ({detail})", record=f"line {number}") from None
    if not _within(obj, text, max_depth):
        raise _line_too_deep(_past_limit(line, max_depth), number)
    return obj, text


def _past_limit(text: bytes, limit: int, *, depth: int = 0, offset: int = 0) -> TooDeep | None:
    """What a DepthScan of `text` raises (begun at `depth`, its bytes numbered from `offset`),
    or None: where JSON goes past the limit, read on the error paths only."""
    scan = DepthScan(limit)
    scan.depth, scan.offset = depth, offset
    try:
        scan.feed(text)
    except TooDeep as error:
        return error
    return None


def _line_too_deep(deep: TooDeep | None, number: int) -> ImportFormatError:
    """Line `number` nests past the limit where `deep` says (None: past what the decoder
    reads)."""
    if deep is None:
        return _unreadably_deep(f"line {number}")
    return ImportFormatError(
        f"JSON is nested deeper than the limit of {deep.limit} levels at column {deep.offset + 1}",
        record=f"line {number}",
    )


def _unreadably_deep(where: str) -> ImportFormatError:
    """JSON deeper than the decoder reads, where the limit is set higher than that."""
    return ImportFormatError(
        f"JSON is nested too deeply to read (over {sys.getrecursionlimit()} levels)", record=where
    )


# --- building records -------------------------------------------------------------------------
# A builder takes the object, its index and its JSON text where the parser kept it (raw_json).
_Builder = Callable[[dict[str, Any], int, bytes | None], Record]


def _build(obj: Any, index: int, where: str, build: _Builder, text: bytes | None = None) -> Record:
    """`build` the record, naming it in any error: "record 3 (number 812)", "line 4". `text`,
    the object's own JSON where the parser kept it, is kept as the record's `raw_json`."""
    if not isinstance(obj, dict):
        raise ImportFormatError(f"expected an object, got {_describe(obj)}", record=where)
    number = str(obj.get("number")).strip()
    label = f"{where} (number {number})" if _INTEGER.fullmatch(number) else where
    try:
        record = _refuse_nul(build(obj, index, text))
        if text is not None and _RAW_UNSTORABLE.search(text):
            _refuse_unstorable(obj)
        return record
    except ImportFormatError as error:
        raise ImportFormatError(error.detail, record=label, field=error.field) from None


def _refuse_nul(record: Record) -> Record:
    """PostgreSQL text cannot hold U+0000: refuse it here, naming the field, rather than fail
    later in the database with a message that names neither record nor field."""
    for name in ("title", "body", "author", "state_reason", "html_url"):
        if "\x00" in getattr(record, name, ""):
            raise ImportFormatError("contains a NUL character (\\u0000)", field=name)
    return record


# Where the fields that differ by name live in each JSON shape; errors name these keys.
_REST_KEYS = {"author": "user", "html_url": "html_url", "state_reason": "state_reason"}
_REST_KEYS |= {"created_at": "created_at", "updated_at": "updated_at", "closed_at": "closed_at"}
_GH_KEYS = {"author": "author", "html_url": "url", "state_reason": "stateReason"}
_GH_KEYS |= {"created_at": "createdAt", "updated_at": "updatedAt", "closed_at": "closedAt"}


def _json_issue(
    obj: dict[str, Any], index: int, text: bytes | None, key: dict[str, str]
) -> IssueRecord:
    rest = key is _REST_KEYS
    html_url = _text(obj, key["html_url"])
    closed_at = _date(obj, key["closed_at"])
    return IssueRecord(
        index=index,
        repository=_repository(obj.get("repository_url"), obj.get("url"), html_url),
        number=_number(obj),
        github_id=_optional_int(obj, "id") if rest else None,  # gh prints node ids, not numbers
        title=_title(obj),
        body=_body(obj),
        state=_state(obj, closed_at),
        state_reason=_text(obj, key["state_reason"]).lower(),
        labels=_labels(obj),
        author=_login(obj, key["author"]),
        created_at=_date(obj, key["created_at"]),
        updated_at=_date(obj, key["updated_at"]),
        closed_at=closed_at,
        is_pull_request=obj.get("pull_request") is not None if rest else _gh_pull(obj, html_url),
        html_url=html_url,
        comments_count=_count(obj),
        raw=obj,
        raw_json=text,
    )


def _gh_pull(obj: dict[str, Any], url: str) -> bool:
    flag = obj.get("isPullRequest")
    return flag if type(flag) is bool else "/pull/" in url


def _rest_comment(obj: dict[str, Any], index: int, text: bytes | None) -> CommentRecord:
    repository, issue_number = _issue_link(obj)
    return CommentRecord(
        index=index,
        repository=repository,
        issue_number=issue_number,
        github_id=_optional_int(obj, "id"),
        author=_login(obj, "user"),
        body=_body(obj),
        created_at=_date(obj, "created_at"),
        updated_at=_date(obj, "updated_at"),
        raw=obj,
        raw_json=text,
    )


_BUILDERS: dict[str, _Builder] = {
    "rest": lambda obj, index, text: _json_issue(obj, index, text, _REST_KEYS),
    "gh": lambda obj, index, text: _json_issue(obj, index, text, _GH_KEYS),
    "comment": _rest_comment,
}


# --- CSV --------------------------------------------------------------------------------------
def _iter_csv(reader: _Reader, head: bytes, format: str, max_depth: int) -> Iterator[Record]:
    # strict: an unclosed quote is an error, not a field that swallows the rest of the file.
    rows = csv.reader(io.TextIOWrapper(reader, encoding="utf-8", newline=""), strict=True)
    index = 0
    try:
        header = _header(next(rows, []))
        for cells in rows:
            if any(cell.strip() for cell in cells):  # blank lines are not records
                index += 1
                yield _build(_row(header, cells, index), index, f"record {index}", _csv_issue)
    except csv.Error as error:
        raise ImportFormatError(f"not valid CSV ({error})", record=f"record {index + 1}") from None


def _header(cells: list[str]) -> list[str]:
    header = [cell.strip().lower() for cell in cells]
    missing = [name for name in ("number", "title") if name not in header]
    if missing:
        raise ImportFormatError(f"CSV is missing required columns: {', '.join(missing)}")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise ImportFormatError(f"CSV has repeated columns: {', '.join(repeated)}")
    return header


def _row(header: list[str], cells: list[str], index: int) -> dict[str, str]:
    if len(cells) > len(header):
        detail = f"row has {len(cells)} fields but the header has {len(header)}"
        raise ImportFormatError(detail, record=f"record {index}")
    # Spreadsheets drop trailing empty cells, so a short row is padded rather than refused.
    return dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=True))


def _csv_issue(row: dict[str, str], index: int, raw_json: bytes | None = None) -> IssueRecord:
    # A builder (_Builder); a CSV row has no JSON text of its own, so `raw_json` stays None.
    cell: dict[str, Any] = {name: text.strip() for name, text in row.items() if text.strip()}
    for name in ("number", "github_id", "comments_count"):
        if name in cell:
            cell[name] = _csv_int(cell[name], name)
    closed_at = _date(cell, "closed_at")
    return IssueRecord(
        index=index,
        repository=_csv_repository(cell) or _repository(cell.get("html_url")),
        number=_number(cell),
        github_id=_optional_int(cell, "github_id"),
        title=_title(cell),
        body=_body(row),
        state=_state(cell, closed_at),
        state_reason=_text(cell, "state_reason").lower(),
        labels=tuple(name.strip() for name in _text(cell, "labels").split(";") if name.strip()),
        author=_text(cell, "author"),
        created_at=_date(cell, "created_at"),
        updated_at=_date(cell, "updated_at"),
        closed_at=closed_at,
        is_pull_request=_flag(_text(cell, "is_pull_request")),
        html_url=_text(cell, "html_url"),
        comments_count=cell.get("comments_count", 0),
        raw=dict(row),
    )


def _csv_int(text: str, name: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ImportFormatError(f"expected an integer, got {_clip(text)!r}", field=name)
    return int(text)


def _csv_repository(cell: dict[str, Any]) -> str | None:
    text = cell.get("repository")
    if text and not _REPOSITORY.fullmatch(text):
        raise ImportFormatError(f"expected owner/name, got {_clip(text)!r}", field="repository")
    return text


def _flag(text: str) -> bool:
    if text.lower() not in _FLAGS:
        detail = f"expected true/false, 1/0 or yes/no, got {_clip(text)!r}"
        raise ImportFormatError(detail, field="is_pull_request")
    return _FLAGS[text.lower()]


# --- fields: each reads `key` of a parsed object and raises naming it -----------------------
def _number(obj: Mapping[str, Any]) -> int:
    if "number" not in obj:
        raise ImportFormatError("missing", field="number")
    number = _optional_int(obj, "number")
    if number is None or number < 1:
        detail = f"expected a positive integer, got {_describe(obj['number'])}"
        raise ImportFormatError(detail, field="number")
    return number


def _optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    # bool is an int subclass in Python, but `true` is no issue number or id.
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ImportFormatError(f"expected an integer, got {_describe(value)}", field=key)


def _title(obj: Mapping[str, Any]) -> str:
    if obj.get("title") is None:
        raise ImportFormatError("missing", field="title")
    title = _text(obj, "title")
    if not title.strip():
        raise ImportFormatError("empty", field="title")
    return title


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise ImportFormatError(f"expected a string, got {_describe(value)}", field=key)


def _body(obj: Mapping[str, Any]) -> str:
    body = _text(obj, "body")
    return body.replace("\r\n", "\n").replace("\r", "\n") if "\r" in body else body


def _state(obj: Mapping[str, Any], closed_at: datetime | None) -> str:
    value = obj.get("state")
    if value is None or value == "":
        return "closed" if closed_at else "open"
    if isinstance(value, str) and value.lower() in _STATES:
        return _STATES[value.lower()]
    raise ImportFormatError(f"expected open or closed, got {_describe(value)}", field="state")


def _date(obj: Mapping[str, Any], key: str) -> datetime | None:
    value = obj.get(key)
    if value is None or value == "":
        return None
    try:
        parsed = datetime.fromisoformat(value)  # Python 3.11 reads "Z" and offsets
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except (TypeError, ValueError, OverflowError):
        raise ImportFormatError(f"invalid date {_clip(value)!r}", field=key) from None


def _labels(obj: Mapping[str, Any]) -> tuple[str, ...]:
    value = obj.get("labels")
    if value is not None and not isinstance(value, list):
        raise ImportFormatError(f"expected a list, got {_describe(value)}", field="labels")
    return tuple(_label_name(label, position) for position, label in enumerate(value or (), 1))


def _label_name(label: Any, position: int) -> str:
    name = label.get("name") if isinstance(label, dict) else label
    if isinstance(name, str) and name.strip():
        return name
    detail = f"label {position} is {_describe(label)}, not a name or an object with a 'name'"
    raise ImportFormatError(detail, field="labels")


def _login(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    login = value.get("login") if isinstance(value, dict) else value
    if value is None or (isinstance(value, dict) and isinstance(login, str | None)):
        return login or ""
    raise ImportFormatError(f"expected an object with a 'login', got {_describe(value)}", field=key)


def _count(obj: Mapping[str, Any]) -> int:
    value = obj.get("comments")  # REST gives a count, gh the comments themselves
    return len(value) if isinstance(value, list) else value if type(value) is int else 0


def _repository(*urls: Any) -> str | None:
    for url in urls:
        if match := _match_url(url):
            return f"{match[1]}/{match[2]}"
    return None


def _match_url(url: Any) -> re.Match[str] | None:
    if not isinstance(url, str):
        return None
    return _API_URL.match(url) or _WEB_URL.match(url)


def _issue_link(obj: Mapping[str, Any]) -> tuple[str, int]:
    url = obj.get("issue_url")
    if url is None or url == "":
        raise ImportFormatError("missing", field="issue_url")
    match = _match_url(url)
    if not match or not match[3]:
        raise ImportFormatError(f"no issue number in {_clip(url)!r}", field="issue_url")
    return f"{match[1]}/{match[2]}", int(match[3])


def _describe(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        return f"string {_clip(value)!r}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    return "an object" if isinstance(value, dict) else "an array"


def _clip(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- single REST objects (the live GitHub sync) ---------------------------------------------
def record_from_rest(obj: Any, index: int) -> Record:
    """One object of ``GET /repos/{owner}/{repo}/issues`` or ``.../issues/comments`` as a
    record, checked as in a "github" file; errors name it "record {index}"."""
    comment = isinstance(obj, dict) and "number" not in obj and "issue_url" in obj
    return _build(obj, index, f"record {index}", _BUILDERS["comment" if comment else "rest"])
