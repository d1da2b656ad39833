"""Prior labels in, on the real TOSEM 2023 rounds (tests/exports/data/tosem23/) and on every kind
of bad input. Pure code: no database."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from openpyxl import Workbook

from annotator.exports import spreadsheets
from annotator.exports.spreadsheets import (
    Occurrence,
    SpreadsheetError,
    inspect_workbook,
    match_values,
    normalise,
    read_rounds,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "tosem23"
ROUND1 = DATA / "reliability_analysis_round1.xlsx"
SEED = ROOT / "taxonomy_app" / "seed" / "distributed_dl_bugs.yaml"
URL_656 = "https://github.com/horovod/horovod/issues/656"

# Round-1 columns (rater sheets) → seed facets; the Final sheet suffixes them with " Final".
COLUMNS = {
    "Issue Type": "screening",
    "Distributed-specified": "distributed",
    "Stage": "stage",
    "Leaf Category": "symptom",
    "Fix Pattern": "fix-pattern",
}
FINAL_COLUMNS = {c if c == "Issue Type" else f"{c} Final": f for c, f in COLUMNS.items()}
RATERS = {"label1": "rater1", "label2": "rater2"}


def read_round1(**options: Any) -> spreadsheets.PriorLabels:
    return read_rounds(
        ROUND1,
        key_column="Link",
        sheet_to_annotator=RATERS,
        column_to_facet=COLUMNS,
        final_sheet="Final",
        final_column_to_facet=FINAL_COLUMNS,
        **options,
    )


def seed_categories() -> dict[str, dict[str, list[str]]]:
    """facet key → category code → [name], read as plain YAML (taxonomy_app is not imported)."""
    seed = yaml.safe_load(SEED.read_text())
    return {f["key"]: {c["code"]: [c["name"]] for c in f["categories"]} for f in seed["facets"]}


# --- what round 1 looks like -------------------------------------------------------------------


def test_inspect_round1_shows_sheets_columns_key_and_its_problems() -> None:
    info = inspect_workbook(ROUND1)
    assert [s.name for s in info.sheets] == ["label1", "label2", "Final"]
    label1 = info.sheet("label1")
    assert label1.columns == (
        "Link",
        "Issue Type",
        "How-to topic",
        "How-to sub-topic",
        "Distributed-specified",
        "Stage",
        "Type",
        "Leaf Category",
        "Fix Pattern",
        "Memo",
    )
    assert info.sheet("Final").columns[5] == "Stage Final"
    assert [(s.rows, s.key_column, s.blank_keys) for s in info.sheets] == [
        (111, "Link", (20, 21)),
        (110, "Link", (16,)),
        (111, "Link", (16, 101)),
    ]
    assert all(s.duplicate_keys == (URL_656,) for s in info.sheets)


def test_round1_refuses_a_row_without_key_unless_told_to_skip() -> None:
    with pytest.raises(SpreadsheetError) as error:
        read_round1()
    assert str(error.value) == (
        "sheet 'label1', row 20, column 'Link': has values but no key "
        "(pass skip_bad_rows to leave it out)"
    )
    assert (error.value.sheet, error.value.row, error.value.column) == ("label1", 20, "Link")


def test_round1_reads_107_keyed_items_per_sheet_when_skipping_bad_rows() -> None:
    labels = read_round1(skip_bad_rows=True, separators={"fix-pattern": [" & ", " / "]})
    assert sorted(labels.annotators) == ["rater1", "rater2"]
    assert [len(labels.annotators[a]) for a in ("rater1", "rater2")] == [107, 107]
    assert labels.final is not None and len(labels.final) == 107
    assert URL_656 not in labels.annotators["rater1"]
    skipped = {(s.sheet, s.row) for s in labels.skipped}
    assert skipped == {
        ("label1", 20),
        ("label1", 21),
        ("label1", 50),
        ("label1", 51),
        ("label2", 16),
        ("label2", 49),
        ("label2", 50),
        ("Final", 16),
        ("Final", 101),
        ("Final", 49),
        ("Final", 50),
    }
    item = "https://github.com/horovod/horovod/issues/111"
    assert labels.annotators["rater1"][item] == {
        "screening": ["fault"],
        "distributed": ["1"],
        "stage": ["Communication setup"],
        "symptom": ["Hang & Timeout"],
        "fix-pattern": ["fix dependency version"],
    }
    assert labels.annotators["rater2"][item]["symptom"] == ["hang and timeout"]
    # Multi-valued cells are split on the spaced separators only.
    finals = [v for row in labels.final.values() for v in row["fix-pattern"]]
    assert "fix build/install configuration" in finals and "fix dependency path" in finals
    assert "fix network setting & fix communication configuration" not in finals
    assert labels.values("symptom")["Hang & Timeout"][0] == Occurrence("label1", 3, "Leaf Category")


# How many distinct raw values of round 1 (all three sheets) the normaliser maps onto the seed
# codebook's category names and codes alone, with no synonyms: (matched, distinct, matched cells,
# cells). Screening ("fault", "how-to question") and distributed-specific (1 / 0) need the user's
# mapping; the rest are typos ("fix netowrk setting"), PENDING, or labels the seed lacks.
SEED_MATCHES = {
    "screening": (0, 2, 0, 321),
    "distributed": (0, 2, 0, 173),
    "stage": (8, 9, 169, 172),
    "symptom": (24, 31, 145, 169),
    "fix-pattern": (15, 30, 139, 175),
}


def test_normaliser_maps_most_round1_values_onto_seed_category_names() -> None:
    labels = read_round1(skip_bad_rows=True, separators={"fix-pattern": [" & ", " / "]})
    categories = seed_categories()
    found = {}
    for facet in COLUMNS.values():
        values = labels.values(facet)
        matching = match_values(values, categories[facet])
        cells = sum(len(w) for w in values.values())
        matched_cells = sum(len(values[v]) for v in matching.matched)
        found[facet] = (matching.matched_count, len(values), matched_cells, cells)
    assert found == SEED_MATCHES
    symptom = match_values(labels.values("symptom"), categories["symptom"])
    assert (
        symptom.matched["Hang & Timeout"] == symptom.matched["hang and timeout"] == "hang-timeout"
    )
    assert symptom.matched["installation/build failure"] == "installation-build-failure"
    top = symptom.unmatched[0]
    assert (top.value, top.count) == ("PENDING", 11)
    hang = next(u for u in symptom.unmatched if u.value == "hang")
    assert hang.suggestions == ("hang-timeout",) and hang.count == 5
    fix = match_values(labels.values("fix-pattern"), categories["fix-pattern"])
    typo = next(u for u in fix.unmatched if u.value == "fix netowrk setting")
    assert typo.suggestions[0] == "fix-network-setting"
    assert typo.occurrences == (Occurrence("label1", 49, "Fix Pattern"),)


def test_synonyms_map_the_rest_of_screening_and_distributed() -> None:
    labels = read_round1(skip_bad_rows=True)
    screening = match_values(
        labels.values("screening"), {"relevant": ["fault"], "question": ["how-to question"]}
    )
    distributed = match_values(labels.values("distributed"), {"yes": ["1"], "no": ["0"]})
    assert screening.unmatched == distributed.unmatched == ()
    assert distributed.matched == {"1": "yes", "0": "no"}


# --- agreement of round 1, computed independently of the import -------------------------------

# Cohen's kappa between label1 and label2 of round 1, per column, on the 107 links present once
# in both sheets and the units where both raters filled the cell. "raw": the cell text as typed
# (trimmed); "folded": case-folded, "&" read as "and", spacing collapsed — what an import that
# maps every spelling of a category to that category yields. Multi-valued fix patterns are
# compared as whole cells. The later test "imported round agreement matches the sheets" compares
# against these.
ROUND1_KAPPA = {  # column: (units, raw kappa, folded kappa)
    "Issue Type": (107, 0.868435, 0.868435),
    "How-to topic": (46, 0.349823, 0.498911),
    "How-to sub-topic": (22, 0.469298, 0.608018),
    "Distributed-specified": (54, 0.780488, 0.780488),
    "Stage": (54, 0.371850, 0.652303),
    "Type": (18, 0.424000, 0.669725),
    "Leaf Category": (51, 0.464891, 0.696041),
    "Fix Pattern": (51, 0.617181, 0.617181),
}


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """(p_o - p_e) / (1 - p_e), p_e from each rater's own marginals (Cohen 1960)."""
    codes = sorted(set(a) | set(b))
    x = np.array([codes.index(v) for v in a])
    y = np.array([codes.index(v) for v in b])
    p_o = float(np.mean(x == y))
    p_e = (
        float(np.sum(np.bincount(x, minlength=len(codes)) * np.bincount(y, minlength=len(codes))))
        / len(x) ** 2
    )
    return (p_o - p_e) / (1 - p_e)


