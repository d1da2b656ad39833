"""Prior labels in: read earlier labeling rounds from XLSX workbooks (pure: no Django, no DB).

The layout is the TOSEM 2023 one (Liu, Gu et al.; tests/exports/data/tosem23/): one sheet per
annotator (`label1`, `label2`) plus a `Final` sheet, a header row, then one row per labelled
item keyed by its issue URL (`Link`). The flow the import wizard follows:

1. `inspect_workbook(path)` → sheets, their columns and row counts, a guess at the key column,
   and the blank and duplicate keys it will meet, for the user to map sheets and columns.
2. `read_rounds(path, key_column=…, sheet_to_annotator=…, column_to_facet=…, final_sheet=…)`
   → `PriorLabels`: per annotator and for the final sheet, key → facet → raw values.
3. `match_values(labels.values("stage"), categories)` → `Matching`: raw value → category code
   for what matched after `normalise`, and the rest with counts and places, to map or propose.

Bad input raises `SpreadsheetError`, whose message names the sheet, row and column.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from annotator.exports.matching import (
    Matching,
    Occurrence,
    Unmatched,
    match_values,
    normalise,
)
from annotator.uploads import UploadRefused, ZipLimits, check_xlsx

__all__ = [
    "DUPLICATE_RULES",
    "Matching",
    "Occurrence",
    "PriorLabels",
    "SheetInfo",
    "SkippedRow",
    "SpreadsheetError",
    "Unmatched",
    "WorkbookInfo",
    "inspect_workbook",
    "match_values",
    "normalise",
    "read_rounds",
]

# Limits a real labeling workbook stays far below (the TOSEM ones: ~30 KB, ~120 rows).
MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_COMPRESSION_RATIO = 200
MAX_ROWS = 200_000
MAX_COLUMNS = 1_000
# Cells in all sheets, counted in the XML before openpyxl parses any (annotator/uploads.py). A
# ceiling for any workbook read here; uploads are held to settings.WORKBOOK_MAX_CELLS (50,000
# by default), checked on upload, so that each wizard step reads an upload in seconds.
MAX_CELLS = 2_000_000
KEY_HEADERS = ("link", "url", "issue url", "html url", "issue link", "issue")


class SpreadsheetError(ValueError):
    """Bad input; `sheet`, `row` (1-based, as Excel shows it) and `column` say where."""

    def __init__(
        self,
        message: str,
        *,
        sheet: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        where = [f"sheet {sheet!r}"] if sheet is not None else []
        where += [f"row {row}"] if row is not None else []
        where += [f"column {column!r}"] if column is not None else []
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.sheet, self.row, self.column = sheet, row, column


@dataclass(frozen=True)
class SheetInfo:
    name: str
    columns: tuple[str, ...]
    rows: int  # data rows that are not entirely blank
    key_column: str | None
    blank_keys: tuple[int, ...]  # rows with values but no key
    duplicate_keys: tuple[str, ...]


@dataclass(frozen=True)
class WorkbookInfo:
    sheets: tuple[SheetInfo, ...]

    def sheet(self, name: str) -> SheetInfo:
        return next(s for s in self.sheets if s.name == name)


@dataclass(frozen=True)
class SkippedRow:
    """A row left out of the labels: `key` is None for a row with values but no key."""

    sheet: str
    row: int
    reason: str
    key: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"sheet": self.sheet, "row": self.row, "key": self.key, "reason": self.reason}


# What to do with a key repeated in a sheet: keep its first row, its last, or drop them all.
DUPLICATE_RULES = ("first", "last", "drop")


Labels = dict[str, dict[str, list[str]]]  # key → facet → raw values


@dataclass
class PriorLabels:
    """What a workbook holds: raw values as written (multi-valued cells split), per rater."""

    annotators: dict[str, Labels]
    final: Labels | None
    skipped: list[SkippedRow] = field(default_factory=list)
    occurrences: dict[str, dict[str, list[Occurrence]]] = field(default_factory=dict)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # sheet → key → row number
    # Filled by the Label Studio and doccano readers (interop.py), empty for workbooks:
    seconds: dict[str, dict[str, int]] = field(default_factory=dict)  # annotator → key → s
    sources: dict[str, str] = field(default_factory=dict)  # annotator id in the file → name
    not_labels: dict[str, int] = field(default_factory=dict)  # e.g. cancelled_annotations → n

    def values(self, facet: str) -> dict[str, list[Occurrence]]:
        """Each raw value of `facet` in any sheet → where it occurs (input to match_values)."""
        return self.occurrences.get(facet, {})

    def final_only(self, final_sheet: str | None) -> list[tuple[str, int]]:
        """(key, row) of the final sheet's keys that no annotator's sheet labels, in sheet
        order: a decision with no annotations behind it, which the import reports and leaves
        out."""
        rated = {key for labels in self.annotators.values() for key in labels}
        rows = self.rows.get(final_sheet or "", {})
        return [(key, rows[key]) for key in (self.final or {}) if key not in rated]


def _header(value: object) -> str:
    return re.sub(r"\s+", " ", str(value)).strip().casefold()


def _raw(value: Any) -> str | None:
    """A cell as text: None for blank, 1 for 1.0, ISO for dates, stripped strings."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    text = str(value).strip()
    return text or None


