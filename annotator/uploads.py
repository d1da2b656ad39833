"""What every uploaded file must pass before anything keeps or parses it (pure: no Django).

An upload is hostile until shown otherwise, and the same few tricks threaten every route: a
file far larger than any real one; bytes that are not what the name says ("report.xlsx" that is
an HTML page, an .exe renamed .json); an XLSX workbook — a zip archive — that inflates to
gigabytes, names a member "../../x" or is encrypted; XML inside it that declares entities
(external ones read local files such as /etc/passwd, nested ones — "billion laughs" — exhaust
memory); and a user's file name used as a path or pasted into a header.

The checks here are plain functions over bytes, paths and names. annotator/upload_handling.py
applies them to Django uploads with limits from settings; annotator/exports/spreadsheets.py
applies `check_xlsx` to every workbook it opens, uploaded or not, so openpyxl never parses an
archive or XML part that was not checked first. Every refusal raises `UploadRefused`, whose
message names the file and what is wrong with it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
import uuid
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import quote

HEAD_BYTES = 8 * 1024
XLSX_TYPES = frozenset(
    {
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/zip",
        "application/x-zip-compressed",
        "application/octet-stream",
        "",
    }
)
# Browsers label .jsonl, .yaml and .csv files inconsistently (Windows calls a CSV
# "application/vnd.ms-excel"), so any text type passes — except HTML, which is never data.
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/yaml",
        "application/x-yaml",
        "application/csv",
        "application/vnd.ms-excel",
        "application/octet-stream",
        "",
    }
)
# A REFI-QDA codebook (.qdc) is XML; taxonomy_app/refi_qda parses it with entities off.
XML_TYPES = frozenset({"application/xml", "text/xml"})
_SIGNATURES = (
    (b"PK\x03\x04", "a zip archive"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"MZ", "a Windows executable"),
    (b"\x7fELF", "an ELF executable"),
    (b"%PDF-", "a PDF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (.xls or .doc)"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
    (b"PAR1", "a Parquet file"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)
_MARKUP = re.compile(rb"^\s*<(!doctype|html|head|body|script|\?xml|svg|!--)", re.IGNORECASE)
_XML_DECLARATIONS = (b"<!doctype", b"<!entity")
_XML_PARTS = (".xml", ".rels", ".vml")
# A cell element, with or without a namespace prefix: <c r="A1">, <c/>, <x:c t="s">.
_CELL_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?c[\s/>]")


class UploadRefused(ValueError):
    """An upload that must not be kept; the message names the file and the reason."""


@dataclass(frozen=True)
class Kind:
    """A kind of upload: the names it may have, the types a client may declare, its size limit."""

    label: str
    extensions: tuple[str, ...]
    content_types: frozenset[str]
    max_bytes: int

    @property
    def is_xlsx(self) -> bool:
        return self.extensions == (".xlsx",)


@dataclass(frozen=True)
class ZipLimits:
    """How far an archive may inflate. Members under `ratio_floor` bytes inflated may compress
    as well as they like: small XML parts of real workbooks often reach 50-100:1."""

    max_members: int = 1_000
    max_inflated: int = 200 * 1024 * 1024
    max_ratio: int = 100
    ratio_floor: int = 1_000_000
    # XLSX only (0: no limit): cells in all sheets, counted in the XML before any parser runs,
    # and XML tags in all parts (`max_cells` * TAGS_PER_CELL), which bounds the parse whatever
    # the tags are (a cell takes 4-6: <c><v>1</v></c>; a shared string 4).
    max_cells: int = 0


TAGS_PER_CELL = 12


# --- names -------------------------------------------------------------------------------------


def display_name(name: str | None) -> str:
    """The user's file name as data for messages: its last path part, without control
    characters, at most 120 characters. Never used to build a path."""
    base = re.split(r"[/\\]", name or "")[-1]
    clean = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return (clean[:117] + "...") if len(clean) > 120 else clean or "the file"


def extension_of(name: str, kind: Kind) -> str:
    """The kind's extension that `name` ends with (lower case), or UploadRefused."""
    lowered = (name or "").lower()
    for extension in kind.extensions:
        if lowered.endswith(extension):
            return extension
    expected = ", ".join(kind.extensions[:-1]) + (" or " if len(kind.extensions) > 1 else "")
    raise UploadRefused(
        f"{display_name(name)}: expected a {kind.label} ({expected}{kind.extensions[-1]})"
    )


