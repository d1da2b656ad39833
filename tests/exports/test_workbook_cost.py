"""Prior-label workbooks are read inside the request: past the cell limit they are refused on
upload; under it, inspect counts what an independent count of the sheets does."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from openpyxl import Workbook, load_workbook
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.exports.spreadsheets import inspect_workbook
from annotator.uploads import UploadRefused, ZipLimits, check_xlsx
from tests.factories import UserFactory

INSPECT = "/api/prior-labels/inspect/"
HEADER = ["Link", "Stage", "Memo"]


def workbook(path: Path, rows: int) -> Path:
    """label1 and label2 of `rows` rows (a blank row, a row without key and a repeated key in
    label2), and Final holding no URL header (the key is guessed from the values)."""
    book = Workbook(write_only=True)
    for name in ("label1", "label2"):
        sheet = book.create_sheet(name)
        sheet.append(HEADER)
        for n in range(rows):
            sheet.append([f"https://github.com/o/r/issues/{n}", f"stage {n % 5}", f"m{n}"])
        if name == "label2":
            sheet.append([None, None, None])
            sheet.append([None, "training", "no key"])
            sheet.append(["https://github.com/o/r/issues/3", "training", "again"])
    final = book.create_sheet("Final")
    final.append(["Where", "Stage Final"])
    for n in range(rows):
        final.append([f"https://github.com/o/r/issues/{n}", "training"])
    book.save(path)
    return path


def counted(path: Path) -> dict[str, int]:
    """Non-blank data rows per sheet, counted independently of the inspect code."""
    book = load_workbook(path, read_only=True)
    counts = {}
    for sheet in book.worksheets:
        rows = list(sheet.iter_rows(values_only=True))[1:]
        counts[sheet.title] = sum(1 for r in rows if any(v not in (None, "") for v in r))
    book.close()
    return counts


def test_inspect_of_a_large_workbook_gives_sheets_columns_counts_and_key_problems(
    tmp_path: Path,
) -> None:
    path = workbook(tmp_path / "large.xlsx", 5_000)
    info = inspect_workbook(path)
    assert [s.name for s in info.sheets] == ["label1", "label2", "Final"]
    assert {s.name: s.rows for s in info.sheets} == counted(path)
    assert {s.name: s.rows for s in info.sheets} == {"label1": 5000, "label2": 5002, "Final": 5000}
    label1, label2, final = info.sheets
    assert label1.columns == ("Link", "Stage", "Memo") and label1.key_column == "Link"
    assert label1.blank_keys == () and label1.duplicate_keys == ()
    assert label2.blank_keys == (5003,)
    assert label2.duplicate_keys == ("https://github.com/o/r/issues/3",)
    assert final.columns == ("Where", "Stage Final") and final.key_column == "Where"


def test_the_cell_count_before_parsing_matches_the_cells(tmp_path: Path) -> None:
    path = workbook(tmp_path / "cells.xlsx", 100)
    cell = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}c"
    with zipfile.ZipFile(path) as archive:
        sheets = [n for n in archive.namelist() if n.startswith("xl/worksheets/sheet")]
        cells = sum(
            len(ElementTree.fromstring(archive.read(n)).findall(f".//{cell}")) for n in sheets
        )
    assert cells == 3 * 101 + 3 * 101 + 2 + 3 + 2 * 101  # blank cells are not written
    check_xlsx(path, "cells.xlsx", ZipLimits(max_cells=cells))
    with pytest.raises(UploadRefused) as caught:
        check_xlsx(path, "cells.xlsx", ZipLimits(max_cells=cells - 1))
    assert str(caught.value).startswith(f"cells.xlsx holds more than {cells - 1:,} cells")


@pytest.mark.django_db
def test_an_upload_past_the_cell_limit_is_refused_naming_file_and_limit(
    tmp_path: Path, settings
) -> None:
    settings.WORKBOOK_MAX_CELLS = 1_000
    user = UserFactory(username="owner")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='t')[1]}")
    data = workbook(tmp_path / "round.xlsx", 400).read_bytes()
    upload = io.BytesIO(data)
    upload.name = "round.xlsx"
    response = client.post(INSPECT, {"file": upload}, format="multipart")
    assert response.status_code == 400
    assert "round.xlsx holds more than 1,000 cells" in response.json()["file"][0]

    settings.WORKBOOK_MAX_CELLS = 50_000
    again = io.BytesIO(data)
    again.name = "round.xlsx"
    response = client.post(INSPECT, {"file": again}, format="multipart")
    assert response.status_code == 200, response.content
    assert [s["rows"] for s in response.json()["sheets"]] == [400, 402, 400]