def _check_archive(path: Path) -> None:
    """Refuse what is not an XLSX, inflates beyond the limits (zip bombs), has unsafe member
    names or declares XML entities (annotator/uploads.py), before openpyxl parses anything."""
    limits = ZipLimits(
        max_inflated=MAX_UNCOMPRESSED_BYTES, max_ratio=MAX_COMPRESSION_RATIO, max_cells=MAX_CELLS
    )
    try:
        check_xlsx(path, path.name, limits)
    except UploadRefused as error:
        raise SpreadsheetError(str(error)) from None


def _open(path: str | Path) -> Any:
    from openpyxl import load_workbook

    path = Path(path)
    if not path.is_file():
        raise SpreadsheetError(f"{path} does not exist")
    _check_archive(path)
    try:
        return load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises KeyError, ValueError, zip and XML errors alike
        raise SpreadsheetError(f"{path.name} cannot be read as .xlsx: {error}") from None


def _rows(worksheet: Any) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """(row number, values) of a sheet, refusing sheets past MAX_ROWS / MAX_COLUMNS."""
    for number, values in enumerate(worksheet.iter_rows(values_only=True), start=1):
        if number > MAX_ROWS + 1:
            raise SpreadsheetError(f"more than {MAX_ROWS:,} rows", sheet=worksheet.title)
        if len(values) > MAX_COLUMNS:
            raise SpreadsheetError(
                f"{len(values):,} columns, over the limit of {MAX_COLUMNS:,}",
                sheet=worksheet.title,
                row=number,
            )
        yield number, values


def _columns(header: Sequence[Any]) -> dict[str, int]:
    """Normalised header → index; blank headers are unused columns."""
    columns: dict[str, int] = {}
    for index, value in enumerate(header):
        if value is not None and str(value).strip():
            columns.setdefault(_header(value), index)
    return columns


def _guess_key(header: Sequence[Any], body: list[tuple[Any, ...]]) -> str | None:
    named = [h for h in header if h is not None and _header(h) in KEY_HEADERS]
    if named:
        return str(named[0]).strip()
    for index, name in enumerate(header):
        values = [_raw(r[index]) for r in body if index < len(r)]
        urls = [v for v in values if v and re.match(r"https?://", v)]
        if name is not None and body and len(urls) >= 0.9 * len(body):
            return str(name).strip()
    return None


