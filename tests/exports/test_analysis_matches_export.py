"""Every analysis table of a reference-sized study (849 decided issues, 34 leaf symptoms, 28 root
causes, 6 fix patterns, 5 stages) equals a pandas crosstab of the exported final dataset, at
leaf level and at the top level, over every stage and within each one."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from annotator.exports.dataset import run_analysis
from annotator.exports.services import export_dataset
from tests.exports.study849 import DECIDED, ReferenceStudy, build_reference_study

pytestmark = pytest.mark.django_db
STAGES = (
    "build-import",
    "communication-setup",
    "data-model-preparation",
    "training-evaluation",
    "inference",
)


@pytest.fixture
def reference() -> ReferenceStudy:
    return build_reference_study()


def exported(reference: ReferenceStudy) -> pd.DataFrame:
    """The final dataset as the export writes it (CSV), read back with pandas: decided rows."""
    out = io.BytesIO()
    export_dataset(study=reference.study, format="csv", out=out)
    frame = pd.read_csv(io.BytesIO(out.getvalue()), dtype=str, keep_default_na=False)
    frame = frame.replace("", None)
    return frame[frame["decision_source"].notna()].reset_index(drop=True)


def unit(frame: pd.DataFrame, facet: str, level: str) -> pd.Series:
    """Per row, the category a facet counts under: list-valued for fix patterns."""
    if facet == "symptom":
        if level == "leaf":
            return frame["symptom_l2"].fillna(frame["symptom_l1"])
        return frame["symptom_l1"]
    column = facet.replace("-", "_")
    if facet == "fix-pattern":
        return frame[column].map(lambda v: v.split(";") if isinstance(v, str) else None)
    return frame[column]


def long(frame: pd.DataFrame, facet: str, level: str) -> pd.Series:
    """One value per (row, category): multi-choice values exploded, missing dropped."""
    return unit(frame, facet, level).explode().dropna()


def table(result, table_id):  # type: ignore[no-untyped-def]
    found = {t.id: t for t in result.tables}
    return found[table_id]


def check_cross(result, frame: pd.DataFrame, rows: str, columns: str, level: str) -> int:  # type: ignore[no-untyped-def]
    t = table(result, f"cross-{rows}-{columns}")
    a, b = long(frame, rows, level), long(frame, columns, level)
    pairs = pd.DataFrame({"a": a}).join(pd.DataFrame({"b": b}), how="inner")
    expected = pd.crosstab(pairs["a"], pairs["b"])
    seen = 0
    for row in t.rows:
        code = row[0].value
        for header, cell in zip(t.header[1:], row[1:], strict=True):
            want = (
                int(expected.at[code, header])
                if code in expected.index and header in expected.columns
                else 0
            )
            assert cell.value == want, (t.id, code, header)
            seen += 1
    # every pair the export holds has its cell (no category of the data left out of the table)
    assert set(expected.index) <= {row[0].value for row in t.rows}
    assert set(expected.columns) <= set(t.header[1:])
    return seen


def check_share(result, frame: pd.DataFrame, facet: str, level: str) -> None:  # type: ignore[no-untyped-def]
    """Issues per category (every category on a label's path, once per issue), overall and per
    repository, and the total of labelled issues."""
    t = table(result, f"share-{facet}")
    labelled = frame[unit(frame, facet, "leaf").notna()]
    if facet == "symptom":
        on_path = labelled["symptom_l1"].dropna()
        if level == "leaf":
            on_path = pd.concat([on_path, labelled["symptom_l2"].dropna()])
    else:
        on_path = long(labelled, facet, level)
    pairs = on_path.groupby(level=0).unique().explode()  # (issue, category) once each
    expected = pd.crosstab(pairs.to_numpy(), labelled.loc[pairs.index, "repository"].to_numpy())
    repositories = [h for h in t.header if h in expected.columns]
    assert repositories == sorted(expected.columns)
    for row in t.rows[:-1]:
        code = row[1].value
        assert row[3].value == (int(expected.loc[code].sum()) if code in expected.index else 0)
        for j, repo in enumerate(t.header):
            if repo in repositories:
                want = int(expected.at[code, repo]) if code in expected.index else 0
                assert row[j].value == want, (t.id, code, repo)
    assert t.rows[-1][3].value == len(labelled)
    assert set(expected.index) <= {row[1].value for row in t.rows}


def check_distributed(result, frame: pd.DataFrame, facet: str, level: str) -> None:  # type: ignore[no-untyped-def]
    t = table(result, f"distributed-by-{facet}")
    codes = long(frame, facet, level)
    yes = frame["distributed"].eq("yes").reindex(codes.index)
    expected = pd.crosstab(codes, yes)
    for row in t.rows:
        code = row[1].value
        if code not in expected.index:
            continue  # a group row of a leaf-level table: counted below
        assert row[3].value == int(expected.loc[code].sum()), (t.id, code)
        assert row[4].value == int(expected.loc[code].get(True, 0)), (t.id, code)
        want = round(100 * row[4].value / row[3].value, 1) if row[3].value else None
        assert row[5].value == want


@pytest.mark.parametrize("stage", [None, *STAGES])
def test_every_table_at_leaf_level_equals_a_crosstab_of_the_export(reference, stage) -> None:  # type: ignore[no-untyped-def]
    frame = exported(reference)
    assert len(frame) == DECIDED
    if stage:
        frame = frame[frame["stage"] == stage]
    result = run_analysis(reference.study, {"stage": stage} if stage else {})
    assert result.decided == len(frame)
    cells = 0
    for rows, columns in [
        ("symptom", "stage"),
        ("root-cause", "stage"),
        ("symptom", "root-cause"),
        ("root-cause", "fix-pattern"),
    ]:
        cells += check_cross(result, frame, rows, columns, "leaf")
    symptom_x_cause = table(result, "cross-symptom-root-cause")
    assert len(symptom_x_cause.rows) == 34 and len(symptom_x_cause.header) == 1 + 28
    assert len(table(result, "cross-root-cause-fix-pattern").header) == 1 + 6
    assert cells == 34 * 5 + 28 * 5 + 34 * 28 + 28 * 6
    for facet in ("symptom", "root-cause", "fix-pattern", "stage"):
        check_share(result, frame, facet, "leaf")
    check_distributed(result, frame, "stage", "leaf")
    check_distributed(result, frame, "symptom", "leaf")


def test_top_level_tables_equal_a_crosstab_of_the_export(reference) -> None:  # type: ignore[no-untyped-def]
    frame = exported(reference)
    result = run_analysis(reference.study, {"level": "1"})
    symptom_x_cause = table(result, "cross-symptom-root-cause")
    # the two groups and `other`, which has no sub-categories
    assert [r[0].value for r in symptom_x_cause.rows] == [
        "program-failure",
        "unexpected-performance",
        "other",
    ]
    check_cross(result, frame, "symptom", "root-cause", "1")
    check_cross(result, frame, "symptom", "stage", "1")
    check_share(result, frame, "symptom", "1")


def test_each_levels_shares_sum_to_100_percent(reference) -> None:  # type: ignore[no-untyped-def]
    result = run_analysis(reference.study, {})
    share = table(result, "share-symptom")
    rows = share.rows[:-1]
    level1 = [r for r in rows if r[0].value == 1]
    leaves = [r for r in rows if r[1].value not in {"program-failure", "unexpected-performance"}]
    assert len(leaves) == 34 and [r[1].value for r in level1] == [
        "program-failure",
        "unexpected-performance",
        "other",
    ]
    labelled = share.rows[-1][3].value
    assert sum(r[3].value for r in level1) == labelled
    assert sum(r[3].value for r in leaves) == labelled
    assert abs(sum(r[4].value for r in leaves) - 100) < 0.05 * len(leaves)
    # codebook order: each group's leaves right under it, indented
    names = [r[1].value for r in rows]
    assert names.index("setup-failure") == names.index("program-failure") + 1
    assert {r[2].indent for r in rows if r[0].value == 2} == {1}
    fixes = table(result, "share-fix-pattern")
    assert sum(r[4].value for r in fixes.rows[:-1]) > 100  # several per issue: said in its note
    assert "more than 100%" in fixes.note
