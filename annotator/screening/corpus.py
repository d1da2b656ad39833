"""The inputs of a screening simulation: issue files read into one text per issue, and a labels
CSV matched to them (pure: no Django; the issue files go through the importer's own parser,
annotator.issues.formats, so every format `import_issues` reads is read here alike).

Issue files (`read_issues`): any mix of files `import_issues` takes (GitHub REST JSON, JSON Lines,
`gh issue list --json`, CSV), e.g. an issues file and a comments file. An issue is known by its
repository (case-insensitive; a renamed one under its current name, `renames`) and number. Its
text is `ranking.issue_text` of the title, the body and the comments in file order: REST comment
records of the issue, and a gh record's own `comments`. An issue met twice with the same content
is read once; with different content it is an error, as in the import. Comments of issues the
files do not hold are left out (`Corpus.orphan_comments` counts them).

Labels (`read_labels`): UTF-8 CSV, header `repository,number,relevant` (case-insensitive, any
order, other columns ignored), one row per issue: `relevant` is 1 or 0. Every fault names the
line and the field: a missing column, a number that is no positive integer, a repository that
is no owner/name, `relevant` other than 1 or 0, an issue the files do not hold, an issue
labelled twice. Issues without a label are not simulated (`Labels.unlabelled` counts them).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from annotator.issues.formats import (
    MAX_DEPTH,
    ByteSource,
    CommentRecord,
    ImportFormatError,
    IssueRecord,
    iter_records,
)

from .ranking import issue_text

LABEL_COLUMNS = ("repository", "number", "relevant")
_REPOSITORY = re.compile(r"[^/\s]+/[^/\s]+")
_NUMBER = re.compile(r"[0-9]+", re.ASCII)

Key = tuple[str, int]  # (repository in lower case, number)


class InputError(ValueError):
    """Bad input; str() names the file, then the record or line and the field when known."""

    def __init__(self, message: str, *, where: str | None = None, field: str | None = None):
        prefix = ": ".join(part for part in (where, field and f"field {field!r}") if part)
        super().__init__(f"{prefix}: {message}" if prefix else message)


@dataclass
class _Draft:
    name: str
    record: IssueRecord
    comments: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Corpus:
    """The issues read, in file order: `names[i]` ("owner/name#12") and `texts[i]`."""

    names: list[str]
    texts: list[str]
    index: dict[Key, int]
    orphan_comments: int = 0


@dataclass(frozen=True)
class Labels:
    """Indices into the corpus and their labels, in the CSV's order."""

    indices: list[int]
    labels: list[int]
    unlabelled: int


def read_issues(
    sources: Iterable[tuple[str, ByteSource]],
    *,
    renames: Mapping[str, str] | None = None,
    default_repository: str | None = None,
    limits: Mapping[str, Any] | None = None,
) -> Corpus:
    """Every issue of the (file name, byte stream) `sources` with its comments, as one text.

    `renames` maps a former "owner/name" in lower case to the current one; `limits` are
    iter_records' keyword limits (max_bytes, max_depth, max_records, max_string). Raises
    InputError naming the file, the record and the field.
    """
    drafts: dict[Key, _Draft] = {}
    comments: list[tuple[Key, str]] = []
    for filename, stream in sources:
        for record in _records(filename, stream, default_repository, dict(limits or {})):
            if isinstance(record, CommentRecord):
                key = _key(record.repository, record.issue_number, renames, filename, record)
                comments.append((key, record.body))
            else:
                _add_issue(drafts, record, filename, renames)
    orphans = 0
    for key, body in comments:
        if key in drafts:
            drafts[key].comments.append(body)
        else:
            orphans += 1
    return _corpus(drafts, orphans)


def _records(
    filename: str, stream: ByteSource, default_repository: str | None, limits: dict[str, Any]
) -> Iterator[IssueRecord | CommentRecord]:
    limits.setdefault("max_depth", MAX_DEPTH)
    try:
        yield from iter_records(
            stream, filename=filename, default_repository=default_repository, **limits
        )
    except ImportFormatError as error:
        raise InputError(str(error), where=filename) from None


def _add_issue(
    drafts: dict[Key, _Draft],
    record: IssueRecord,
    filename: str,
    renames: Mapping[str, str] | None,
) -> None:
    key = _key(record.repository, record.number, renames, filename, record)
    where = f"{filename}: record {record.index}"
    earlier = drafts.get(key)
    if earlier is None:
        drafts[key] = _Draft(name=f"{record.repository}#{record.number}", record=record)
        drafts[key].comments.extend(_inline_comments(record))
    elif earlier.record.content_hash() != record.content_hash():
        raise InputError(
            f"{earlier.name} appears twice with different content (first as record "
            f"{earlier.record.index})",
            where=where,
        )


def _inline_comments(record: IssueRecord) -> list[str]:
    """A gh record's comments ({"author", "body", ...} objects); REST records count them."""
    found = record.raw.get("comments")
    if not isinstance(found, list):
        return []
    return [c["body"] for c in found if isinstance(c, dict) and isinstance(c.get("body"), str)]


