"""Prior labels in, on PostgreSQL: round 1 of the TOSEM 2023 study imported as a study round,
whose agreement (computed like any round's) matches the κ computed from the sheets alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils.text import slugify

from annotator.adjudication.models import Decision
from annotator.agreement import stats
from annotator.agreement.labels import load_label_table
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.matching import normalise
from annotator.exports.prior import (
    IGNORE,
    PROPOSE,
    PriorImportError,
    PriorMapping,
    import_prior_labels,
    review_prior_labels,
)
from annotator.studies.models import Annotation, AnnotationLabel, Item
from taxonomy_app.models import Proposal
from taxonomy_app.services import import_codebook
from tests.exports.test_spreadsheets import COLUMNS, FINAL_COLUMNS, RATERS, ROUND1, ROUND1_KAPPA
from tests.factories import UserFactory

MAPPING = PriorMapping(
    key_column="Link",
    sheet_to_annotator=RATERS,
    column_to_facet=COLUMNS,
    final_sheet="Final",
    final_column_to_facet=FINAL_COLUMNS,
)
FACET_OF = {column: facet for column, facet in COLUMNS.items()}


def sheet_codebook(owner):  # type: ignore[no-untyped-def]
    """A codebook with one category per distinct (normalised) value of round 1: what an owner
    gets by proposing every value the seed lacks. Fix patterns stay whole cells (single-choice),
    as the independent κ compares them."""
    labels = MAPPING.read(ROUND1)
    facets = []
    for facet in COLUMNS.values():
        forms = sorted({normalise(v) for v in labels.values(facet)})
        categories = [{"code": slugify(f) or "x", "name": f, "definition": f} for f in forms]
        facets.append({"key": facet, "name": facet, "kind": "single", "categories": categories})
    document = {
        "format": "annotator-codebook/1",
        "codebook": {"name": "TOSEM round 1", "slug": "tosem-round-1", "description": ""},
        "version": {"changelog": "From the sheets."},
        "facets": facets,
    }
    return import_codebook(data=json.dumps(document), fmt="json", publish=True, user=owner)


@pytest.fixture
def owner(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="owner")


def test_round1_imports_and_its_kappa_matches_the_sheets(owner) -> None:  # type: ignore[no-untyped-def]
    version = sheet_codebook(owner)
    review = review_prior_labels(path=ROUND1, mapping=MAPPING, version=version)
    assert all(not m.unmatched for m in review.matchings.values())
    result = import_prior_labels(
        path=ROUND1,
        mapping=MAPPING,
        choices={},
        user=owner,
        study_name="TOSEM 2023",
        codebook_version=version,
    )
    assert (result.items, result.annotations, result.decisions) == (107, 214, 107)
    assert sorted(result.placeholders) == ["rater1", "rater2"]
    placeholders = get_user_model().objects.filter(username__in=["rater1", "rater2"])
    assert not any(u.is_active or u.has_usable_password() for u in placeholders)
    assert set(
        Decision.objects.filter(item__study=result.study).values_list("source", flat=True)
    ) == {"imported"}
    table = load_label_table(study_id=result.study.pk, version=version, round_id=result.round.pk)
    by_key = {f.key: f for f in table.facets}
    for column, (units, _, folded) in ROUND1_KAPPA.items():
        if column not in FACET_OF:
            continue
        kappa = stats.cohen_kappa(by_key[FACET_OF[column]].table)
        assert kappa.value == pytest.approx(folded, abs=1e-6), column
        both = (by_key[FACET_OF[column]].table.codes >= 0).all(axis=1).sum()
        assert both == units, column
    # …and an agreement run of the imported round computes like any other round's.
    run = start_agreement_run(study=result.study, round=result.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.SUCCEEDED, run.error
    stage = run.facet_result("stage")
    assert stage is not None and stage["pairwise_cohen"]["labels"] == ["rater1", "rater2"]


def small_mapping() -> PriorMapping:
    return PriorMapping(
        key_column="Link", sheet_to_annotator=RATERS, column_to_facet={"Leaf Category": "symptom"}
    )


def seed_like(owner):  # type: ignore[no-untyped-def]
    document = {
        "format": "annotator-codebook/1",
        "codebook": {"name": "Seedish", "slug": "seedish", "description": ""},
        "version": {"changelog": "x"},
        "facets": [
            {
                "key": "symptom",
                "name": "Symptom",
                "kind": "single",
                "categories": [
                    {"code": "hang-timeout", "name": "Hang & timeout", "definition": "d"},
                    {"code": "crash", "name": "Crash", "definition": "d"},
                ],
            }
        ],
    }
    return import_codebook(data=json.dumps(document), fmt="json", publish=True, user=owner)


def test_unmatched_values_must_be_mapped_and_nothing_is_written_until_then(owner) -> None:  # type: ignore[no-untyped-def]
    version = seed_like(owner)
    review = review_prior_labels(path=ROUND1, mapping=small_mapping(), version=version)
    unmatched = [u.value for u in review.matchings["symptom"].unmatched]
    assert "PENDING" in unmatched and "hang" in unmatched
    counts = (Item.objects.count(), Annotation.objects.count(), get_user_model().objects.count())
    with pytest.raises(PriorImportError, match="map, propose or ignore every unmatched value"):
        import_prior_labels(
            path=ROUND1,
            mapping=small_mapping(),
            choices={},
            user=owner,
            study_name="S",
            codebook_version=version,
        )
    assert (
        Item.objects.count(),
        Annotation.objects.count(),
        get_user_model().objects.count(),
    ) == counts
    choices = {
        "symptom": {v: IGNORE for v in unmatched} | {"hang": "hang-timeout", "PENDING": PROPOSE}
    }
    result = import_prior_labels(
        path=ROUND1,
        mapping=small_mapping(),
        choices=choices,
        user=owner,
        study_name="S",
        codebook_version=version,
    )
    assert result.proposals == 1 and Proposal.objects.get().name == "PENDING"
    # "hang" now counts as hang-timeout beside the spellings that matched by name.
    matched = review.labels.values("symptom")
    spelled = sum(
        len(matched[v])
        for v, c in review.matchings["symptom"].matched.items()
        if c == "hang-timeout"
    )
    assert (
        AnnotationLabel.objects.filter(category__code="hang-timeout").count()
        == len(matched["hang"]) + spelled
    )


def test_a_mapping_to_no_such_category_is_refused(owner) -> None:  # type: ignore[no-untyped-def]
    version = seed_like(owner)
    with pytest.raises(PriorImportError, match=r"facet 'symptom' has no categories \['nope'\]"):
        import_prior_labels(
            path=ROUND1,
            mapping=small_mapping(),
            choices={"symptom": {"hang": "nope"}},
            user=owner,
            study_name="S",
            codebook_version=version,
        )
    assert not Item.objects.exists()


def test_importing_the_same_round_twice_into_a_study_is_refused(owner) -> None:  # type: ignore[no-untyped-def]
    version = sheet_codebook(owner)
    first = import_prior_labels(
        path=ROUND1,
        mapping=MAPPING,
        choices={},
        user=owner,
        study_name="T",
        codebook_version=version,
    )
    before = Item.objects.count()
    with pytest.raises(PriorImportError, match="already in this study"):
        import_prior_labels(path=ROUND1, mapping=MAPPING, choices={}, user=owner, study=first.study)
    assert Item.objects.count() == before and first.study.rounds.count() == 1


def test_a_key_that_is_not_an_issue_url_is_refused(owner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.exports.test_spreadsheets import workbook

    path = workbook(
        tmp_path / "w.xlsx", {"label1": [["Link", "Leaf Category"], ["row one", "Crash"]]}
    )
    mapping = PriorMapping(
        key_column="Link",
        sheet_to_annotator={"label1": "a"},
        column_to_facet={"Leaf Category": "symptom"},
    )
    with pytest.raises(PriorImportError, match="key 'row one' is not an issue URL"):
        import_prior_labels(
            path=path,
            mapping=mapping,
            choices={},
            user=owner,
            study_name="S",
            codebook_version=seed_like(owner),
        )
    assert not Item.objects.exists()
