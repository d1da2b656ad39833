"""The XLSX writer formats the cells itself and splices them into the workbook openpyxl writes
around them: every file in the zip must be what openpyxl's own write-only writer made of the
same sheets, byte for byte (the documentation part that holds the save time aside)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from openpyxl import Workbook, load_workbook

from annotator.exports.columns import (
    Column,
    FacetSpec,
    annotator_sheet_columns,
    disagreement_columns,
    final_dataset_columns,
)
from annotator.exports.writers import XlsxSheet, _cells, _xlsx_value, sheet_title, write_xlsx

FACETS = [
    FacetSpec("stage", "Stage"),
    FacetSpec("symptom", "Symptom", levels=2),
    FacetSpec("fix-pattern", "Fix pattern", kind="multi"),
]
T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
TITLES = [
    "plain",
    " leading and trailing spaces ",
    "tab\tinside, line\nfeed and carriage\r\nreturn",
    "markup <b>&amp;</b> \"quotes\" 'single' > <",
    '=HYPERLINK("http://x")',
    "+1",
    "-1",
    "@SUM(A1)",
    "\tstarts with a tab",
    "\rstarts with a return",
    "#N/A",
    "#DIV/0!",
    "#REF!",
    "=",
    "",
    "bell \x07 and escape \x1b dropped",
    "unicode — ünïcødé 日本語 😀",
    "x" * 40_000,
]


def final_row(i: int) -> dict[str, Any]:
    title = TITLES[i % len(TITLES)]
    return {
        "item_id": i if i % 7 else 10**17 + i,  # past %.16g's precision
        "round": None if i % 3 == 0 else 1 + i % 2,
        "repository": "deepspeedai/DeepSpeed",
        "number": 1000 + i,
        "url": f"https://github.com/deepspeedai/DeepSpeed/issues/{1000 + i}",
        "title": title,
        "stage": ["training", "=cmd", "", None][i % 4],
        "symptom_l1": "hang" if i % 2 else None,
        "symptom_l2": "nccl-timeout" if i % 4 == 1 else None,
        "fix_pattern": [["a", "b"], [], None, ["-neg"]][i % 4],
        "unsure": ["stage"] if i % 5 == 0 else [],
        "decision_source": "majority",
        "decided_at": None if i % 6 == 0 else T0 + timedelta(seconds=i, microseconds=i),
        "reason": None,
        "comment": title if i % 2 else None,
        "confidence": [1, 2, 3, None][i % 4],
    }


def annotator_row(i: int) -> dict[str, Any]:
    row = final_row(i)
    row |= {
        "submitted_at": row["decided_at"],
        "seconds_spent": i * 3,
        "notes": TITLES[-1 - i % len(TITLES)],
    }
    row |= {"stage_unsure": i % 2 == 0, "symptom_unsure": False, "fix_pattern_unsure": True}
    return row


def disagreement_row(i: int) -> dict[str, Any]:
    row = final_row(i)
    row |= {"agreement": [0.5, 1 / 3, float("nan"), None, 1e-20][i % 5], "disagreeing": ["stage"]}
    row |= {"stage_by_alice": "training", "stage_final": None, "fix_pattern_by_bob": ["a"]}
    return row


def old_write_xlsx(sheets: Iterable[XlsxSheet], out: Any) -> dict[str, int]:
    """The writer before: every cell through openpyxl's write-only worksheet."""
    from openpyxl.cell import WriteOnlyCell

    workbook = Workbook(write_only=True)
    taken: set[str] = set()
    counts: dict[str, int] = {}
    for sheet in sheets:
        worksheet = workbook.create_sheet(sheet_title(sheet.title, taken))
        worksheet.append([c.name for c in sheet.columns])

        def cell(kind: Any, value: Any, worksheet: Any = worksheet) -> Any:
            value = _xlsx_value(kind, value)
            if isinstance(value, str) and value.startswith("="):
                text = WriteOnlyCell(worksheet, value)
                text.data_type = "s"
                return text
            return value

        count = 0
        for row in sheet.rows:
            worksheet.append(_cells(row, sheet.columns, cell))
            count += 1
        counts[worksheet.title] = count
    workbook.save(out)
    return counts


