"""Streaming export writers (pure: no Django but one setting, XLSX's spool directory; plain rows
in, bytes out).

Input shape. Every writer takes an iterable of row dicts (`{column name: value}`), as a
generator over `QuerySet.values(...).iterator(chunk_size=5000)` yields them, and a list of
`Column`s saying which keys to write, in which order, with which type. A key missing from a row
is written as missing. Rows are never held all at once, so memory is flat whatever their number:
CSV and JSON keep ~256 KiB of text before each write, Parquet one row group of `chunk_rows`
(5,000 by default) as column lists, XLSX one row. The output is a binary file object (a file
opened "wb", a Django `File`, a `BytesIO`); writers leave it open and return the row count.

Types, per column kind:

| kind      | CSV / XLSX                  | JSON / JSONL     | Parquet                       |
|-----------|-----------------------------|------------------|-------------------------------|
| int       | digits; empty when missing  | number / null    | int64, nullable (pandas Int64)|
| float     | repr; empty when missing    | number / null    | float64                       |
| bool      | true / false                | true / false     | bool                          |
| str       | text                        | string           | string                        |
| list      | codes joined by `;`         | array of strings | list<string>                  |
| timestamp | `2024-05-01T12:00:00Z` (UTC)| same string      | timestamp[us, UTC]            |

CSV is UTF-8 without BOM, RFC 4180 quoting, CRLF line ends, one header row. XLSX is the format
for spreadsheet programs: every string is stored as a string, never a formula, control
characters are dropped, and timestamps are naive datetimes in UTC. Issue titles are untrusted,
so in CSV and XLSX a text cell (str and list columns) starting with `=`, `+`, `-`, `@`, tab or
carriage return gets a leading `'` (OWASP's rule against formula injection: `'=HYPERLINK(…)`);
JSON, JSONL and Parquet keep the raw text, and numbers stay numbers everywhere.

The contract the Django export service fills (column lists built in `columns.py`):

Final dataset — one row per study item, the agreed labels (`final_dataset_columns(facets)`):
  item_id int · round int · repository str (owner/name) · number int · url str · title str ·
  per facet, by its shape:
    single, flat          `<facet>`            str, category code (`stage`, `root_cause`)
    single, hierarchical  `<facet>_l1`, `_l2`  str, code at each level (`symptom_l1` = inner
                                               category, `symptom_l2` = leaf; empty below the
                                               level the label stops at)
    multi-valued          `<facet>`            list of codes (`fix_pattern`)
  · unsure list (keys of the facets any annotator marked unsure in a submitted annotation of
  the item, in the codebook's order; empty when none) · decision_source str (unanimous |
  majority | single | adjudicated | imported) · decided_at timestamp · reason str (the adjudication
  reason code; empty for automatic decisions) · comment str (the adjudicator's comment) ·
  confidence int (the adjudicator's, 1 low · 2 medium · 3 high; empty when not said). An
  item marked unsure waits for a
  person when the study routes unsure labels to adjudication, so its decision is then empty or
  adjudicated, never unanimous or majority.
  Facet keys become column names with `-` → `_` (`root-cause` → `root_cause`). Codes, not
  names, are written: they stay stable when a category is renamed; the card lists the names.

Annotator sheet (XLSX, one per annotator; `annotator_sheet_columns(facets)`): the same columns
as the final dataset for that annotator's submitted labels, each facet's followed by
`<facet>_unsure` bool (they marked it unsure), without `unsure`, and with submitted_at
timestamp, seconds_spent int and notes str (the annotator's notes) instead of
decision_source, decided_at, reason and comment.

Long table — one row per label given (`LONG_TABLE_COLUMNS`), tidy for group-bys and agreement:
  item_id int · round int · repository str · number int · url str · row_kind str (annotation
  | after_discussion | machine | decision) · facet str (key) · annotator str (username; the
  machine rater's name, `name#k` for its sample k > 0, on machine rows; empty on decision rows)
  · annotator_origin str (human | machine; empty on decision rows) · category
  str (chosen code; the leaf of a hierarchical facet) · category_l1 str (its top-level
  ancestor) · unsure bool (the annotator marked the facet unsure) · codebook_version int ·
  submitted_at timestamp · seconds_spent int (for the whole item, repeated on each of its
  labels) · notes str (the annotator's notes, repeated on each of their rows) ·
  decision_source str · reason str · comment str (the decision's, on decision rows only).
  A multi-valued facet gives one row per chosen category; an unlabelled facet gives no row,
  unless the annotator marked it unsure: then one row with empty category and category_l1.
  After an item's annotation rows come its decision rows, one per final label (one with no
  facet when the decision has no label, so its reason and comment are kept); agreement reads
  the rows with row_kind = annotation. A declared machine rater's valid answers come as
  row_kind = machine rows between them (only on items whose human labels are all in).

Disagreements — one row per item whose annotators labelled a facet differently, or where one
marked a facet unsure and the study sends those to adjudication (`disagreement_columns(facets,
annotators)`): the item columns and title · agreement float (the item's mean pairwise
agreement) · disagreeing list (facet keys the annotators differ on) · unsure list · per facet,
`<facet>_by_<username>` for each annotator of the exported disagreements (str code, or list for
a multi-valued facet; empty when they gave none) and `<facet>_final` (the decision's) ·
decision_source str (empty while it waits) · reason str · comment str · decided_at timestamp.

XLSX layout: one sheet per annotator plus `Final` (as the TOSEM 2023 study keeps its rounds)
and `Disagreements`.
The XLSX writer is openpyxl in write-only mode around cells formatted here: each sheet's cells
stream as text to a temporary file (in settings.XLSX_TEMP_DIR, which the job sweep clears of
what a killed export left), so sheets may be filled one after another from separate queries
with flat memory, and are spliced into openpyxl's sheet XML as the zip is written
(`write_xlsx`). We chose openpyxl over XlsxWriter's constant_memory mode because the project
already needs it to read prior rounds (`spreadsheets.py`) and pandas reads XLSX through it: one
well-kept library for both. Its own cell writer (~8,500 rows/s of 14 columns, a cell object
and an lxml element per value) made a 100,000-item workbook take minutes; the cells are
formatted exactly as it formats them, several times faster.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from annotator.exports.card import dataset_card
from annotator.exports.columns import Column, ColumnKind, join_list, to_json, to_text, utc

__all__ = [
    "Column",
    "XlsxSheet",
    "dataset_card",
    "write_csv",
    "write_json",
    "write_jsonl",
    "write_parquet",
    "write_xlsx",
]

Row = Mapping[str, Any]
CHUNK_ROWS = 5_000  # rows per Parquet row group
FLUSH_CHARS = 256 * 1024  # text buffered before each write of CSV and JSON


def _flush(buffer: io.StringIO, out: IO[bytes]) -> None:
    out.write(buffer.getvalue().encode())
    buffer.seek(0)
    buffer.truncate()


def _special(columns: Sequence[Column], convert: Any) -> list[tuple[int, str, Any]]:
    """(index, name, converter) of the columns whose values need converting for text formats:
    str and int values go through as they are (None is handled by csv and json alike)."""
    kinds = ("float", "bool", "list", "timestamp")
    return [
        (i, c.name, _Memo(functools.partial(convert, c.kind)))
        for i, c in enumerate(columns)
        if c.kind in kinds
    ]


class _Memo:
    """Remembers the last conversion: a long table repeats an annotation's submitted_at on each
    of its labels, and formatting a timestamp costs more than writing the whole CSV row."""

    def __init__(self, convert: Any) -> None:
        self.convert = convert
        self.last: Any = object()
        self.result: Any = None

    def __call__(self, value: Any) -> Any:
        if value is not self.last and value != self.last:
            self.result, self.last = self.convert(value), value
        return self.result


# A spreadsheet program reads a cell starting with one of these as a formula (OWASP, "CSV
# Injection"); CSV and XLSX text cells starting so get a leading quote. A set, not a string:
# "" is in every string.
_FORMULA_START = frozenset("=+-@\t\r")


def defuse_formula(text: str) -> str:
    """`text` with a leading `'` when a spreadsheet would read it as a formula."""
    return "'" + text if text[:1] in _FORMULA_START else text


def _text_indexes(columns: Sequence[Column]) -> list[int]:
    return [i for i, c in enumerate(columns) if c.kind in ("str", "list")]


def write_csv(rows: Iterable[Row], columns: Sequence[Column], out: IO[bytes]) -> int:
    """Write a header row and one line per row; returns the number of rows written."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    names = [c.name for c in columns]
    special = _special(columns, to_text)
    text = _text_indexes(columns)
    writer.writerow(names)
    count = 0
    for row in rows:
        cells = [row.get(name) for name in names]
        for index, _, convert in special:
            cells[index] = convert(cells[index])
        for index in text:
            value = cells[index]
            if value and value[0] in _FORMULA_START:
                cells[index] = "'" + value
        writer.writerow(cells)
        count += 1
        if buffer.tell() >= FLUSH_CHARS:
            _flush(buffer, out)
    _flush(buffer, out)
    return count