def stored_name(directory: str, name: str, kind: Kind) -> str:
    """A generated storage name under a fixed directory ("" for a FileField's upload_to):
    a random token and the kind's extension the name ends with (else ".upload"), so nothing
    the user typed reaches the filesystem."""
    lowered = (name or "").lower()
    extension = next((e for e in kind.extensions if lowered.endswith(e)), ".upload")
    prefix = f"{directory.strip('/')}/" if directory.strip("/") else ""
    return f"{prefix}{uuid.uuid4().hex}{extension}"


def download_name(name: str, fallback: str = "download") -> str:
    """A name fit for a Content-Disposition header: no control characters (newlines), no path
    separators, no leading dots, at most 150 characters (the extension kept)."""
    text = "".join(" " if unicodedata.category(c)[0] == "C" else c for c in name)
    text = "-".join(p for p in re.split(r"[/\\]+", text) if p.strip(" ."))  # "../a" → "a"
    text = re.sub(r"\s+", " ", text).strip(" .")
    if len(text) > 150:
        _, dot, extension = text.rpartition(".")
        keep = extension if dot and len(extension) <= 8 else ""
        text = text[: 149 - len(keep)].rstrip(" .") + ("." + keep if keep else "")
    return text or fallback


def content_disposition(name: str, *, attachment: bool = True) -> str:
    """A Content-Disposition value (RFC 6266) for any name, study names included: an ASCII
    `filename` every client reads, plus `filename*` in UTF-8 when the name is not ASCII."""
    clean = download_name(name)
    ascii_name = unicodedata.normalize("NFKD", clean).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r'["\\%;]', "_", ascii_name).strip(" .") or "download"
    value = f'{"attachment" if attachment else "inline"}; filename="{ascii_name}"'
    if ascii_name != clean:
        value += f"; filename*=UTF-8''{quote(clean, safe='')}"
    return value


# --- content -----------------------------------------------------------------------------------


def sniff(head: bytes) -> str:
    """What the first bytes of a file look like, in words for a message."""
    for signature, description in _SIGNATURES:
        if head.startswith(signature):
            return description
    if b"\0" in head or not _is_utf8_prefix(head):
        return "binary data"
    text = head.removeprefix(codecs.BOM_UTF8)
    if _MARKUP.match(text):
        return "an HTML page" if not re.match(rb"\s*<\?xml", text) else "an XML document"
    first = text.lstrip()[:1]
    return "JSON" if first in (b"[", b"{") else "text" if first else "an empty file"


def check_declared_type(name: str, content_type: str | None, kind: Kind) -> None:
    """Refuse a declared content type that contradicts the kind (text/html for a .json file)."""
    declared = (content_type or "").split(";")[0].strip().lower()
    text_ok = not kind.is_xlsx and declared.startswith("text/") and declared != "text/html"
    if declared in kind.content_types or text_ok:
        return
    raise UploadRefused(f"{display_name(name)}: sent as {declared}, which is not a {kind.label}")