def sheets(n: int) -> list[XlsxSheet]:
    annotators = ["alice", "bob"]
    return [
        XlsxSheet("alice", annotator_sheet_columns(FACETS), [annotator_row(i) for i in range(n)]),
        XlsxSheet("bob/2", annotator_sheet_columns(FACETS), [annotator_row(i) for i in range(3)]),
        XlsxSheet("nobody", annotator_sheet_columns(FACETS), []),
        XlsxSheet("Final", final_dataset_columns(FACETS), [final_row(i) for i in range(n)]),
        XlsxSheet(
            "Disagreements",
            disagreement_columns(FACETS, annotators),
            [disagreement_row(i) for i in range(n)],
        ),
    ]


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def both(given: Sequence[XlsxSheet], tmp_path: Path) -> tuple[bytes, bytes, dict[str, int]]:
    new, old = io.BytesIO(), io.BytesIO()
    counts = write_xlsx(given, new, temp_dir=tmp_path)
    assert old_write_xlsx(given, old) == counts
    return new.getvalue(), old.getvalue(), counts


def test_every_part_of_the_workbook_is_what_openpyxl_writes(tmp_path: Path) -> None:
    new, old, counts = both(sheets(60), tmp_path)
    assert counts == {"alice": 60, "bob_2": 3, "nobody": 0, "Final": 60, "Disagreements": 60}
    ours, theirs = members(new), members(old)
    assert list(ours) == list(theirs)
    for name in ours:
        if name != "docProps/core.xml":  # the save time
            assert ours[name] == theirs[name], name
    assert list(tmp_path.iterdir()) == []  # the spool files are removed


def test_values_read_back_as_from_openpyxl(tmp_path: Path) -> None:
    new, old, _ = both(sheets(40), tmp_path)
    for data in (new, old):
        book = load_workbook(io.BytesIO(data))
        assert book.sheetnames == ["alice", "bob_2", "nobody", "Final", "Disagreements"]
    ours, theirs = load_workbook(io.BytesIO(new)), load_workbook(io.BytesIO(old))
    for name in ours.sheetnames:
        mine = [[(c.value, c.data_type) for c in r] for r in ours[name].iter_rows()]
        assert mine == [[(c.value, c.data_type) for c in r] for r in theirs[name].iter_rows()]
    final = list(ours["Final"].iter_rows(values_only=True))
    assert final[3][5].replace("\r", "\n") == TITLES[2].replace("\r", "\n")
    assert final[2][6] == "'=cmd"  # defused formula text
    assert final[2][-4] == datetime(2024, 5, 1, 12, 0, 1, 123000)  # naive UTC, to the ms read


def test_a_sheet_without_a_date_leaves_the_styles_as_openpyxl_does(tmp_path: Path) -> None:
    columns = [Column("n", "int"), Column("text", "str")]
    given = [XlsxSheet("Only", columns, [{"n": i, "text": TITLES[i]} for i in range(5)])]
    new, old, _ = both(given, tmp_path)
    assert members(new)["xl/styles.xml"] == members(old)["xl/styles.xml"]
    assert members(new)["xl/worksheets/sheet1.xml"] == members(old)["xl/worksheets/sheet1.xml"]


def test_other_values_go_through_openpyxl(tmp_path: Path) -> None:
    columns = [Column("value", "float")]
    given = [XlsxSheet("Odd", columns, [{"value": Decimal("1.25")}, {"value": 2.5}])]
    new, old, _ = both(given, tmp_path)
    sheet = "xl/worksheets/sheet1.xml"
    assert members(new)[sheet] == members(old)[sheet]
    aware = [XlsxSheet("Aware", [Column("at", "str")], [{"at": T0}])]
    with pytest.raises(TypeError):
        old_write_xlsx(aware, io.BytesIO())
    with pytest.raises(TypeError):
        write_xlsx(aware, io.BytesIO(), temp_dir=tmp_path)
