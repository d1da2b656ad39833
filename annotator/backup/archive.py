"""The study backup archive: a zip of JSON Lines members described by manifest.json (pure).

No Django here, so a notebook or another tool can read and check an archive with this module
alone, and so its defences are testable on plain bytes:

- a member is written in one pass while its rows stream in; its row count, byte count and
  SHA-256 go into the manifest, which is written last (a zip's central directory makes the order
  of members irrelevant to readers);
- a reader trusts nothing: it accepts only the member names the manifest lists (and only names of
  the form `app.table.jsonl`, never a path), at most `Limits.max_members` of them, refuses
  encrypted members, bounds the inflated size of every member and of the whole archive while it
  inflates (declared sizes can lie: zip bombs), bounds the length of a line, and checks each
  member's SHA-256, row and byte counts against the manifest before a row is used.

Nothing here ever extracts a member to the file system: members are read as streams by name.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any
from uuid import UUID

from .manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MEMBER_NAME,
    ArchiveError,
    Manifest,
    TableEntry,
    member_name,
    parse_manifest,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "ArchiveError",
    "ArchiveReader",
    "ArchiveWriter",
    "Limits",
    "Manifest",
    "TableEntry",
]

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much an archive may hold. Rows are read one line at a time, so memory is bounded by
    `max_line`; `max_inflated` bounds the work (and any temporary disk) a hostile file can cost."""

    max_members: int = 64
    max_inflated: int = 8 * 1024**3
    max_line: int = 64 * 1024**2
    max_manifest: int = 4 * 1024**2


# --- writing -----------------------------------------------------------------------------------


class MemberWriter:
    """A member being written: rows go straight into the deflate stream, counted and hashed."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._hash = hashlib.sha256()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.rows = 0
        self.bytes = 0

    def write_row(self, row: dict[str, Any]) -> None:
        line = encode_row(row)
        self._pending.append(line)
        self._pending_bytes += len(line)
        self.rows += 1
        if self._pending_bytes >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._hash.update(data)
            self._stream.write(data)
            self.bytes += len(data)
            self._pending, self._pending_bytes = [], 0

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


class ArchiveWriter:
    """Writes members one after another into a zip at `target` (a path or a binary stream,
    seekable or not), then the manifest."""

    def __init__(self, target: str | Path | IO[bytes], *, compresslevel: int = 6) -> None:
        self._zip = zipfile.ZipFile(
            target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=compresslevel
        )
        self.entries: dict[str, dict[str, Any]] = {}

    def write_member(self, table: str, rows: Iterator[dict[str, Any]]) -> dict[str, Any]:
        """Stream `rows` into the member of `table`; returns its manifest counts."""
        name = member_name(table)
        if not MEMBER_NAME.fullmatch(name):
            raise ValueError(f"not a member name: {name!r}")
        with self._zip.open(name, "w", force_zip64=True) as stream:
            writer = MemberWriter(stream)
            for row in rows:
                writer.write_row(row)
            writer.flush()
        entry = {
            "member": name,
            "rows": writer.rows,
            "bytes": writer.bytes,
            "sha256": writer.sha256,
        }
        self.entries[table] = entry
        return entry

    def close(self, manifest: dict[str, Any]) -> None:
        self._zip.writestr(MANIFEST, json.dumps(manifest, indent=1, sort_keys=False) + "\n")
        self._zip.close()

    def abort(self) -> None:
        """Close without a manifest (after an error): what was written is not an archive."""
        self._zip.close()


def encode_row(row: dict[str, Any]) -> bytes:
    # ASCII escapes keep any character (even a lone surrogate from a JSON column) encodable.
    text = json.dumps(row, ensure_ascii=True, separators=(",", ":"), default=_plain)
    return text.encode("ascii") + b"\n"


def _plain(value: Any) -> Any:
    """Dates and times as ISO 8601 (with their UTC offset), decimals and UUIDs as text."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# --- reading -----------------------------------------------------------------------------------