def check_head(name: str, head: bytes, kind: Kind) -> None:
    """The first bytes must be what the extension says: a zip archive for .xlsx; UTF-8 text
    for the rest, starting with [ or { for .json and { for JSON Lines, never an HTML page."""
    extension = extension_of(name, kind)
    looks = sniff(head)
    shown = display_name(name)
    if kind.is_xlsx:
        if looks != "a zip archive":
            raise UploadRefused(f"{shown} is not an .xlsx workbook: it looks like {looks}")
        return
    xml = extension == ".qdc" and looks == "an XML document"
    if looks not in ("JSON", "text") and not xml:
        raise UploadRefused(f"{shown} should be UTF-8 text ({extension}); it looks like {looks}")
    first = head.removeprefix(codecs.BOM_UTF8).lstrip()[:1]
    if extension == ".qdc" and first != b"<":
        raise UploadRefused(f"{shown} is not XML: a REFI-QDA codebook starts with <")
    if extension == ".json" and first not in (b"[", b"{"):
        raise UploadRefused(f"{shown} is not JSON: it should start with [ or {{, found {looks}")
    if extension in (".jsonl", ".ndjson") and first != b"{":
        raise UploadRefused(f"{shown} is not JSON Lines: each line should be an object {{…}}")


class TextScan:
    """Fed a file chunk by chunk: refuses NUL bytes and anything that is not UTF-8, naming the
    byte offset. A multi-byte character split across chunks is fine."""

    def __init__(self, name: str) -> None:
        self._name = display_name(name)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._offset = 0

    def feed(self, chunk: bytes, final: bool = False) -> None:
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise UploadRefused(f"{self._name}: a NUL byte at byte {self._offset + nul}: not text")
        pending = len(self._decoder.getstate()[0])  # bytes of a character begun last chunk
        try:
            self._decoder.decode(chunk, final)
        except UnicodeDecodeError as error:
            at = self._offset - pending + error.start
            raise UploadRefused(f"{self._name}: not UTF-8 text (at byte {at})") from None
        self._offset += len(chunk)


def check_stream(name: str, chunks: Iterable[bytes], kind: Kind) -> int:
    """Read a whole upload: its size against the limit, its head against its name, and (for
    text kinds) every byte as UTF-8 without NULs. Returns the size."""
    size, head, checked = 0, b"", False
    scan = None if kind.is_xlsx else TextScan(name)
    for chunk in chunks:
        size += len(chunk)
        if size > kind.max_bytes:
            raise too_large(name, kind.max_bytes)
        if not checked:
            head += chunk[: HEAD_BYTES - len(head)]
            if len(head) >= HEAD_BYTES:
                check_head(name, head, kind)
                checked = True
        if scan:
            try:
                scan.feed(chunk)
            except UploadRefused:
                if not checked:  # what the head looks like says more than the first bad byte
                    check_head(name, head, kind)
                raise
    if not size:
        raise UploadRefused(f"{display_name(name)} is empty")
    if not checked:
        check_head(name, head, kind)
    if scan:
        scan.feed(b"", final=True)
    return size


def too_large(name: str, limit: int) -> UploadRefused:
    return UploadRefused(f"{display_name(name)} is larger than the limit of {format_size(limit)}")


def format_size(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):g} MB"
    return f"{size / 1024:g} KB" if size >= 1024 else f"{size} bytes"


# --- zip archives (XLSX) -----------------------------------------------------------------------


Source = str | Path | IO[bytes]


def check_zip(source: Source, name: str, limits: ZipLimits) -> list[zipfile.ZipInfo]:
    """Refuse an archive before anything inflates it: too many members, too large inflated,
    a member compressed past `max_ratio`, an absolute or `..` member name, an encrypted member.
    Reads only the central directory. Returns the members."""
    shown = display_name(name)
    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
        raise UploadRefused(f"{shown} is not a readable zip archive: {error}") from None
    if len(members) > limits.max_members:
        raise UploadRefused(
            f"{shown} holds {len(members):,} files, over the limit of {limits.max_members:,}"
        )
    for member in members:
        _check_member(shown, member, limits)
    total = sum(m.file_size for m in members)
    if total > limits.max_inflated:
        raise UploadRefused(
            f"{shown} inflates to {total:,} bytes, over the limit of {limits.max_inflated:,}: "
            "split the workbook"
        )
    return members