def _sheet_info(worksheet: Any) -> SheetInfo:
    rows = [values for _, values in _rows(worksheet)]
    header, body = (rows[0] if rows else ()), [r for r in rows[1:] if any(_raw(v) for v in r)]
    key = _guess_key(header, body)
    blank: list[int] = []
    keys: Counter[str] = Counter()
    if key is not None:
        index = _columns(header)[_header(key)]
        for number, values in enumerate(rows[1:], start=2):
            cell = _raw(values[index]) if index < len(values) else None
            if cell is None and any(_raw(v) for v in values):
                blank.append(number)
            elif cell is not None and _has_values(values, index):
                keys[cell] += 1
    columns = tuple(str(h).strip() for h in header if h is not None and str(h).strip())
    duplicates = tuple(k for k, n in keys.items() if n > 1)
    return SheetInfo(worksheet.title, columns, len(body), key, tuple(blank), duplicates)


def inspect_workbook(path: str | Path) -> WorkbookInfo:
    """Sheets, columns, non-blank row counts, a key-column guess and the key problems ahead."""
    workbook = _open(path)
    try:
        return WorkbookInfo(tuple(_sheet_info(ws) for ws in workbook.worksheets))
    finally:
        workbook.close()


def read_rounds(
    path: str | Path,
    *,
    key_column: str,
    sheet_to_annotator: Mapping[str, str],
    column_to_facet: Mapping[str, str],
    final_sheet: str | None = None,
    final_column_to_facet: Mapping[str, str] | None = None,
    separators: Mapping[str, Sequence[str]] | None = None,
    skip_bad_rows: bool = False,
    duplicates: str | None = None,
) -> PriorLabels:
    """Read the raw labels of each annotator's sheet and of the final sheet.

    Headers are compared trimmed and case-insensitively ("Issue Type " is "issue type").
    `final_column_to_facet` names the final sheet's columns when they differ ("Stage Final");
    by default it is `column_to_facet`. Several columns may feed one facet (values appended in
    mapping order). `separators` splits the cells of multi-valued facets, e.g.
    `{"fix-pattern": [" & ", " / "]}` (spaced, so "fix build/install configuration" stays whole).
    Rows with no value at all are ignored; so is a row holding only its key (listed in
    `PriorLabels.skipped`). A row with values but no key raises, unless `skip_bad_rows`, which
    leaves it out and lists it. A key repeated in a sheet follows `duplicates`, per sheet:
    "first" keeps its first row, "last" its last, "drop" none; every row left out is listed.
    Without a rule a repeated key raises, or with `skip_bad_rows` drops every row of the key.
    """
    if duplicates is not None and duplicates not in DUPLICATE_RULES:
        raise SpreadsheetError(
            f"duplicates must be one of {', '.join(DUPLICATE_RULES)}, not {duplicates!r}"
        )
    workbook = _open(path)
    try:
        sheets = {ws.title: ws for ws in workbook.worksheets}
        wanted = [*sheet_to_annotator, *([final_sheet] if final_sheet else [])]
        for name in wanted:
            if name not in sheets:
                raise SpreadsheetError(
                    f"no such sheet; the workbook has {sorted(sheets)}", sheet=name
                )
        result = PriorLabels(annotators={}, final=None)
        reader = _SheetReader(key_column, separators or {}, skip_bad_rows, duplicates, result)
        for name, annotator in sheet_to_annotator.items():
            result.annotators[annotator] = reader.read(sheets[name], column_to_facet)
        if final_sheet:
            result.final = reader.read(
                sheets[final_sheet], final_column_to_facet or column_to_facet
            )
        return result
    finally:
        workbook.close()


def _has_values(values: Sequence[Any], key_index: int) -> bool:
    """Whether a row holds anything besides its key (a row of the key alone counts as empty)."""
    return any(_raw(v) for i, v in enumerate(values) if i != key_index)


Row = tuple[int, Sequence[Any]]