class ArchiveReader:
    """An archive opened for reading: the manifest parsed and the zip's directory checked.
    Call `verify()` before trusting any row; `rows(table)` streams one member's rows."""

    def __init__(
        self, path: str | Path | IO[bytes], *, limits: Limits | None = None, name: str = ""
    ) -> None:
        self.limits = limits or Limits()
        self.name = name or (Path(path).name if isinstance(path, str | Path) else "the archive")
        try:
            self._zip = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise ArchiveError(
                f"{self.name} is not a zip archive (or it was truncated): "
                "not an annotator study backup"
            ) from None
        except OSError as error:
            raise ArchiveError(f"{self.name} cannot be read: {error}") from None
        self._infos = self._check_directory()
        self.manifest = parse_manifest(self._read_manifest())
        self._check_members()

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_directory(self) -> dict[str, zipfile.ZipInfo]:
        infos = self._zip.infolist()
        if len(infos) > self.limits.max_members:
            raise ArchiveError(
                f"{self.name} holds {len(infos)} members, more than a study backup can "
                f"({self.limits.max_members}): refused"
            )
        if MANIFEST not in {info.filename for info in infos}:
            raise ArchiveError(f"{self.name} has no {MANIFEST}: not an annotator study backup")
        seen: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            if info.filename != MANIFEST and not MEMBER_NAME.fullmatch(info.filename):
                raise ArchiveError(
                    f"member {info.filename[:200]!r} is not a backup member name "
                    "(members are app.table.jsonl, never paths): refused"
                )
            if info.flag_bits & 0x1:
                raise ArchiveError(f"member {info.filename!r} is encrypted: refused")
            if info.filename in seen:
                raise ArchiveError(f"member {info.filename!r} appears twice: refused")
            seen[info.filename] = info
        declared = sum(i.file_size for i in infos)
        if declared > self.limits.max_inflated:
            raise ArchiveError(
                f"{self.name} would inflate to {declared:,} bytes, over the limit of "
                f"{self.limits.max_inflated:,}: refused"
            )
        return seen

    def _read_manifest(self) -> Any:
        info = self._infos.get(MANIFEST)
        if info is None:
            raise ArchiveError(f"{self.name} has no {MANIFEST}: not an annotator study backup")
        data = b"".join(self._inflate(info, self.limits.max_manifest))
        try:
            return json.loads(data)
        except (UnicodeDecodeError, ValueError) as error:
            raise ArchiveError(f"{MANIFEST} is not valid JSON: {error}") from None

    def _check_members(self) -> None:
        listed = {t.member for t in self.manifest.tables}
        for table in self.manifest.tables:
            if table.member not in self._infos:
                raise ArchiveError(
                    f"{table.member}: listed in {MANIFEST} but missing from the archive "
                    "(truncated or tampered)"
                )
            if self._infos[table.member].file_size != table.bytes:
                raise ArchiveError(
                    f"{table.member}: {self._infos[table.member].file_size:,} bytes, but "
                    f"{MANIFEST} says {table.bytes:,} (tampered)"
                )
        extra = sorted(set(self._infos) - listed - {MANIFEST})
        if extra:
            raise ArchiveError(f"member {extra[0]!r} is not listed in {MANIFEST}: refused")

    def verify(self) -> None:
        """Inflate every member once: its bytes, rows and SHA-256 must match the manifest."""
        for table in self.manifest.tables:
            digest, size, rows = hashlib.sha256(), 0, 0
            for _, line in self._lines(table):
                digest.update(line)
                size += len(line)
                rows += 1
            if digest.hexdigest() != table.sha256:
                raise ArchiveError(
                    f"{table.member}: SHA-256 does not match {MANIFEST} "
                    "(the member was changed after the backup was made): refused"
                )
            if rows != table.rows:
                raise ArchiveError(f"{table.member}: {rows} rows, but {MANIFEST} says {table.rows}")

    def rows(self, table: TableEntry) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, row) of one member; a line that is not a JSON object with exactly the
        manifest's fields is refused, naming the member and line."""
        names = set(table.field_names())
        for number, line in self._lines(table):
            try:
                row = json.loads(line)
            except (UnicodeDecodeError, ValueError) as error:
                raise ArchiveError(f"{table.member} line {number}: not JSON ({error})") from None
            if not isinstance(row, dict):
                raise ArchiveError(f"{table.member} line {number}: not a JSON object")
            if row.keys() != names:
                missing = sorted(names - row.keys())
                what = (
                    f"field {missing[0]!r} is missing"
                    if missing
                    else f"field {sorted(row.keys() - names)[0]!r} is not in {MANIFEST}"
                )
                raise ArchiveError(f"{table.member} line {number}: {what}")
            yield number, row

    def _lines(self, table: TableEntry) -> Iterator[tuple[int, bytes]]:
        carry, number = b"", 0
        for chunk in self._inflate(self._infos[table.member], table.bytes):
            carry += chunk
            *complete, carry = carry.split(b"\n")
            for line in complete:
                number += 1
                yield number, line + b"\n"
            if len(carry) > self.limits.max_line:
                raise ArchiveError(
                    f"{table.member} line {number + 1}: longer than {self.limits.max_line:,} "
                    "bytes: refused"
                )
        if carry:
            raise ArchiveError(f"{table.member} line {number + 1}: cut off (truncated)")

    def _inflate(self, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
        """The member's bytes, stopping with an error as soon as they pass `limit`: the sizes
        in a zip's directory are the writer's claim, not a bound."""
        total = 0
        try:
            with self._zip.open(info) as stream:
                while chunk := stream.read(CHUNK):
                    total += len(chunk)
                    if total > min(limit, self.limits.max_inflated):
                        bound = min(limit, self.limits.max_inflated)
                        raise ArchiveError(
                            f"{info.filename}: inflates past {bound:,} bytes, more than it "
                            "declares (a zip bomb or a tampered archive): refused"
                        )
                    yield chunk
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as error:
            raise ArchiveError(
                f"{info.filename}: cannot be inflated ({error}): truncated or corrupt"
            ) from None