def _check_member(shown: str, member: zipfile.ZipInfo, limits: ZipLimits) -> None:
    path = member.filename
    parts = re.split(r"[/\\]", path)
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in parts:
        raise UploadRefused(f"{shown}: member {path!r} points outside the archive")
    if member.flag_bits & 0x1:
        raise UploadRefused(f"{shown}: member {path!r} is encrypted")
    ratio = member.file_size // max(member.compress_size, 1)
    if member.file_size > limits.ratio_floor and ratio > limits.max_ratio:
        raise UploadRefused(
            f"{shown}: {path} inflates {ratio} times (limit {limits.max_ratio}): "
            "refusing a likely zip bomb"
        )


def check_xlsx(source: Source, name: str, limits: ZipLimits) -> None:
    """An XLSX workbook: a zip archive that passes `check_zip`, holds [Content_Types].xml and
    xl/workbook.xml, and whose XML parts are UTF-8 and declare no DOCTYPE or ENTITY (Excel
    never writes one; they are how XXE and billion-laughs files work)."""
    shown = display_name(name)
    if not _is_zip(source):
        raise UploadRefused(f"{shown} is not an .xlsx workbook (not a zip archive)")
    members = check_zip(source, name, limits)
    names = {m.filename for m in members}
    if "xl/workbook.xml" not in names:
        raise UploadRefused(f"{shown} is a zip archive but not an .xlsx workbook")
    if "[Content_Types].xml" not in names:
        raise UploadRefused(f"{shown} cannot be read as .xlsx: it has no [Content_Types].xml")
    count = _Count(shown, limits.max_cells)
    with zipfile.ZipFile(source) as archive:
        for member in members:
            if member.filename.lower().endswith(_XML_PARTS):
                _scan_xml(archive, member, shown, count)


@dataclass
class _Count:
    """Cells of the sheets and tags of every XML part seen so far, against the limits."""

    shown: str
    max_cells: int
    cells: int = 0
    tags: int = 0

    def add(self, member: str, text: bytes) -> None:
        if not self.max_cells:
            return
        self.tags += text.count(b"<")
        if member.startswith("xl/worksheets/"):
            self.cells += len(_CELL_TAG.findall(text))
        if self.cells > self.max_cells:
            raise UploadRefused(
                f"{self.shown} holds more than {self.max_cells:,} cells, the limit of a "
                "workbook read at each import step: split it, or leave out unused sheets"
            )
        if self.tags > self.max_cells * TAGS_PER_CELL:
            raise UploadRefused(
                f"{self.shown} holds more than {self.max_cells * TAGS_PER_CELL:,} XML "
                f"elements, too many for a workbook of at most {self.max_cells:,} cells"
            )


def _scan_xml(archive: zipfile.ZipFile, member: zipfile.ZipInfo, shown: str, count: _Count) -> None:
    """Stream one XML part looking for <!DOCTYPE / <!ENTITY, across chunk boundaries, and count
    its cells and tags (each chunk up to its last "<", the rest carried to the next)."""
    tail, carry = b"", b""
    try:
        with archive.open(member) as part:
            first = True
            while chunk := part.read(64 * 1024):
                if first and (chunk.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\0" in chunk[:4]):
                    raise UploadRefused(f"{shown}: {member.filename} is not UTF-8 XML")
                first = False
                window = (tail + chunk).lower()
                if any(d in window for d in _XML_DECLARATIONS):
                    raise UploadRefused(
                        f"{shown}: {member.filename} declares a DOCTYPE or entities, which "
                        "workbooks never need (they can read local files or exhaust memory)"
                    )
                tail = window[-16:]
                text = carry + chunk
                cut = text.rfind(b"<")
                cut = cut if cut > 0 else len(text)
                count.add(member.filename, text[:cut])
                carry = text[cut:]
            count.add(member.filename, carry + b" ")
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, OSError, EOFError) as error:
        raise UploadRefused(f"{shown}: {member.filename} cannot be read: {error}") from None


def _is_zip(source: Source) -> bool:
    try:
        return zipfile.is_zipfile(source)
    except OSError:
        return False


def _is_utf8_prefix(head: bytes) -> bool:
    """Whether `head` is UTF-8 that may stop in the middle of a character."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True