def _key(
    repository: str | None,
    number: int,
    renames: Mapping[str, str] | None,
    filename: str,
    record: IssueRecord | CommentRecord,
) -> Key:
    if not repository:
        raise InputError(
            "missing: the record names no repository (give --repo OWNER/NAME)",
            where=f"{filename}: record {record.index}",
            field="repository",
        )
    lower = repository.lower()
    return ((renames or {}).get(lower, lower).lower(), number)


def _corpus(drafts: dict[Key, _Draft], orphans: int) -> Corpus:
    names: list[str] = []
    texts: list[str] = []
    index: dict[Key, int] = {}
    for key, draft in drafts.items():
        index[key] = len(names)
        names.append(draft.name)
        texts.append(issue_text(draft.record.title, draft.record.body, draft.comments))
    return Corpus(names=names, texts=texts, index=index, orphan_comments=orphans)


# --- labels -----------------------------------------------------------------------------------
def read_labels(
    stream: ByteSource,
    corpus: Corpus,
    *,
    filename: str = "labels.csv",
    renames: Mapping[str, str] | None = None,
) -> Labels:
    """The labels CSV matched to `corpus` (see the module docstring); raises InputError
    naming the file, the line and the field."""
    text = io.TextIOWrapper(io.BufferedReader(_Bytes(stream)), encoding="utf-8-sig", newline="")
    try:
        return _labels(
            _numbered(csv.reader(text, strict=True), filename), corpus, filename, renames
        )
    except UnicodeDecodeError as error:
        raise InputError(f"not valid UTF-8 ({error.reason})", where=filename) from None


def _numbered(rows: Any, filename: str) -> Iterator[tuple[int, list[str]]]:
    """(the line a row starts on, its cells); a CSV fault names the line its row starts on."""
    line = 0
    while True:
        try:
            cells = next(rows, None)
        except csv.Error as error:
            raise InputError(
                f"not valid CSV ({error})", where=f"{filename}: line {line + 1}"
            ) from None
        if cells is None:
            return
        yield line + 1, cells
        line = rows.line_num


def _labels(
    rows: Iterator[tuple[int, list[str]]],
    corpus: Corpus,
    filename: str,
    renames: Mapping[str, str] | None,
) -> Labels:
    first = next(rows, None)
    if first is None:
        raise InputError("file is empty", where=filename)
    columns = _header(first[1], f"{filename}: line {first[0]}")
    seen: dict[int, int] = {}
    indices, labels = [], []
    for start, cells in rows:
        if not any(cell.strip() for cell in cells):
            continue
        where = f"{filename}: line {start}"
        index, label = _label_row(cells, columns, corpus, where, renames)
        if index in seen:
            raise InputError(
                f"{corpus.names[index]} is labelled twice (first on line {seen[index]})",
                where=where,
            )
        seen[index] = start
        indices.append(index)
        labels.append(label)
    if not indices:
        raise InputError("no labels: the file has a header and no rows", where=filename)
    return Labels(indices=indices, labels=labels, unlabelled=len(corpus.names) - len(indices))


def _header(cells: list[str], where: str) -> dict[str, int]:
    names = [cell.strip().lower() for cell in cells]
    for name in LABEL_COLUMNS:
        if name not in names:
            raise InputError(
                f"missing column {name!r} (the header must name {', '.join(LABEL_COLUMNS)}; "
                f"found {', '.join(repr(c) for c in cells) or 'nothing'})",
                where=where,
            )
        if names.count(name) > 1:
            raise InputError(f"column {name!r} appears {names.count(name)} times", where=where)
    return {name: names.index(name) for name in LABEL_COLUMNS}


def _label_row(
    cells: list[str],
    columns: dict[str, int],
    corpus: Corpus,
    where: str,
    renames: Mapping[str, str] | None,
) -> tuple[int, int]:
    value = {name: _cell(cells, i) for name, i in columns.items()}
    repository, number, relevant = value["repository"], value["number"], value["relevant"]
    if not _REPOSITORY.fullmatch(repository):
        detail = f"expected owner/name, got {_shown(repository)}"
        raise InputError(detail, where=where, field="repository")
    if not _NUMBER.fullmatch(number) or int(number) < 1:
        detail = f"expected a positive integer, got {_shown(number)}"
        raise InputError(detail, where=where, field="number")
    if relevant not in ("0", "1"):
        detail = f"expected 1 or 0, got {_shown(relevant)}"
        raise InputError(detail, where=where, field="relevant")
    lower = repository.lower()
    key = ((renames or {}).get(lower, lower).lower(), int(number))
    if key not in corpus.index:
        raise InputError(
            f"fields 'repository', 'number': {repository}#{int(number)} is not in the issues "
            "file(s)",
            where=where,
        )
    return corpus.index[key], int(relevant)


def _cell(cells: list[str], i: int) -> str:
    return cells[i].strip() if i < len(cells) else ""


def _shown(value: str) -> str:
    if not value:
        return "an empty cell"
    return repr(value if len(value) <= 60 else value[:57] + "...")


class _Bytes(io.RawIOBase):
    """Any ByteSource as the raw stream TextIOWrapper wants."""

    def __init__(self, source: ByteSource) -> None:
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._source.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)
