"""annotator/agreement/sql.py against the ORM queries it replaces: a run's label columns (on
SQLite, labels.py's ORM fallback is what runs) and the round-complete probe after a submit."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Exists, F, OuterRef

from annotator.agreement import labels
from annotator.agreement.sql import completed_round
from annotator.sql import Table, one_or_none
from annotator.studies.models import Annotation, AnnotationLabel, Item
from annotator.studies.services import next_assignment, save_draft, submit_annotation
from tests.agreement.factories import labelled_world

pytestmark = pytest.mark.django_db


def test_a_renamed_field_fails_when_a_statement_is_built():
    with pytest.raises(FieldDoesNotExist):
        _ = Table(Item, "i").submitted
    with pytest.raises(FieldDoesNotExist):
        Table(AnnotationLabel).c("label")


def _rows(columns: list[Any]) -> list[tuple[int, ...]]:
    """Aligned columns as sorted row tuples (the statements promise no order)."""
    return sorted(zip(*(column.tolist() for column in columns), strict=True))


# --- a run's label columns ----------------------------------------------------------------------
@pytest.fixture
def world():  # type: ignore[no-untyped-def]
    """Submitted labels of two annotators, and a third annotator's draft, which never counts."""
    world = labelled_world(items=4, annotators=2, skip_last=1)
    person = world.annotators[-1]
    assignment = next_assignment(study=world.study, annotator=person)
    assert assignment is not None
    save_draft(assignment=assignment, user=person, labels=world.labels(screening="relevant"))
    return world


def test_submitted_annotation_columns_equal_the_orm(world):
    annotations = Annotation.objects.filter(
        assignment__item__study=world.study, status=Annotation.Status.SUBMITTED
    )
    fields = ("id", "codebook_version_id", "assignment__item_id", "assignment__annotator_id")
    expected = sorted(annotations.values_list(*fields))

    assert _rows(labels._scope(world.study.pk, None)) == expected
    assert _rows(labels._scope(world.study.pk, world.round.pk)) == expected
    assert len(expected) == 7 and Annotation.objects.count() == 8  # the draft is left out
    assert _rows(labels._scope(world.study.pk, world.round.pk + 1)) == []
    assert _rows(labels._scope(world.study.pk + 1, None)) == []


def test_label_columns_equal_the_orm(world):
    facets = list(world.version.facets.order_by("pk").values_list("pk", flat=True))
    ids = sorted(Annotation.objects.values_list("pk", flat=True))
    low, high = ids[1], ids[-2]
    chosen = facets[:2]
    expected = sorted(
        AnnotationLabel.objects.filter(
            facet_id__in=chosen, annotation_id__gte=low, annotation_id__lte=high
        ).values_list("annotation_id", "facet_id", "category_id")
    )

    assert _rows(labels._labels(chosen, low, high)) == expected
    assert len(expected) > 4 and len({row[1] for row in expected}) == 2
    assert len(_rows(labels._labels(facets, ids[0], ids[-1]))) == AnnotationLabel.objects.count()
    assert _rows(labels._labels(facets, ids[-1] + 1, ids[-1] + 9)) == []


# --- the round-complete probe -------------------------------------------------------------------
def _orm_completed_round(item_id: int) -> int | None:
    """The ORM query completed_round replaced (services._start_if_complete)."""
    incomplete = Item.objects.filter(round=OuterRef("round"), submitted_count__lt=F("quota"))
    return one_or_none(
        Item.objects.filter(pk=item_id, submitted_count__gte=F("quota"))
        .exclude(Exists(incomplete))
        .values_list("round_id", flat=True)
    )


def _probe_both(item_ids: list[int]) -> tuple[dict[int, int | None], dict[int, int | None]]:
    return (
        {pk: completed_round(pk) for pk in item_ids},
        {pk: _orm_completed_round(pk) for pk in item_ids},
    )


def test_completed_round_equals_the_orm_exists_query_on_incomplete_and_complete_rounds():
    world = labelled_world(items=3, annotators=2, skip_last=1)
    items = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    absent = items[-1] + 100

    by_sql, by_orm = _probe_both([*items, absent])
    assert by_sql == by_orm
    assert set(by_sql.values()) == {None}  # complete items of an incomplete round, and one not
    assert Item.objects.filter(submitted_count__gte=F("quota")).count() == 2

    person = world.annotators[-1]
    assignment = next_assignment(study=world.study, annotator=person)
    assert assignment is not None
    submit_annotation(assignment=assignment, user=person, labels=world.labels(screening="relevant"))

    by_sql, by_orm = _probe_both([*items, absent])
    assert by_sql == by_orm
    assert by_sql == {**dict.fromkeys(items, world.round.pk), absent: None}