def write_jsonl(rows: Iterable[Row], columns: Sequence[Column], out: IO[bytes]) -> int:
    """Write one JSON object per line (keys in column order); returns the number of rows."""
    return _write_json_records(rows, columns, out, _LINES)


def write_json(rows: Iterable[Row], columns: Sequence[Column], out: IO[bytes]) -> int:
    """Write one JSON array of objects, streamed (`[`, objects one per line, `]`)."""
    count = _write_json_records(rows, columns, out, _ARRAY)
    out.write(b"]\n" if count else b"[]\n")
    return count


@dataclass(frozen=True)
class _Framing:
    """What a JSON writer puts before the first record, between two and after the last."""

    first: str
    between: str
    last: str


_LINES = _Framing(first="", between="\n", last="\n")
_ARRAY = _Framing(first="[\n", between=",\n", last="\n")


def _write_json_records(
    rows: Iterable[Row], columns: Sequence[Column], out: IO[bytes], framing: _Framing
) -> int:
    buffer = io.StringIO()
    names = [c.name for c in columns]
    special = _special(columns, to_json)
    dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
    count = 0
    for row in rows:
        record = {name: row.get(name) for name in names}
        for _, name, convert in special:
            record[name] = convert(record[name])
        buffer.write((framing.between if count else framing.first) + dumps(record))
        count += 1
        if buffer.tell() >= FLUSH_CHARS:
            _flush(buffer, out)
    if count:
        buffer.write(framing.last)
    _flush(buffer, out)
    return count


