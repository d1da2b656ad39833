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
    is_pseudonymous_rater,
    review_prior_labels,
)
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, Membership
from annotator.studies.services import add_member, next_assignment
from taxonomy_app.models import Proposal
from taxonomy_app.services import import_codebook
from tests.exports.test_spreadsheets import COLUMNS, FINAL_COLUMNS, RATERS, ROUND1, ROUND1_KAPPA
from tests.factories import UserFactory

# ROUND1_KAPPA is computed on the links present once in both sheets: "drop" reads the same rows.
MAPPING = PriorMapping(
    key_column="Link",
    sheet_to_annotator=RATERS,
    column_to_facet=COLUMNS,
    final_sheet="Final",
    final_column_to_facet=FINAL_COLUMNS,
    duplicates="drop",
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


def import_round1(owner, version):  # type: ignore[no-untyped-def]
    """The TOSEM round-1 workbook imported with MAPPING into a new study "T"."""
    return import_prior_labels(
        path=ROUND1,
        mapping=MAPPING,
        choices={},
        user=owner,
        study_name="T",
        codebook_version=version,
    )


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
    raters = [f"s{result.study.pk}-rater-rater1", f"s{result.study.pk}-rater-rater2"]
    assert sorted(result.placeholders) == raters
    placeholders = get_user_model().objects.filter(username__in=raters)
    assert len(placeholders) == 2
    assert not any(u.is_active or u.has_usable_password() for u in placeholders)
    assert all(is_pseudonymous_rater(u) for u in placeholders)
    members = result.study.memberships.filter(role=Membership.Role.ANNOTATOR)
    assert sorted(members.values_list("user__username", flat=True)) == raters
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
    assert stage is not None and stage["pairwise_cohen"]["labels"] == raters


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


def test_the_same_round_imported_twice_makes_two_closed_rounds_kept_apart(owner) -> None:  # type: ignore[no-untyped-def]
    version = sheet_codebook(owner)
    first = import_round1(owner, version)
    second = import_prior_labels(
        path=ROUND1, mapping=MAPPING, choices={}, user=owner, study=first.study
    )
    assert (first.round.number, second.round.number) == (1, 2)
    assert first.round.closed_reason == second.round.closed_reason == "imported"
    for result in (first, second):
        items = Item.objects.filter(round=result.round)
        assert items.count() == 107 and items.values("issue").distinct().count() == 107
    shared = set(Item.objects.filter(round=first.round).values_list("issue", flat=True))
    assert shared == set(Item.objects.filter(round=second.round).values_list("issue", flat=True))
    # Each round's labels stay its own: the same κ from each, and twice the labels in the study.
    kappas = []
    for result in (first, second):
        table = load_label_table(study_id=first.study.pk, version=version, round_id=result.round.pk)
        stage = next(f for f in table.facets if f.key == "stage")
        assert (stage.table.codes >= 0).all(axis=1).sum() == ROUND1_KAPPA["Stage"][0]
        kappas.append(stats.cohen_kappa(stage.table).value)
    assert kappas[0] == pytest.approx(ROUND1_KAPPA["Stage"][2], abs=1e-6) == kappas[1]
    assert (
        AnnotationLabel.objects.filter(annotation__assignment__item__round=second.round).count()
        == second.labels
        == first.labels
    )


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


def test_a_new_member_leaves_an_imported_round_as_it_was(owner) -> None:  # type: ignore[no-untyped-def]
    version = sheet_codebook(owner)
    result = import_round1(owner, version)
    assert result.round.closed_reason == "imported"

    def state() -> tuple[list[tuple[int, int, int, int]], int, float | None]:
        items = Item.objects.filter(round=result.round).order_by("pk")
        counts = list(items.values_list("pk", "quota", "active_count", "submitted_count"))
        run = start_agreement_run(study=result.study, round=result.round, enqueue=False)
        run_agreement_run(run_id=run.pk)
        run.refresh_from_db()
        stage = run.facet_result("stage")
        assert stage is not None
        alpha = stage["coefficients"]["krippendorff_alpha"]["value"]
        return counts, Assignment.objects.filter(item__round=result.round).count(), alpha

    before = state()
    newcomer = UserFactory(username="newcomer")
    add_member(study=result.study, user=newcomer, role=Membership.Role.ANNOTATOR)
    assert next_assignment(study=result.study, annotator=newcomer) is None
    assert state() == before
    assert before[1] == result.annotations == 214


def test_values_mapped_to_ignore_are_listed_with_the_ratings_they_remove(owner) -> None:  # type: ignore[no-untyped-def]
    version = seed_like(owner)
    review = review_prior_labels(path=ROUND1, mapping=small_mapping(), version=version)
    unmatched = [u.value for u in review.matchings["symptom"].unmatched]
    choices = {"symptom": {v: IGNORE for v in unmatched} | {"PENDING": PROPOSE}}
    result = import_prior_labels(
        path=ROUND1,
        mapping=small_mapping(),
        choices=choices,
        user=owner,
        study_name="S",
        codebook_version=version,
    )
    # Counted from the sheets as read: each annotator's cell holding a value written as no label.
    cells = {
        v: sum(
            v in row.get("symptom", [])
            for rows in review.labels.annotators.values()
            for row in rows.values()
        )
        for v in unmatched
    }
    left_out = result.round.prior_import["left_out"]["symptom"]
    assert {v["value"]: v["cells"] for v in left_out["values"]} == {
        v: n for v, n in cells.items() if n
    }
    assert {v["value"]: v["mapped_to"] for v in left_out["values"]}["PENDING"] == "propose"
    # Single-choice cells: every cell left out is a rating removed, a missing one in agreement.
    assert left_out["ratings_removed"] == sum(cells.values())
    table = load_label_table(study_id=result.study.pk, version=version, round_id=result.round.pk)
    symptom = next(f for f in table.facets if f.key == "symptom")
    rated = sum(
        len(row.get("symptom", [])) > 0
        for rows in review.labels.annotators.values()
        for row in rows.values()
    )
    assert int((symptom.table.codes >= 0).sum()) == rated - left_out["ratings_removed"]
    expected = [{**v, "round": 1} for v in left_out["values"]]
    assert table.left_out == {
        "symptom": {"values": expected, "ratings_removed": left_out["ratings_removed"]}
    }
    # …and the agreement run stores them with its result and its inputs.
    run = start_agreement_run(study=result.study, round=result.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.result["left_out"] == run.inputs["left_out"] == table.left_out