def fold(value: object) -> str:
    return re.sub(r"\s+", " ", str(value).replace("&", " and ")).strip().casefold()


def round1_pairs(column: str) -> tuple[list[str], list[str]]:
    sheets = pd.read_excel(ROUND1, sheet_name=["label1", "label2"])

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.rename(columns=lambda c: str(c).strip()).dropna(subset=["Link"])
        return frame[~frame["Link"].duplicated(keep=False)].set_index("Link")

    a, b = keyed(sheets["label1"]), keyed(sheets["label2"])
    both = a.index.intersection(b.index)
    x, y = a.loc[both, column], b.loc[both, column]
    filled = x.notna() & y.notna()
    return [str(v).strip() for v in x[filled]], [str(v).strip() for v in y[filled]]


@pytest.mark.parametrize("column", list(ROUND1_KAPPA))
def test_round1_kappa_per_column(column: str) -> None:
    units, raw, folded = ROUND1_KAPPA[column]
    a, b = round1_pairs(column)
    assert len(a) == units
    assert cohen_kappa(a, b) == pytest.approx(raw, abs=1e-6)
    assert cohen_kappa([fold(v) for v in a], [fold(v) for v in b]) == pytest.approx(
        folded, abs=1e-6
    )
    sklearn = pytest.importorskip("sklearn.metrics")
    assert sklearn.cohen_kappa_score(a, b) == pytest.approx(cohen_kappa(a, b), abs=1e-12)