@dataclass
class _SheetReader:
    key_column: str
    separators: Mapping[str, Sequence[str]]
    skip_bad_rows: bool
    duplicates: str | None
    result: PriorLabels

    def read(self, worksheet: Any, column_to_facet: Mapping[str, str]) -> Labels:
        sheet = worksheet.title
        rows = _rows(worksheet)
        _, header = next(rows, (1, ()))
        key_index, mapped = self._locate(sheet, header, column_to_facet)
        by_key: dict[str, list[Row]] = {}
        skipped: list[SkippedRow] = []
        for number, values in rows:
            if not any(_raw(v) for v in values):
                continue
            key = _raw(values[key_index]) if key_index < len(values) else None
            if key is None:
                self._bad(sheet, number, "has values but no key", self.key_column)
                skipped.append(SkippedRow(sheet, number, "has values but no key"))
            elif not _has_values(values, key_index):
                skipped.append(SkippedRow(sheet, number, "holds only the key", key))
            else:
                by_key.setdefault(key, []).append((number, values))
        labels: Labels = {}
        numbers: dict[str, int] = {}
        for key, found in by_key.items():
            kept = self._keep(sheet, key, found, skipped)
            if kept is not None:
                numbers[key] = kept[0]
                labels[key] = self._cells(sheet, kept[0], kept[1], mapped)
        self.result.skipped += sorted(skipped, key=lambda s: s.row)
        self.result.rows[sheet] = numbers
        return labels

    def _keep(
        self, sheet: str, key: str, found: list[Row], skipped: list[SkippedRow]
    ) -> Row | None:
        """The row kept of a key's rows, by the duplicates rule; the others go to `skipped`."""
        if len(found) == 1:
            return found[0]
        numbers = [n for n, _ in found]
        rule = self.duplicates
        if rule is None and not self.skip_bad_rows:
            raise SpreadsheetError(
                f"repeats key {key!r} of row {numbers[0]} (choose what to keep of a repeated "
                'key: "duplicates": "first", "last" or "drop")',
                sheet=sheet,
                row=numbers[1],
                column=self.key_column,
            )
        listed = ", ".join(map(str, numbers))
        if rule == "first":
            why = f"repeats the key of row {numbers[0]}; the first row is kept (duplicates: first)"
            skipped += [SkippedRow(sheet, n, why, key) for n in numbers[1:]]
            return found[0]
        if rule == "last":
            why = f"key repeated at row {numbers[-1]}; the last row is kept (duplicates: last)"
            skipped += [SkippedRow(sheet, n, why, key) for n in numbers[:-1]]
            return found[-1]
        why = f"key repeated in rows {listed}; every row dropped (duplicates: drop)"
        skipped += [SkippedRow(sheet, n, why, key) for n in numbers]
        return None

    def _locate(
        self, sheet: str, header: Sequence[Any], column_to_facet: Mapping[str, str]
    ) -> tuple[int, list[tuple[int, str, str]]]:
        columns = _columns(header)
        found = sorted(str(h).strip() for h in header if h is not None and str(h).strip())

        def index(name: str) -> int:
            if _header(name) not in columns:
                raise SpreadsheetError(
                    f"no such column; the sheet has {found}", sheet=sheet, column=name
                )
            return columns[_header(name)]

        key_index = index(self.key_column)
        return key_index, [(index(c), c, facet) for c, facet in column_to_facet.items()]

    def _cells(
        self, sheet: str, number: int, values: Sequence[Any], mapped: list[tuple[int, str, str]]
    ) -> dict[str, list[str]]:
        labels: dict[str, list[str]] = {}
        for index, column, facet in mapped:
            raw = _raw(values[index]) if index < len(values) else None
            parts = _split(raw, self.separators.get(facet, ())) if raw else []
            labels.setdefault(facet, []).extend(parts)
            for part in parts:
                where = self.result.occurrences.setdefault(facet, {}).setdefault(part, [])
                where.append(Occurrence(sheet, number, column))
        return labels

    def _bad(self, sheet: str, row: int, reason: str, column: str) -> None:
        if not self.skip_bad_rows:
            raise SpreadsheetError(
                f"{reason} (pass skip_bad_rows to leave it out)",
                sheet=sheet,
                row=row,
                column=column,
            )


def _split(raw: str, separators: Sequence[str]) -> list[str]:
    parts = [raw]
    for separator in separators:
        parts = [piece.strip() for part in parts for piece in part.split(separator)]
    return [p for p in parts if p]
