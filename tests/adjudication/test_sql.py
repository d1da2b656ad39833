"""Each statement of annotator/adjudication/sql.py gives what the ORM query it replaces gives.
Run on PostgreSQL here and again on SQLite by tests/test_sql_on_sqlite.py."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db.models import Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotator.adjudication import analytics, sql
from annotator.adjudication.models import (
    AdjudicationSettings,
    Change,
    Decision,
    DecisionLabel,
    ItemAgreement,
)
from annotator.studies.models import Annotation, AnnotationLabel, Item, Study
from annotator.studies.services import create_round, next_assignment, save_draft
from tests.adjudication.helpers import Scene, label_next, make_scene

pytestmark = pytest.mark.django_db


def fields(instance: Any) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


# --- the ORM twins ----------------------------------------------------------------------------
def orm_lock_item(item_id: int) -> sql.ItemState | None:
    item = (
        Item.objects.select_for_update(of=("self",), no_key=True)
        .select_related("study")
        .filter(pk=item_id)
        .first()
    )
    if item is None:
        return None
    majority = AdjudicationSettings.objects.filter(study_id=item.study_id).values_list(
        "majority_rule", flat=True
    )
    return sql.ItemState(
        item.submitted_count,
        item.quota,
        item.study.codebook_version_id,
        bool(majority.first()),
        item.study.route_unsure_to_adjudication,
    )


def orm_submitted_annotations(item_id: int) -> list[sql.Submitted]:
    annotations = Annotation.objects.filter(
        assignment__item_id=item_id, status=Annotation.Status.SUBMITTED
    ).order_by("pk")
    out = []
    for annotation in annotations.prefetch_related("labels"):
        sets: dict[int, set[int]] = {}
        for label in annotation.labels.all():
            sets.setdefault(label.facet_id, set()).add(label.category_id)
        labels = {f: frozenset(c) for f, c in sets.items()}
        out.append(sql.Submitted(labels, tuple(annotation.unsure)))
    return out


def orm_submitted_label_sets(item_id: int) -> list[dict[int, frozenset[int]]]:
    return [annotation.labels for annotation in orm_submitted_annotations(item_id)]


# --- tests ------------------------------------------------------------------------------------
def test_lock_item_matches_the_orm(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    assert sql.lock_item(item.pk) == orm_lock_item(item.pk)
    assert sql.lock_item(item.pk) == (2, 2, scene.study.codebook_version_id, False, True)
    AdjudicationSettings.objects.create(study=scene.study, majority_rule=True)
    assert sql.lock_item(item.pk) == orm_lock_item(item.pk)
    assert sql.lock_item(item.pk).majority_rule is True  # type: ignore[union-attr]
    Study.objects.filter(pk=scene.study.pk).update(route_unsure_to_adjudication=False)
    assert sql.lock_item(item.pk) == orm_lock_item(item.pk)
    assert sql.lock_item(item.pk).route_unsure is False  # type: ignore[union-attr]
    assert sql.lock_item(item.pk + 1000) is None is orm_lock_item(item.pk + 1000)


def test_submitted_label_sets_match_the_orm(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    sets = sql.submitted_label_sets(item.pk)
    assert sets == orm_submitted_label_sets(item.pk) and len(sets) == 2
    assert sets[0] != sets[1]
    # a submitted annotation without labels still counts; a draft does not
    annotation = Annotation.objects.filter(assignment__item=item).order_by("pk").first()
    assert annotation is not None
    AnnotationLabel.objects.filter(annotation=annotation).delete()
    a = scene.annotators[0]
    draft = next_assignment(study=scene.study, annotator=a)
    save_draft(assignment=draft, user=a, labels=scene.world.labels(symptom="hang"))
    assert sql.submitted_label_sets(item.pk) == orm_submitted_label_sets(item.pk)
    assert sql.submitted_label_sets(item.pk)[0] == {}
    assert sql.submitted_label_sets(draft.item_id) == orm_submitted_label_sets(draft.item_id) == []


def test_submitted_annotations_carry_their_unsure_facets_as_the_orm(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    first, second = Annotation.objects.filter(assignment__item=item).order_by("pk")
    Annotation.objects.filter(pk=first.pk).update(unsure=["screening", "symptom"])
    AnnotationLabel.objects.filter(annotation=second).delete()  # unsure without any label
    Annotation.objects.filter(pk=second.pk).update(unsure=["fix"])
    ours = sql.submitted_annotations(item.pk)
    assert ours == orm_submitted_annotations(item.pk)
    assert [a.unsure for a in ours] == [("screening", "symptom"), ("fix",)]
    assert ours[1].labels == {}


def test_store_item_agreement_writes_what_update_or_create_would(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    twin = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    facets = sorted(scene.world.labels())[:2]
    for value, disagreeing, unsure in ((0.25, facets, ["symptom"]), (0.75, facets[:1], [])):
        ours = sql.store_item_agreement(item.pk, value, disagreeing, unsure)
        theirs, _ = ItemAgreement.objects.update_or_create(
            item=twin, defaults={"value": value, "unsure_facets": unsure}
        )
        theirs.disagreeing_facets.set(disagreeing)
        rows = [ItemAgreement.objects.get(pk=x.pk) for x in (ours, theirs)]
        assert [
            (r.value, sorted(r.disagreeing_facets.values_list("pk", flat=True)), r.unsure_facets)
            for r in rows
        ] == [(value, sorted(disagreeing), unsure)] * 2
    assert ItemAgreement.objects.filter(item=item).count() == 1


def test_decision_and_its_labels_are_stored_as_the_orm_would(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    twin = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    Decision.objects.filter(item__in=[item, twin]).delete()
    ours = sql.insert_decision(Decision(item_id=item.pk, source=Decision.Source.UNANIMOUS))
    theirs = Decision.objects.create(item_id=twin.pk, source=Decision.Source.UNANIMOUS)
    rows = [fields(Decision.objects.get(pk=x.pk)) for x in (ours, theirs)]
    for row in rows:
        del row["id"], row["item_id"]
        row["created_at"] = row["updated_at"] = None  # the time of each insert
    assert rows[0] == rows[1]
    labels = [(f, cs[0]) for f, cs in scene.world.labels(screening="relevant").items() if cs]
    sql.replace_decision_labels(ours.pk, labels, new=True)
    assert sorted(
        DecisionLabel.objects.filter(decision=ours).values_list("facet_id", "category_id")
    ) == sorted(labels)
    sql.replace_decision_labels(ours.pk, labels[:0])
    assert not DecisionLabel.objects.filter(decision=ours).exists()


def test_insert_change_stores_what_save_would(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "crash"})
    after = {"source": "adjudicated", "labels": {"symptom": ["hang"]}}
    values = {"item_id": item.pk, "subject": Change.Subject.DECISION, "after": after}
    ours = sql.insert_change(Change(**values, user=scene.adjudicator, before=None))
    theirs = Change.objects.create(**values, user=scene.adjudicator, before=None)
    rows = [fields(Change.objects.get(pk=x.pk)) for x in (ours, theirs)]
    for row in rows:
        del row["id"]
        assert row.pop("at") <= timezone.now()
    assert rows[0] == rows[1] and rows[0]["after"] == after


# --- disagreement analytics -------------------------------------------------------------------
@pytest.mark.postgresql_only
def test_confused_pairs_equal_the_count_over_the_labels() -> None:
    """Thirty items, three annotators each with seeded random answers (several pairs per item,
    ties, more than TOP_PAIRS pairs in the single-choice facet, label sets in the multi-choice
    one), over two rounds: PostgreSQL's count equals the one over the label rows in Python, for
    the study and for each round."""
    scene = make_scene(items=30, k=3, annotators=3)
    rng = random.Random(5)
    symptoms = ["failure", "hang", "oom", "crash", "slow", "other"]
    for _ in range(30):
        answers = [
            {
                "symptom": rng.choice(symptoms),
                "fix": rng.sample(["version", "config"], rng.randint(0, 2)),
            }
            for _ in range(3)
        ]
        label_next(scene, *answers)
    first = scene.world.round
    second = create_round(study=scene.study)
    items = Item.objects.filter(study=scene.study)
    Item.objects.filter(pk__in=list(items.order_by("pk").values_list("pk", flat=True)[::3])).update(
        round=second
    )
    for round in (None, first, second):
        scoped = items.filter(round=round) if round is not None else items
        fast = analytics.confused_pairs(study=scene.study, round=round, items=scoped)
        assert fast == analytics.confused_pairs_from_labels(scoped)
        assert fast  # the planted answers differ
    groups = analytics.confused_pairs(study=scene.study, round=None, items=items)
    assert max(len(g["pairs"]) for g in groups) == analytics.TOP_PAIRS
    assert {g["round"] for g in groups} == {first.number, second.number}


def _moment(value: Any) -> Any:
    """A timestamp as a raw cursor gives it (text on SQLite), as the ORM reads it."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = parse_datetime(str(value))
    assert parsed is not None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def test_adjudication_fingerprint_equals_the_orm_aggregates(scene: Scene) -> None:
    def orm(round: Any) -> tuple[Any, ...]:
        items = Item.objects.filter(study=scene.study)
        if round is not None:
            items = items.filter(round=round)
        return (
            items.count(),
            ItemAgreement.objects.count(),
            ItemAgreement.objects.aggregate(at=Max("computed_at"))["at"],
            Decision.objects.count(),
            Decision.objects.aggregate(at=Max("updated_at"))["at"],
        )

    def fast(round: Any) -> tuple[Any, ...]:
        found = sql.adjudication_fingerprint(scene.study.pk, round.pk if round else None)
        return (found[0], found[1], _moment(found[2]), found[3], _moment(found[4]))

    assert fast(None) == orm(None) == (4, 0, None, 0, None)
    label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    other = create_round(study=scene.study)
    for round in (None, scene.world.round, other):
        assert fast(round) == orm(round)
    assert fast(None)[:2] == (4, 2) and fast(None)[3] == 1