# --- normalising and matching ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Hang & Timeout", "hang and timeout"),
        ("  Communication   setup ", "communication setup"),
        ("Package Build & Import", "package build and import"),
        ("Program Failures", "program failure"),
        ("installation/build failure", "Installation build failure"),
        ("Framework–model incompatibility", "framework-model incompatibility"),  # noqa: RUF001
        ("fix batch size/data partition", "Fix batch size / data partition."),
        (1.0, "1"),
    ],
)
def test_normalise_equates_spellings(a: object, b: str) -> None:
    assert normalise(a) == normalise(b)


@pytest.mark.parametrize(
    ("a", "b"), [("loss", "los"), ("hang", "hang and timeout"), ("analysis", "analysi")]
)
def test_normalise_keeps_distinct_words_apart(a: str, b: str) -> None:
    assert normalise(a) != normalise(b)


def test_match_values_counts_plain_values_and_refuses_ambiguous_categories() -> None:
    matching = match_values(
        ["Hang", "hang", "Hang & Timeout"], {"hang-timeout": ["Hang & timeout"]}
    )
    assert matching.matched == {"Hang & Timeout": "hang-timeout"}
    assert [(u.value, u.count) for u in matching.unmatched] == [("Hang", 1), ("hang", 1)]
    with pytest.raises(
        ValueError, match="categories 'oom' and 'out-of-memory' both read as 'out of memory'"
    ):
        match_values([], {"oom": ["Out of memory"], "out-of-memory": ["out-of-memory"]})


# --- bad input ---------------------------------------------------------------------------------


def workbook(path: Path, sheets: dict[str, list[list[Any]]]) -> Path:
    book = Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def read_small(path: Path, **options: Any) -> spreadsheets.PriorLabels:
    arguments: dict[str, Any] = {
        "key_column": "Link",
        "sheet_to_annotator": {"label1": "a"},
        "column_to_facet": {"Stage": "stage"},
    }
    return read_rounds(path, **(arguments | options))


GOOD = [["Link", "Stage"], ["https://x/1", "training"], ["https://x/2", "setup"]]


def test_a_small_good_workbook_reads(tmp_path: Path) -> None:
    labels = read_small(workbook(tmp_path / "w.xlsx", {"label1": GOOD}))
    assert labels.annotators == {
        "a": {"https://x/1": {"stage": ["training"]}, "https://x/2": {"stage": ["setup"]}}
    }


def test_duplicate_keys_name_both_rows(tmp_path: Path) -> None:
    path = workbook(tmp_path / "w.xlsx", {"label1": [*GOOD, ["https://x/1", "setup"]]})
    with pytest.raises(
        SpreadsheetError,
        match=re.escape("sheet 'label1', row 4, column 'Link': repeats key 'https://x/1' of row 2"),
    ):
        read_small(path)
    labels = read_small(path, skip_bad_rows=True)
    assert list(labels.annotators["a"]) == ["https://x/2"]
    assert "training" not in labels.values("stage")  # the first row of the key is left out too


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"key_column": "URL"},
            "sheet 'label1', column 'URL': no such column; the sheet has ['Link', 'Stage']",
        ),
        (
            {"column_to_facet": {"Fix": "fix-pattern"}},
            "sheet 'label1', column 'Fix': no such column",
        ),
        (
            {"sheet_to_annotator": {"label3": "c"}},
            "sheet 'label3': no such sheet; the workbook has ['label1']",
        ),
        ({"final_sheet": "Final"}, "sheet 'Final': no such sheet; the workbook has ['label1']"),
    ],
)
def test_mapping_names_that_do_not_exist(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    path = workbook(tmp_path / "w.xlsx", {"label1": GOOD})
    with pytest.raises(SpreadsheetError, match=re.escape(message)):
        read_small(path, **options)


def test_not_an_xlsx(tmp_path: Path) -> None:
    text = tmp_path / "labels.xlsx"
    text.write_text("Link,Stage\nhttps://x/1,training\n")
    with pytest.raises(
        SpreadsheetError, match=r"^labels.xlsx is not an .xlsx workbook \(not a zip archive\)$"
    ):
        inspect_workbook(text)
    archive = tmp_path / "other.xlsx"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(
        SpreadsheetError, match=r"other\.xlsx is a zip archive but not an \.xlsx workbook"
    ):
        read_small(archive)
    with pytest.raises(SpreadsheetError, match="does not exist"):
        inspect_workbook(tmp_path / "missing.xlsx")


def test_a_corrupt_workbook(tmp_path: Path) -> None:
    broken = tmp_path / "broken.xlsx"
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr("xl/workbook.xml", "<workbook><not closed")
    with pytest.raises(SpreadsheetError, match=r"broken\.xlsx cannot be read as \.xlsx"):
        inspect_workbook(broken)


def test_a_zip_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
        z.writestr("xl/worksheets/sheet1.xml", b"\0" * 20_000_000)
    with pytest.raises(
        SpreadsheetError, match=r"xl/worksheets/sheet1.xml inflates \d+ times \(limit 200\)"
    ):
        read_small(bomb)


def test_a_workbook_inflating_past_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheets, "MAX_UNCOMPRESSED_BYTES", 50_000)
    with pytest.raises(
        SpreadsheetError,
        match=r"reliability_analysis_round1.xlsx inflates to [\d,]+ bytes, over the limit of 50,000",
    ):
        inspect_workbook(ROUND1)


