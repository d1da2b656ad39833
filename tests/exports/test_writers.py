"""The streaming writers: each format reads back through pandas as a researcher expects it, with
flat memory. Pure code: no database, no Django."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotator.exports.card import AgreementFigure
from annotator.exports.columns import (
    LONG_TABLE_COLUMNS,
    FacetSpec,
    annotator_sheet_columns,
    final_dataset_columns,
)
from annotator.exports.writers import (
    XlsxSheet,
    dataset_card,
    sheet_title,
    write_csv,
    write_json,
    write_jsonl,
    write_parquet,
    write_xlsx,
)

ROOT = Path(__file__).resolve().parents[2]
FACETS = [
    FacetSpec("screening", "Screening"),
    FacetSpec("stage", "Stage"),
    FacetSpec("symptom", "Symptom", levels=2),
    FacetSpec("root-cause", "Root cause"),
    FacetSpec("fix-pattern", "Fix pattern", kind="multi"),
]
FINAL = final_dataset_columns(FACETS)
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def final_row(i: int) -> dict[str, Any]:
    return {
        "item_id": i,
        "round": None if i % 3 == 0 else 1 + i % 2,  # a nullable int
        "repository": "deepspeedai/DeepSpeed",
        "number": 1000 + i,
        "url": f"https://github.com/deepspeedai/DeepSpeed/issues/{1000 + i}",
        "title": f'ZeRO-3 hangs, "quoted", commas; semicolons — #{i}',
        "screening": "relevant",
        "stage": "training-evaluation",
        "symptom_l1": "program-failure",
        "symptom_l2": None if i % 4 == 0 else "hang-timeout",
        "root_cause": "misconfiguration",
        "fix_pattern": []
        if i % 5 == 0
        else ["fix-communication-configuration", "fix-network-setting"][: 1 + i % 2],
        "unsure": ["stage", "symptom"][: i % 3],
        "decision_source": "adjudicated",
        "decided_at": T0 + timedelta(seconds=i),
    }


ROWS = [final_row(i) for i in range(1, 13)]


def test_final_dataset_columns_follow_the_facet_shapes() -> None:
    names = [c.name for c in FINAL]
    assert names == [
        "item_id",
        "round",
        "repository",
        "number",
        "url",
        "title",
        "screening",
        "stage",
        "symptom_l1",
        "symptom_l2",
        "root_cause",
        "fix_pattern",
        "unsure",
        "decision_source",
        "decided_at",
        "reason",
        "comment",
        "confidence",
    ]
    assert {c.name: c.kind for c in FINAL}["fix_pattern"] == "list"
    assert {c.name: c.kind for c in FINAL}["unsure"] == "list"
    assert [c.name for c in LONG_TABLE_COLUMNS][5:] == [
        "row_kind",
        "facet",
        "annotator",
        "annotator_origin",
        "category",
        "category_l1",
        "unsure",
        "codebook_version",
        "submitted_at",
        "seconds_spent",
        "notes",
        "decision_source",
        "reason",
        "comment",
    ]


def test_annotator_sheets_follow_each_facet_with_its_unsure_flag() -> None:
    names = [c.name for c in annotator_sheet_columns(FACETS)]
    assert names[6:] == [
        "screening",
        "screening_unsure",
        "stage",
        "stage_unsure",
        "symptom_l1",
        "symptom_l2",
        "symptom_unsure",
        "root_cause",
        "root_cause_unsure",
        "fix_pattern",
        "fix_pattern_unsure",
        "submitted_at",
        "seconds_spent",
        "notes",
    ]
    assert {c.name: c.kind for c in annotator_sheet_columns(FACETS)}["stage_unsure"] == "bool"


LONG_ROWS = [
    {"item_id": 1, "facet": "symptom", "category": "hang", "unsure": True},
    {"item_id": 1, "facet": "stage", "category": None, "unsure": True},  # unsure, no choice
    {"item_id": 2, "facet": "symptom", "category": "oom", "unsure": False},
]


def test_unsure_reads_back_from_every_format() -> None:
    """The final table's list of unsure facets and the long table's flag, as pandas reads
    each format."""
    readers: dict[str, Callable[[bytes], pd.DataFrame]] = {
        "csv": lambda b: pd.read_csv(io.BytesIO(b), dtype_backend="numpy_nullable"),
        "jsonl": lambda b: pd.read_json(io.BytesIO(b), lines=True),
        "json": lambda b: pd.read_json(io.BytesIO(b)),
        "parquet": lambda b: pd.read_parquet(io.BytesIO(b)),
    }
    writers = {"csv": write_csv, "jsonl": write_jsonl, "json": write_json}
    writers["parquet"] = write_parquet
    wanted = [r["unsure"] for r in ROWS]
    for name, writer in writers.items():
        final, long = io.BytesIO(), io.BytesIO()
        writer(iter(ROWS), FINAL, final)
        writer(iter(LONG_ROWS), LONG_TABLE_COLUMNS, long)
        got = readers[name](final.getvalue())["unsure"].tolist()
        if name == "csv":
            got = [[] if pd.isna(v) else str(v).split(";") for v in got]
        assert [list(v) for v in got] == wanted, name
        flags = readers[name](long.getvalue())
        assert flags["unsure"].tolist() == [True, True, False], name
        assert pd.isna(flags["category"].tolist()[1]), name
    csv_text = io.BytesIO()
    write_csv(iter(LONG_ROWS), LONG_TABLE_COLUMNS, csv_text)
    assert b",true," in csv_text.getvalue() and b",false," in csv_text.getvalue()


def expected_frame() -> pd.DataFrame:
    frame = pd.DataFrame(ROWS)
    frame["round"] = frame["round"].astype("Int64")
    return frame


def test_csv_reads_back_with_pandas() -> None:
    out = io.BytesIO()
    assert write_csv(iter(ROWS), FINAL, out) == len(ROWS)
    out.seek(0)
    frame = pd.read_csv(out, parse_dates=["decided_at"], dtype_backend="numpy_nullable")
    expected = expected_frame()
    assert list(frame.columns) == [c.name for c in FINAL]
    assert frame["item_id"].tolist() == expected["item_id"].tolist()
    assert frame["round"].dtype == "Int64" and frame["round"].isna().sum() == 4
    assert frame["title"].tolist() == expected["title"].tolist()
    assert frame["symptom_l2"].isna().tolist() == expected["symptom_l2"].isna().tolist()
    assert (
        frame["fix_pattern"].fillna("").str.split(";").map(lambda p: [x for x in p if x]).tolist()
        == expected["fix_pattern"].tolist()
    )
    assert (
        str(frame["decided_at"].dtype).startswith("datetime64")
        and str(frame["decided_at"].dt.tz) == "UTC"
    )
    assert frame["decided_at"].tolist() == expected["decided_at"].map(pd.Timestamp).tolist()


def test_csv_leaves_the_file_open_for_the_caller() -> None:
    out = io.BytesIO()
    write_csv(iter(ROWS[:1]), FINAL, out)
    assert not out.closed and out.getvalue().startswith(b"item_id,round,")


@pytest.mark.parametrize("writer", [write_jsonl, write_json], ids=["jsonl", "json"])
def test_json_formats_read_back_with_pandas(writer: Callable[..., int]) -> None:
    out = io.BytesIO()
    writer(iter(ROWS), FINAL, out)
    out.seek(0)
    frame = pd.read_json(out, lines=writer is write_jsonl, dtype_backend="numpy_nullable")
    assert list(frame.columns) == [c.name for c in FINAL]
    assert frame["item_id"].tolist() == list(range(1, 13))
    assert frame["round"].dtype == "Int64"
    assert frame["fix_pattern"].tolist() == [r["fix_pattern"] for r in ROWS]
    assert str(frame["decided_at"].dt.tz) == "UTC"
    assert frame["decided_at"].tolist() == [pd.Timestamp(r["decided_at"]) for r in ROWS]


def test_json_array_is_valid_when_empty_and_keeps_unicode() -> None:
    out = io.BytesIO()
    assert write_json(iter([]), FINAL, out) == 0
    assert json.loads(out.getvalue()) == []
    out = io.BytesIO()
    write_json(iter(ROWS[:1]), FINAL, out)
    assert (
        json.loads(out.getvalue())[0]["title"] == ROWS[0]["title"]
        and "—".encode() in out.getvalue()
    )


def test_parquet_reads_back_with_stable_nullable_types() -> None:
    out = io.BytesIO()
    # The first chunk has no round and no fix pattern at all: the schema must not drift.
    rows = [{**r, "round": None, "fix_pattern": None} if i < 4 else r for i, r in enumerate(ROWS)]
    write_parquet(iter(rows), FINAL, out, chunk_rows=4)
    out.seek(0)
    assert pq.ParquetFile(out).num_row_groups == 3
    out.seek(0)
    frame = pd.read_parquet(out)
    assert str(frame["item_id"].dtype) == "Int64" and str(frame["round"].dtype) == "Int64"
    assert frame["round"].isna().tolist() == [r["round"] is None for r in rows]
    assert pd.api.types.is_string_dtype(frame["title"]) and frame["title"].tolist() == [
        r["title"] for r in rows
    ]
    assert [None if v is None else list(v) for v in frame["fix_pattern"]] == [
        r["fix_pattern"] for r in rows
    ]
    assert str(frame["decided_at"].dtype) == "datetime64[us, UTC]"
    assert frame["decided_at"].tolist() == [pd.Timestamp(r["decided_at"]) for r in rows]
    assert pq.read_schema(io.BytesIO(out.getvalue())).field("fix_pattern").type == pa.list_(
        pa.string()
    )


def test_timestamps_in_other_zones_are_written_in_utc_and_naive_ones_refused() -> None:
    paris = timezone(timedelta(hours=2))
    row = {**ROWS[0], "decided_at": datetime(2024, 5, 1, 14, 0, tzinfo=paris)}
    out = io.BytesIO()
    write_jsonl(iter([row]), FINAL, out)
    assert json.loads(out.getvalue())["decided_at"] == "2024-05-01T12:00:00Z"
    naive = {**ROWS[0], "decided_at": datetime(2024, 5, 1, 12, 0)}
    for writer in (write_csv, write_jsonl, write_parquet):
        with pytest.raises(ValueError, match="naive datetime 2024-05-01T12:00:00"):
            writer(iter([naive]), FINAL, io.BytesIO())


def test_a_list_element_holding_the_separator_is_refused_in_csv() -> None:
    with pytest.raises(ValueError, match="contains ';'"):
        write_csv(iter([{**ROWS[0], "fix_pattern": ["a;b"]}]), FINAL, io.BytesIO())


def test_xlsx_has_a_sheet_per_annotator_plus_final() -> None:
    sheet_columns = annotator_sheet_columns(FACETS)
    per_annotator = [
        {**r, "submitted_at": r["decided_at"], "seconds_spent": 40 + i} for i, r in enumerate(ROWS)
    ]
    hostile = {**ROWS[0], "title": '=HYPERLINK("http://x")\x07 bell'}
    out = io.BytesIO()
    counts = write_xlsx(
        [
            XlsxSheet("alice", sheet_columns, iter(per_annotator)),
            XlsxSheet("bob/2", sheet_columns, iter(per_annotator[:5])),
            XlsxSheet("Final", FINAL, iter([*ROWS, hostile])),
        ],
        out,
    )
    assert counts == {"alice": 12, "bob_2": 5, "Final": 13}
    out.seek(0)
    sheets = pd.read_excel(out, sheet_name=None)
    assert list(sheets) == ["alice", "bob_2", "Final"]
    final = sheets["Final"]
    assert list(final.columns) == [c.name for c in FINAL]
    assert final["item_id"].dtype == "int64"
    assert final["fix_pattern"].fillna("").tolist()[:12] == [
        ";".join(r["fix_pattern"]) for r in ROWS
    ]
    assert final["decided_at"].tolist()[:12] == [
        pd.Timestamp(r["decided_at"]).tz_localize(None) for r in ROWS
    ]
    assert final["title"].iloc[-1] == '\'=HYPERLINK("http://x") bell'  # text, not a formula
    assert sheets["alice"]["seconds_spent"].tolist() == list(range(40, 52))


def test_sheet_titles_are_valid_and_unique_for_excel() -> None:
    taken: set[str] = set()
    assert sheet_title("final", {"final"}) == "final (2)"
    assert sheet_title("a" * 40, taken) == "a" * 31
    assert sheet_title("a" * 40, taken) == "a" * 27 + " (2)"
    assert sheet_title("x[1]:?*", taken) == "x_1____"


def test_dataset_card_names_codebook_selection_agreement_and_columns() -> None:
    card = dataset_card(
        title="Distributed DL bugs — round 1",
        codebook_name="Distributed deep-learning bugs",
        codebook_version=3,
        selection_query="label:bug is:closed | nccl",
        counts={"issues matched": 1204, "items sampled": 300, "items adjudicated": 41},
        agreement=[
            AgreementFigure("stage", "Cohen's kappa", 0.652303, 0.5, 0.8, 54, 50, "q = 4"),
            AgreementFigure("fix-pattern", "Krippendorff's alpha", None),
        ],
        exported_at=datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))),
        tables={"final dataset": FINAL, "long table": LONG_TABLE_COLUMNS},
        categories={"stage": {"training-evaluation": "Training & evaluation"}},
    )
    assert card.startswith("# Distributed DL bugs — round 1\n")
    assert "- Codebook: Distributed deep-learning bugs, version 3" in card
    assert "- Exported at: 2024-05-01T12:00:00Z" in card
    assert "`label:bug is:closed | nccl`" in card
    assert "| items sampled | 300 |" in card
    assert "| stage | Cohen's kappa | 0.652 | 0.500 – 0.800 | 50 | 54 | q = 4 |" in card  # noqa: RUF001
    assert "| fix-pattern | Krippendorff's alpha | undefined |  |  |  |  |" in card
    assert "| symptom_l2 | str | Symptom: category code at level 2 |" in card
    assert "| training-evaluation | Training & evaluation |" in card
    assert "a leading `'` added so spreadsheet programs do not run it as a formula" in card


FORMULA_TITLES = ['=HYPERLINK("http://x","y")', "+1", "-2 sum", "@cmd", "\tTAB", "\rCR"]


def formula_rows() -> list[dict[str, Any]]:
    """Rows titled as a spreadsheet would read formulas, with a negative number (a str `-` code
    too) beside them: text cells are defused in CSV and XLSX, numbers stay numbers."""
    return [
        {**ROWS[0], "item_id": -1 - i, "number": -5, "title": title, "stage": "-x"}
        for i, title in enumerate(FORMULA_TITLES)
    ]


def test_csv_prefixes_formula_text_with_a_quote_and_keeps_numbers_numeric() -> None:
    out = io.BytesIO()
    write_csv(iter(formula_rows()), FINAL, out)
    frame = pd.read_csv(io.BytesIO(out.getvalue()), keep_default_na=False)
    assert frame["title"].tolist() == ["'" + t for t in FORMULA_TITLES]
    assert set(frame["stage"]) == {"'-x"}
    assert frame["item_id"].dtype == "int64"
    assert frame["item_id"].tolist() == [-1 - i for i in range(len(FORMULA_TITLES))]
    assert set(frame["number"]) == {-5}
    assert frame["url"].iloc[0].startswith("https://")  # safe text is left as it is


def test_xlsx_prefixes_formula_text_with_a_quote_and_keeps_numbers_numeric() -> None:
    from openpyxl import load_workbook

    out = io.BytesIO()
    write_xlsx([XlsxSheet("Final", FINAL, iter(formula_rows()))], out)
    out.seek(0)
    sheet = load_workbook(out)["Final"]
    header = [c.value for c in sheet[1]]
    rows = [dict(zip(header, (c for c in r), strict=True)) for r in sheet.iter_rows(min_row=2)]
    # A carriage return reads back as a line feed or as itself, depending on the XML parser
    # openpyxl uses (the standard library's or lxml's); the quote prefix is what matters here.
    titles = [r["title"].value.replace("\r", "\n") for r in rows]
    assert titles == ["'" + t.replace("\r", "\n") for t in FORMULA_TITLES]
    assert {r["title"].data_type for r in rows} == {"s"}
    assert {r["stage"].value for r in rows} == {"'-x"}
    assert [r["item_id"].value for r in rows] == [-1 - i for i in range(len(FORMULA_TITLES))]
    assert {r["number"].data_type for r in rows} == {"n"}


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet"])
def test_json_and_parquet_keep_formula_text_raw(fmt: str) -> None:
    out = io.BytesIO()
    writer = {"json": write_json, "jsonl": write_jsonl, "parquet": write_parquet}[fmt]
    writer(iter(formula_rows()), FINAL, out)
    out.seek(0)
    frame = pd.read_parquet(out) if fmt == "parquet" else pd.read_json(out, lines=fmt == "jsonl")
    assert frame["title"].tolist() == FORMULA_TITLES
    assert set(frame["stage"]) == {"-x"}
    assert set(frame["number"]) == {-5}


class CountingSink(io.RawIOBase):
    """A write-only file that keeps nothing, so memory measures the writer alone."""

    def __init__(self) -> None:
        self.size = 0
        self.arrow_peak = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.size += len(data)
        self.arrow_peak = max(self.arrow_peak, pa.total_allocated_bytes())
        return len(data)


def long_rows(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {
            "item_id": i // 8,
            "round": 1,
            "repository": "hpcaitech/ColossalAI",
            "number": i // 8,
            "url": f"https://github.com/hpcaitech/ColossalAI/issues/{i // 8}",
            "facet": "symptom",
            "annotator": ("alice", "bob")[i % 2],
            "category": "hang-timeout",
            "category_l1": "program-failure",
            "unsure": i % 7 == 0,
            "codebook_version": 1,
            "submitted_at": T0 + timedelta(seconds=i),
            "seconds_spent": i % 300,
        }


def peak_while_writing(writer: Callable[..., int], rows: int) -> tuple[int, CountingSink]:
    sink = CountingSink()
    tracemalloc.start()
    try:
        assert writer(long_rows(rows), LONG_TABLE_COLUMNS, sink) == rows
        return tracemalloc.get_traced_memory()[1], sink
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "writer", [write_csv, write_jsonl, write_parquet], ids=["csv", "jsonl", "parquet"]
)
def test_memory_stays_flat_over_200000_rows(writer: Callable[..., int]) -> None:
    small, _ = peak_while_writing(writer, 20_000)
    large, sink = peak_while_writing(writer, 200_000)
    assert sink.size > 10_000_000 or writer is write_parquet
    assert large < 4 * 1024 * 1024, f"tracemalloc peak {large / 2**20:.1f} MiB"
    assert large < small * 1.5 + 512 * 1024, (small, large)  # does not grow with the row count
    assert sink.arrow_peak < 32 * 1024 * 1024  # Arrow's own pool, unseen by tracemalloc


def test_importing_the_pure_cores_loads_no_django() -> None:
    code = (
        "import sys, io\n"
        "import annotator.exports.writers as w, annotator.exports.spreadsheets as s\n"
        "from annotator.exports.columns import Column\n"
        "w.write_parquet(iter([{'a': 1}]), [Column('a', 'int')], io.BytesIO())\n"
        "w.write_xlsx([w.XlsxSheet('Final', [Column('a', 'int')], [{'a': 1}])], io.BytesIO())\n"
        "s.normalise('Hang & Timeout')\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