def _cells(row: Row, columns: Sequence[Column], convert: Any) -> list[Any]:
    return [convert(c.kind, row.get(c.name)) for c in columns]


def parquet_schema(columns: Sequence[Column]) -> Any:
    """The explicit Arrow schema, with pandas metadata so ints read back as nullable Int64."""
    import pyarrow as pa

    types = {
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "str": pa.string(),
        "list": pa.list_(pa.string()),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    schema = pa.schema([pa.field(c.name, types[c.kind], nullable=True) for c in columns])
    return schema.with_metadata({b"pandas": json.dumps(_pandas_metadata(columns)).encode()})


def _pandas_metadata(columns: Sequence[Column]) -> dict[str, Any]:
    # What pandas' own to_parquet records: it makes read_parquet restore Int64 (not float64 with
    # NaN) and a default RangeIndex, the dtypes a researcher expects.
    kinds = {"int": ("int64", "Int64"), "float": ("float64", "float64"), "bool": ("bool", "bool")}
    kinds |= {"str": ("unicode", "object"), "list": ("list[unicode]", "object")}
    kinds["timestamp"] = ("datetimetz", "datetime64[us, UTC]")

    def entry(c: Column) -> dict[str, Any]:
        pandas_type, numpy_type = kinds[c.kind]
        meta = {"timezone": "UTC"} if c.kind == "timestamp" else None
        return {
            "name": c.name,
            "field_name": c.name,
            "pandas_type": pandas_type,
            "numpy_type": numpy_type,
            "metadata": meta,
        }

    return {
        "index_columns": [{"kind": "range", "name": None, "start": 0, "stop": 0, "step": 1}],
        "column_indexes": [],
        "columns": [entry(c) for c in columns],
        "creator": {"library": "annotator"},
        "pandas_version": "2.2.0",
    }


def write_parquet(
    rows: Iterable[Row], columns: Sequence[Column], out: IO[bytes], *, chunk_rows: int = CHUNK_ROWS
) -> int:
    """Write one Parquet row group per chunk under a fixed schema (types never drift)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(columns)
    names = [c.name for c in columns]
    count = 0
    with pq.ParquetWriter(out, schema) as writer:
        # Column lists, not a list of row dicts: a chunk holds only the values themselves.
        for buffers in _column_chunks(rows, names, chunk_rows):
            arrays = [_arrow_array(pa, buffers[c.name], c, schema.field(c.name)) for c in columns]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            count += len(buffers[names[0]]) if names else 0
    return count


def _column_chunks(
    rows: Iterable[Row], names: Sequence[str], size: int
) -> Iterator[dict[str, list[Any]]]:
    buffers: dict[str, list[Any]] = {name: [] for name in names}
    filled = 0
    for row in rows:
        for name in names:
            buffers[name].append(row.get(name))
        filled += 1
        if filled == size:
            yield buffers
            buffers, filled = {name: [] for name in names}, 0
    if filled:
        yield buffers


def _arrow_array(pa: Any, values: list[Any], column: Column, field: Any) -> Any:
    if column.kind == "timestamp":
        values = [None if v is None else utc(v) for v in values]
    elif column.kind == "list":
        values = [None if v is None else [str(x) for x in v] for v in values]
    return pa.array(values, type=field.type, from_pandas=True)


@dataclass(frozen=True)
class XlsxSheet:
    """One sheet of an XLSX export: its title, its columns, and its rows (consumed lazily)."""

    title: str
    columns: Sequence[Column]
    rows: Iterable[Row]


# Excel refuses these in sheet titles and caps titles at 31 characters.
_BAD_TITLE = re.compile(r"[\[\]:*?/\\]")
_MAX_CELL = 32_767
# Control characters XML 1.0 cannot hold (openpyxl's ILLEGAL_CHARACTERS_RE, without importing it).
_ILLEGAL_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def sheet_title(name: str, taken: set[str]) -> str:
    """A valid, unique (case-insensitively, as Excel compares) sheet title for `name`."""
    base = _BAD_TITLE.sub("_", name).strip("'") or "sheet"
    title, n = base[:31], 1
    while title.casefold() in taken:
        n += 1
        suffix = f" ({n})"
        title = base[: 31 - len(suffix)] + suffix
    taken.add(title.casefold())
    return title


def xlsx_temp_dir() -> str | None:
    """Where openpyxl spools each sheet's XML until the workbook is saved: settings.XLSX_TEMP_DIR
    once Django is set up (the job sweep removes what a killed export left there), else None,
    the system's temporary directory. The only setting this module reads."""
    if "django.conf" not in sys.modules:
        return None
    from django.conf import settings

    return getattr(settings, "XLSX_TEMP_DIR", None) if settings.configured else None


def _spool_in(worksheet: Any, directory: str | Path | None) -> None:
    """Give a write-only sheet its spool file in `directory`, as openpyxl would in the system's
    temporary directory (create_temporary_file: named openpyxl.*, listed for removal at exit;
    the workbook's save removes it)."""
    from openpyxl.worksheet._writer import ALL_TEMP_FILES, WorksheetWriter

    if directory is None:
        return
    os.makedirs(directory, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="openpyxl.", dir=directory)
    os.close(handle)
    ALL_TEMP_FILES.append(name)
    worksheet._writer = WorksheetWriter(worksheet, out=name)
    worksheet._writer.write_top()


def write_xlsx(
    sheets: Iterable[XlsxSheet], out: IO[bytes], *, temp_dir: str | Path | None = None
) -> dict[str, int]:
    """Write each sheet in turn (header row, then rows); returns rows written per sheet title.
    Sheets spool to `temp_dir`, by default `xlsx_temp_dir()`.

    The service passes one `XlsxSheet` per annotator (`annotator_sheet_columns`) and then
    `Final` (`final_dataset_columns`). Titles are made valid and unique for Excel.

    openpyxl (write-only) writes the workbook around the sheets: workbook, styles, relations,
    each sheet's XML up to and after its cells. The cells themselves are formatted here, as
    openpyxl's write-only writer formats them (`_SheetXml`), byte for byte, into a spool file
    per sheet, then spliced into the sheet's XML as the zip is written: openpyxl builds a cell
    object and an lxml element per value, ~8 times the cost of formatting the text
    (tests/exports/test_xlsx_cells.py holds both outputs equal).
    """
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    taken: set[str] = set()
    counts: dict[str, int] = {}
    directory = temp_dir or xlsx_temp_dir()
    spools: list[tuple[Any, Path]] = []
    try:
        for sheet in sheets:
            worksheet = workbook.create_sheet(sheet_title(sheet.title, taken))
            _spool_in(worksheet, directory)
            spools.append((worksheet, _new_spool(directory)))
            # ASCII with character references for the rest, as lxml writes openpyxl's XML.
            spool = spools[-1][1]
            with spool.open("w", encoding="ascii", errors="xmlcharrefreplace", newline="") as text:
                counts[worksheet.title] = _SheetXml(worksheet).write(text, sheet)
        skeleton = io.BytesIO()
        workbook.save(skeleton)  # numbers the sheets' paths
        _splice(skeleton, {ws.path.lstrip("/"): spool for ws, spool in spools}, out)
    finally:
        for _, spool in spools:
            spool.unlink(missing_ok=True)
    return counts


def _new_spool(directory: str | Path | None) -> Path:
    """A spool file for one sheet's cells, named as openpyxl names its own (the job sweep
    clears what a killed export left in settings.XLSX_TEMP_DIR)."""
    if directory is not None:
        os.makedirs(directory, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="openpyxl.", suffix=".cells", dir=directory)
    os.close(handle)
    return Path(name)


_EMPTY_SHEET_DATA = re.compile(rb"<sheetData\s*/>|<sheetData></sheetData>")


def _splice(skeleton: io.BytesIO, spools: Mapping[str, Path], out: IO[bytes]) -> None:
    """Copy openpyxl's zip to `out`, each sheet's empty `<sheetData>` filled from its spool."""
    import zipfile

    with (
        zipfile.ZipFile(skeleton) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as target,
    ):
        for info in source.infolist():
            data = source.read(info)
            spool = spools.get(info.filename)
            if spool is None:
                target.writestr(info, data)
                continue
            head, tail = _EMPTY_SHEET_DATA.split(data, maxsplit=1)
            member = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            member.compress_type = zipfile.ZIP_DEFLATED
            with target.open(member, "w", force_zip64=True) as sink, spool.open("rb") as cells:
                sink.write(head + b"<sheetData>")
                while block := cells.read(1 << 20):
                    sink.write(block)
                sink.write(b"</sheetData>" + tail)


def _xml_text(text: str) -> str:
    """`text` escaped as lxml escapes element text in openpyxl's write-only writer (chained
    replaces: several times faster than str.translate)."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    )


_FLUSH_ROWS = 512


class _SheetXml:
    """A sheet's `<row>` elements as openpyxl's write-only writer (lxml) formats them: only
    cells with a value; str as inline strings (xml:space="preserve" when the text has outer
    whitespace; an Excel error code as an error cell), bool `t="b"`, int and float `t="n"` as
    `%.16g`, a naive datetime as its Excel serial with the workbook's date style. Other types
    go through openpyxl itself (`_other`)."""

    def __init__(self, worksheet: Any) -> None:
        from openpyxl.cell.cell import ERROR_CODES
        from openpyxl.compat import safe_string
        from openpyxl.utils.datetime import to_excel

        self.worksheet = worksheet
        self.errors = frozenset(ERROR_CODES)
        self.safe_string, self.to_excel = safe_string, to_excel
        self.epoch = worksheet.parent.epoch
        self.date_style: str | None = None  # registered on the first datetime, as openpyxl does

    def write(self, text: IO[str], sheet: XlsxSheet) -> int:
        from openpyxl.utils import get_column_letter

        letters = [get_column_letter(i) for i in range(1, len(sheet.columns) + 1)]
        cell = self.cell
        text.write(self.row(1, letters, [c.name for c in sheet.columns]))
        columns = [
            (letter, c.name, c.kind) for letter, c in zip(letters, sheet.columns, strict=True)
        ]
        text_cell, illegal, errors = self.text_cell, _ILLEGAL_XML.sub, self.errors
        pending: list[str] = []
        count = 0
        for count, row in enumerate(sheet.rows, start=1):
            r = str(count + 1)
            cells = [f'<row r="{r}">']
            for letter, name, kind in columns:
                value = row.get(name)
                if value is None:
                    continue
                # The two common cases inline (what _xlsx_value and cell do with them):
                if kind == "str" and type(value) is str:
                    value = illegal("", value)
                    if value[:1] in _FORMULA_START:
                        value = "'" + value
                    value = value[:_MAX_CELL]
                    if value and value not in errors:
                        cells.append(text_cell(letter + r, value))
                        continue
                elif kind == "int" and type(value) is int:
                    cells.append(f'<c r="{letter}{r}" t="n"><v>{value:.16g}</v></c>')
                    continue
                else:
                    value = _xlsx_value(kind, value)
                cells.append(cell(letter + r, value))
            cells.append("</row>")
            pending.append("".join(cells))
            if len(pending) >= _FLUSH_ROWS:
                text.write("".join(pending))
                pending.clear()
        text.write("".join(pending))
        return count

    def row(self, number: int, letters: Sequence[str], values: Sequence[Any]) -> str:
        r = str(number)
        cells = "".join(self.cell(x + r, v) for x, v in zip(letters, values, strict=False))
        return f'<row r="{r}">{cells}</row>'

    def cell(self, ref: str, value: Any) -> str:
        kind = type(value)
        if value is None:
            return ""
        if kind is str:
            if value in self.errors:
                return f'<c r="{ref}" t="e"><v>{_xml_text(value)}</v></c>'
            if not value:
                return f'<c r="{ref}" t="inlineStr"></c>'
            return self.text_cell(ref, value)
        if kind is int:
            return f'<c r="{ref}" t="n"><v>{value:.16g}</v></c>'
        if kind is bool:
            return f'<c r="{ref}" t="b"><v>{1 if value else 0}</v></c>'
        if kind is float:
            return f'<c r="{ref}" t="n"><v>{self.safe_string(value)}</v></c>'
        if kind is datetime and value.tzinfo is None:
            style = self.date_style or self._date_style(value)
            serial = self.safe_string(self.to_excel(value, self.epoch))
            return f'<c r="{ref}" s="{style}" t="n"><v>{serial}</v></c>'
        return self._other(ref, value)

    @staticmethod
    def text_cell(ref: str, value: str) -> str:
        """A non-empty string that is not an Excel error code, as an inline string."""
        space = ' xml:space="preserve"' if value != value.strip() else ""
        return f'<c r="{ref}" t="inlineStr"><is><t{space}>{_xml_text(value)}</t></is></c>'

    def _date_style(self, value: datetime) -> str:
        from openpyxl.cell import WriteOnlyCell

        self.date_style = str(WriteOnlyCell(self.worksheet, value).style_id)
        return self.date_style

    def _other(self, ref: str, value: Any) -> str:
        """A value of any other type, through openpyxl's own cell and writer (it raises for a
        type Excel cannot hold, or an aware datetime, as it always did)."""
        from xml.etree.ElementTree import tostring

        from openpyxl.cell import WriteOnlyCell
        from openpyxl.cell._writer import etree_write_cell
        from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

        column, row = coordinate_from_string(ref)
        cell = WriteOnlyCell(self.worksheet, value)
        cell.row, cell.column = row, column_index_from_string(column)
        elements: list[Any] = []
        etree_write_cell(_Collect(elements), self.worksheet, cell, cell.has_style)
        return tostring(elements[0], encoding="unicode")


class _Collect:
    def __init__(self, into: list[Any]) -> None:
        self.into = into

    def write(self, element: Any) -> None:
        self.into.append(element)


def _xlsx_value(kind: ColumnKind, value: Any) -> Any:
    if value is None:
        return None
    if kind == "list":
        return defuse_formula(join_list(value))
    if kind == "timestamp" and isinstance(value, datetime):
        return utc(value).replace(tzinfo=None)  # Excel has no time zones: the column is UTC
    if isinstance(value, str):
        text = _ILLEGAL_XML.sub("", value)
        return (defuse_formula(text) if kind == "str" else text)[:_MAX_CELL]
    return value