def test_sheets_past_the_row_and_column_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheets, "MAX_ROWS", 50)
    with pytest.raises(SpreadsheetError, match=r"^sheet 'label1': more than 50 rows$"):
        read_round1(skip_bad_rows=True)
    monkeypatch.setattr(spreadsheets, "MAX_ROWS", 1000)
    monkeypatch.setattr(spreadsheets, "MAX_COLUMNS", 20)
    with pytest.raises(
        SpreadsheetError, match=r"^sheet 'label1', row 1: 33 columns, over the limit of 20$"
    ):
        inspect_workbook(ROUND1)


# --- repeated keys, key-only rows --------------------------------------------------------------

REPEATED = [
    ["Link", "Stage", "Memo"],
    ["https://x/1", "training", None],
    ["https://x/2", "setup", None],
    ["https://x/1", "setup", None],
    ["https://x/3", None, None],  # the key alone: an empty row
    ["https://x/2", None, "a note"],  # a row of the key, though no mapped value
]


@pytest.mark.parametrize(
    ("rule", "kept", "left_out"),
    [
        ("first", {"https://x/1": ["training"], "https://x/2": ["setup"]}, [4, 5, 6]),
        ("last", {"https://x/1": ["setup"], "https://x/2": []}, [2, 3, 5]),
        ("drop", {}, [2, 3, 4, 5, 6]),
    ],
)
def test_a_repeated_key_follows_the_rule_and_every_row_left_out_is_listed(
    tmp_path: Path, rule: str, kept: dict[str, list[str]], left_out: list[int]
) -> None:
    path = workbook(tmp_path / "w.xlsx", {"label1": REPEATED})
    labels = read_small(path, duplicates=rule)
    assert {k: v["stage"] for k, v in labels.annotators["a"].items()} == kept
    assert [s.row for s in labels.skipped] == left_out
    assert all(s.sheet == "label1" and s.key for s in labels.skipped)
    only_key = next(s for s in labels.skipped if s.row == 5)
    assert (only_key.key, only_key.reason) == ("https://x/3", "holds only the key")
    # What matching sees is what was kept: a left-out row's values are nobody's labels.
    places = {o.row for found in labels.values("stage").values() for o in found}
    assert places == {labels.rows["label1"][k] for k in kept if kept[k]}


def test_the_rule_applies_per_sheet_and_an_unknown_rule_is_refused(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "w.xlsx",
        {"label1": REPEATED, "label2": [["Link", "Stage"], ["https://x/1", "setup"]]},
    )
    labels = read_small(path, sheet_to_annotator={"label1": "a", "label2": "b"}, duplicates="first")
    assert labels.annotators["b"] == {"https://x/1": {"stage": ["setup"]}}
    assert {s.sheet for s in labels.skipped} == {"label1"}
    with pytest.raises(SpreadsheetError, match="duplicates must be one of first, last, drop"):
        read_small(path, duplicates="any")


def test_keys_of_the_final_sheet_alone_are_listed(tmp_path: Path) -> None:
    path = workbook(
        tmp_path / "w.xlsx",
        {"label1": GOOD, "Final": [*GOOD, ["https://x/9", "training"]]},
    )
    labels = read_small(path, final_sheet="Final", duplicates="first")
    assert labels.final_only("Final") == [("https://x/9", 4)]
