"""The manifest of a study backup archive: what it is, what made it, and per table its member,
row count, bytes, SHA-256 and fields (pure: no Django). A reader needs nothing else to know what
an archive holds; `parse_manifest` refuses any manifest whose shape or version it does not know.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FORMAT = "annotator-study-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
# app_label.model.jsonl: the only shape a data member may have (no directories, no dots beyond).
MEMBER_NAME = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.jsonl")


class ArchiveError(ValueError):
    """A file that is not a readable, intact backup; the message names member, line and field."""


@dataclass(frozen=True)
class FieldEntry:
    name: str
    type: str
    references: str | None = None
    null: bool = False
    primary_key: bool = False


@dataclass(frozen=True)
class TableEntry:
    """One table in the manifest: its member, what was written and how to check it."""

    table: str
    member: str
    rows: int
    bytes: int
    sha256: str
    fields: tuple[FieldEntry, ...]
    natural_key: tuple[str, ...] = ()

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]


@dataclass
class Manifest:
    format_version: int
    app_version: str
    created_at: str
    study: dict[str, Any]
    migrations: dict[str, list[str]]
    tables: list[TableEntry]
    notes: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def table(self, label: str) -> TableEntry | None:
        return next((t for t in self.tables if t.table == label), None)

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)


def member_name(table: str) -> str:
    return f"{table}.jsonl"


# --- the manifest ------------------------------------------------------------------------------


def parse_manifest(data: Any) -> Manifest:
    """Check the manifest's shape and version; anything unexpected is refused by name."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ArchiveError(f"{MANIFEST}: format is {found!r}, not {FORMAT!r}: not a study backup")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArchiveError(f"{MANIFEST}: field 'format_version' must be a positive integer")
    if version > FORMAT_VERSION:
        raise ArchiveError(
            f"{MANIFEST}: format version {version} is newer than this version of annotator "
            f"reads (up to {FORMAT_VERSION}); restore it with a newer annotator"
        )
    tables = _list(data, "tables")
    return Manifest(
        format_version=version,
        app_version=str(data.get("app_version", "")),
        created_at=_text(data, "created_at"),
        study=_dict(data, "study"),
        migrations={str(k): list(v) for k, v in _dict(data, "migrations").items()},
        tables=[_table(t, n) for n, t in enumerate(tables)],
        notes=[str(n) for n in data.get("notes", [])],
        raw=data,
    )


def _table(data: Any, index: int) -> TableEntry:
    where = f"{MANIFEST} tables[{index}]"
    if not isinstance(data, dict):
        raise ArchiveError(f"{where}: not an object")
    table = _text(data, "table", where)
    member = _text(data, "member", where)
    if member != member_name(table) or not MEMBER_NAME.fullmatch(member):
        raise ArchiveError(f"{where}: field 'member' {member[:200]!r} is not {table}.jsonl")
    fields = tuple(_field(f, f"{where}.fields[{n}]") for n, f in enumerate(_list(data, "fields")))
    sha = _text(data, "sha256", where)
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ArchiveError(f"{where}: field 'sha256' is not a SHA-256 hex digest")
    return TableEntry(
        table=table,
        member=member,
        rows=_count(data, "rows", where),
        bytes=_count(data, "bytes", where),
        sha256=sha,
        fields=fields,
        natural_key=tuple(str(k) for k in data.get("natural_key", [])),
    )


def _field(data: Any, where: str) -> FieldEntry:
    if not isinstance(data, dict):
        raise ArchiveError(f"{where}: not an object")
    references = data.get("references")
    return FieldEntry(
        name=_text(data, "name", where),
        type=_text(data, "type", where),
        references=str(references) if references else None,
        null=bool(data.get("null")),
        primary_key=bool(data.get("primary_key")),
    )


def _text(data: dict[str, Any], key: str, where: str = MANIFEST) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ArchiveError(f"{where}: field {key!r} must be a non-empty string")
    return value


def _count(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ArchiveError(f"{where}: field {key!r} must be a count (0 or more)")
    return value


def _list(data: dict[str, Any], key: str, where: str = MANIFEST) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise ArchiveError(f"{where}: field {key!r} must be a list")
    return value


def _dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ArchiveError(f"{MANIFEST}: field {key!r} must be an object")
    return value
