"""Label rules on the prior-label import: a workbook whose rows break the codebook's rules is
refused, naming the sheet, row, facet and rule, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import Workbook

from annotator.adjudication.models import Decision
from annotator.exports.prior import PriorImportError, PriorMapping, import_prior_labels
from annotator.issues.models import Issue
from annotator.studies.models import Annotation, Item, Study
from tests.factories import UserFactory
from tests.taxonomy_app.factories import published_with_rules

pytestmark = pytest.mark.django_db
URL = "https://github.com/hpcaitech/ColossalAI/issues/{}"
CHOICES = {
    "screening": {"Relevant": "relevant", "Not a bug": "not-a-bug"},
    "symptom": {"Hang": "hang", "Program failure": "failure", "Crash": "crash"},
}


def workbook(tmp_path: Path, sheets: dict[str, list[list[str | None]]]) -> Path:
    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    path = tmp_path / "prior.xlsx"
    book.save(path)
    return path


def mapping(*columns: str, final: bool = False) -> PriorMapping:
    facets = {"Screening": "screening", "Symptom": "symptom"}
    return PriorMapping(
        key_column="Link",
        sheet_to_annotator={"label1": "rater1", "label2": "rater2"},
        column_to_facet={c: facets[c] for c in columns},
        final_sheet="Final" if final else None,
    )


def run(path: Path, prior: PriorMapping):
    owner = UserFactory(username="owner")
    return import_prior_labels(
        path=path,
        mapping=prior,
        choices={k: v for k, v in CHOICES.items() if k in prior.column_to_facet.values()},
        user=owner,
        study_name="Prior",
        codebook_version=published_with_rules(),
    )


def nothing_written() -> bool:
    return not any(model.objects.exists() for model in (Study, Item, Annotation, Decision, Issue))


GOOD = [["Link", "Screening", "Symptom"], [URL.format(1), "Relevant", "Hang"]]


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        (
            [URL.format(2), "Relevant", None],
            "sheet 'label2', row 3 (https://github.com/hpcaitech/ColossalAI/issues/2): facet "
            "'symptom': required when Screening is Relevant (rule 1: requires symptom)",
        ),
        (
            [URL.format(2), "Not a bug", "Hang"],
            "sheet 'label2', row 3 (https://github.com/hpcaitech/ColossalAI/issues/2): facet "
            "'symptom': Not a bug allows no symptom (rule 2: forbids symptom)",
        ),
        (
            [URL.format(2), "Relevant", "Program failure"],
            "facet 'symptom': a leaf category: choose one of Program failure's sub-categories "
            "(rule 4: leaf_only symptom)",
        ),
    ],
)
def test_rows_breaking_a_rule_refuse_the_import_and_nothing_is_written(tmp_path, bad_row, message):
    path = workbook(tmp_path, {"label1": GOOD, "label2": [*GOOD, bad_row]})

    with pytest.raises(PriorImportError) as refused:
        run(path, mapping("Screening", "Symptom"))

    assert message in str(refused.value)
    assert nothing_written()


def test_the_final_sheet_is_checked_too_and_further_rows_are_counted(tmp_path):
    bad = [[URL.format(2), "Not a bug", "Crash"], [URL.format(3), "Relevant", None]]
    rated = [*GOOD, [URL.format(2), "Not a bug", None], [URL.format(3), "Not a bug", None]]
    path = workbook(tmp_path, {"label1": rated, "label2": GOOD, "Final": [*GOOD, *bad]})

    with pytest.raises(PriorImportError) as refused:
        run(path, mapping("Screening", "Symptom", final=True))

    assert "sheet 'Final', row 3" in str(refused.value)
    assert str(refused.value).endswith("; and 1 more")
    assert nothing_written()


def test_the_final_sheets_keys_no_annotator_labelled_are_listed_not_checked(tmp_path):
    bad = [[URL.format(2), "Not a bug", "Crash"]]  # breaks rule 2, but is not imported
    path = workbook(tmp_path, {"label1": GOOD, "label2": GOOD, "Final": [*GOOD, *bad]})

    result = run(path, mapping("Screening", "Symptom", final=True))

    assert (result.items, result.decisions) == (1, 1)
    assert result.record["final_only"] == [{"key": URL.format(2), "row": 3}]
    assert result.round.prior_import["final_only"] == result.record["final_only"]


def test_rows_keeping_the_rules_import(tmp_path):
    other = [URL.format(2), "Not a bug", None]
    path = workbook(tmp_path, {"label1": [*GOOD, other], "label2": [*GOOD, other]})

    result = run(path, mapping("Screening", "Symptom"))

    assert (result.items, result.annotations) == (2, 4)


def test_a_facet_the_workbook_lacks_is_not_required_of_it(tmp_path):
    rows = [["Link", "Screening"], [URL.format(1), "Relevant"]]
    path = workbook(tmp_path, {"label1": rows, "label2": rows})

    result = run(path, mapping("Screening"))

    assert result.annotations == 2
