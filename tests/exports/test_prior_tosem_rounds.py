"""The five double-labelled TOSEM 2023 rounds (tests/exports/data/tosem23/), imported with
`"duplicates": "first"`: the κ each agreement run stores for an imported round equals, for every
field, Cohen's κ computed from the workbook alone — read here with openpyxl, first row per key,
the pairs where both annotators gave a value, scikit-learn's cohen_kappa_score — and the rows the
import lists as left out are the rows this reader left out."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.prior import PriorMapping, import_prior_labels
from taxonomy_app.services import import_codebook
from tests.factories import UserFactory

sklearn_metrics = pytest.importorskip("sklearn.metrics")
pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent / "data" / "tosem23"
ROUNDS = [DATA / f"reliability_analysis_round{n}.xlsx" for n in range(1, 6)]
SHEETS = {"label1": "rater1", "label2": "rater2"}
# Every labelled column of the rater sheets → a facet; the Final sheet adds " Final".
FIELDS = {
    "Issue Type": "issue-type",
    "How-to topic": "howto-topic",
    "How-to sub-topic": "howto-subtopic",
    "Distributed-specified": "distributed",
    "Stage": "stage",
    "Type": "type",
    "Leaf Category": "leaf",
    "Fix Pattern": "fix",
}
FINAL = {c if c == "Issue Type" else f"{c} Final": f for c, f in FIELDS.items()}


# --- the independent reader --------------------------------------------------------------------
def text(value: Any) -> str | None:
    """A cell as the sheets mean it: None when blank, 1 for 1.0, trimmed text."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    value = str(value).strip()
    return value or None


def fold(value: str) -> str:
    """One spelling per label: case, "&" / "and" and spacing do not count."""
    return re.sub(r"\s+", " ", value.replace("&", " and ")).strip().casefold()


@dataclass
class Sheet:
    rows: dict[str, dict[str, str | None]] = field(default_factory=dict)  # key → column → text
    skipped: set[tuple[str, int, str | None]] = field(default_factory=set)  # sheet, row, key
    keys: set[str] = field(default_factory=set)


def read_first_rows(path: Path, sheet: str) -> Sheet:
    """Each key's first row in `sheet`; every other non-blank row is left out: a row without a
    key, a row holding only its key, a later row of a key."""
    book = load_workbook(path, read_only=True, data_only=True)
    rows = list(book[sheet].iter_rows(values_only=True))
    book.close()
    header = [text(h) for h in rows[0]]
    out = Sheet()
    for number, values in enumerate(rows[1:], start=2):
        cells = dict(zip(header, (text(v) for v in values), strict=False))
        key = cells.get("Link")
        others = [v for h, v in zip(header, values, strict=False) if h != "Link" and text(v)]
        if key is None:
            if others:
                out.skipped.add((sheet, number, None))
        elif not others or key in out.rows:  # the key alone, or a later row of the key
            out.skipped.add((sheet, number, key))
        else:
            out.rows[key] = cells
    return out


def independent_kappa(path: Path) -> dict[str, tuple[int, float]]:
    """Per field: (pairs, Cohen's κ) between label1 and label2, from the workbook alone."""
    a, b = (read_first_rows(path, s) for s in SHEETS)
    both = [k for k in a.rows if k in b.rows]
    out = {}
    for column in FIELDS:
        pairs = [(a.rows[k].get(column), b.rows[k].get(column)) for k in both]
        x = [fold(u) for u, v in pairs if u and v]
        y = [fold(v) for u, v in pairs if u and v]
        out[column] = (len(x), float(sklearn_metrics.cohen_kappa_score(x, y)))
    return out


# --- the product -------------------------------------------------------------------------------
def workbook_values(path: Path) -> dict[str, set[str]]:
    """facet → every raw value its columns hold in any sheet."""
    book = load_workbook(path, read_only=True, data_only=True)
    found: dict[str, set[str]] = {f: set() for f in FIELDS.values()}
    for sheet, columns in (("label1", FIELDS), ("label2", FIELDS), ("Final", FINAL)):
        rows = list(book[sheet].iter_rows(values_only=True))
        header = [text(h) for h in rows[0]]
        for values in rows[1:]:
            for h, v in zip(header, values, strict=False):
                if h in columns and text(v):
                    found[columns[h]].add(text(v) or "")
    book.close()
    return found


def codebook_and_choices(owner: Any, path: Path) -> tuple[Any, dict[str, dict[str, str]]]:
    """A codebook with a category per folded spelling of each facet (named by a code the
    matcher cannot confuse) and the choice of that category for every raw value."""
    facets, choices = [], {}
    for facet, values in workbook_values(path).items():
        forms = sorted({fold(v) for v in values})
        code = {form: f"v{n:03d}" for n, form in enumerate(forms)}
        categories = [{"code": c, "name": c, "definition": f} for f, c in code.items()]
        facets.append({"key": facet, "name": facet, "kind": "single", "categories": categories})
        choices[facet] = {v: code[fold(v)] for v in values}
    document = {
        "format": "annotator-codebook/1",
        "codebook": {"name": path.stem, "slug": path.stem.replace("_", "-"), "description": ""},
        "version": {"changelog": "From the sheets."},
        "facets": facets,
    }
    version = import_codebook(data=json.dumps(document), fmt="json", publish=True, user=owner)
    return version, choices


def stored_kappa(run: AgreementRun, facet: str) -> float | None:
    """Cohen's κ between the raters of sheets rater1 and rater2 as the run stored it."""
    result = run.facet_result(facet)
    assert result is not None
    pairwise = result["pairwise_cohen"]
    labels = pairwise["labels"]
    assert labels == [f"s{run.study_id}-rater-rater1", f"s{run.study_id}-rater-rater2"]
    value = pairwise["cells"][0][1]
    return None if value is None else float(value)


@pytest.mark.parametrize("path", ROUNDS, ids=[p.stem for p in ROUNDS])
def test_an_imported_round_stores_the_kappa_of_the_first_row_per_key(path: Path) -> None:
    owner = UserFactory(username="owner")
    version, choices = codebook_and_choices(owner, path)
    mapping = PriorMapping(
        key_column="Link",
        sheet_to_annotator=SHEETS,
        column_to_facet=FIELDS,
        final_sheet="Final",
        final_column_to_facet=FINAL,
        duplicates="first",
    )
    result = import_prior_labels(
        path=path,
        mapping=mapping,
        choices=choices,
        user=owner,
        study_name=path.stem,
        codebook_version=version,
    )
    # Every row the import left out, as the independent reader left it out.
    expected = set().union(*(read_first_rows(path, s).skipped for s in [*SHEETS, "Final"]))
    listed = {(s["sheet"], s["row"], s["key"]) for s in result.round.prior_import["skipped"]}
    assert listed == expected
    assert result.round.prior_import == result.record and result.record["duplicates"] == "first"
    run = start_agreement_run(study=result.study, round=result.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.SUCCEEDED, run.error
    for column, (pairs, kappa) in independent_kappa(path).items():
        facet = FIELDS[column]
        stored = stored_kappa(run, facet)
        assert stored is not None, column
        assert stored == pytest.approx(kappa, abs=1e-6), (column, pairs)
