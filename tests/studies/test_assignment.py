"""Handing out items: breadth first, k per item, one per annotator, skip, timeout."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator.studies.models import Assignment, Item
from annotator.studies.services import (
    StudyError,
    next_assignment,
    release_stale_assignments,
    save_draft,
    skip_assignment,
    submit_annotation,
)
from tests.factories import UserFactory
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db


def label(world, assignment, user):
    return submit_annotation(
        assignment=assignment, user=user, labels=world.labels(screening="relevant")
    )


def test_second_annotator_gets_the_item_the_first_started(world):
    a, b = world.annotators
    first = next_assignment(study=world.study, annotator=a)
    second = next_assignment(study=world.study, annotator=b)
    assert second.item_id == first.item_id  # breadth first: fill started items


def test_next_item_resumes_the_open_assignment(world):
    a = world.annotators[0]
    assert next_assignment(study=world.study, annotator=a) == next_assignment(
        study=world.study, annotator=a
    )


def test_items_complete_before_new_ones_start():
    world = make_world(items=3, k=2, annotators=3)
    a, b, c = world.annotators
    label(world, next_assignment(study=world.study, annotator=a), a)
    first = next_assignment(study=world.study, annotator=b)
    label(world, first, b)
    # the first item is full (k = 2): c starts the next one; a joins c's item, not a fresh one
    third = next_assignment(study=world.study, annotator=c)
    assert third.item_id != first.item_id
    assert next_assignment(study=world.study, annotator=a).item_id == third.item_id


def test_nobody_gets_an_item_twice_and_no_item_exceeds_k():
    world = make_world(items=3, k=2, annotators=3)
    for _ in range(3):
        for person in world.annotators:
            assignment = next_assignment(study=world.study, annotator=person)
            if assignment:
                label(world, assignment, person)
    assert Item.objects.filter(submitted_count=2).count() == 3
    assert Assignment.objects.count() == 6
    for person in world.annotators:
        items = list(Assignment.objects.filter(annotator=person).values_list("item", flat=True))
        assert len(items) == len(set(items))


def test_all_done_when_no_item_needs_the_annotator():
    world = make_world(items=1, k=1, annotators=2)
    a, b = world.annotators
    label(world, next_assignment(study=world.study, annotator=a), a)
    assert next_assignment(study=world.study, annotator=b) is None
    assert next_assignment(study=world.study, annotator=a) is None


def test_calibration_round_gives_every_item_to_every_annotator():
    world = make_world(items=2, k=1, annotators=3, calibration=True)
    assert set(Item.objects.values_list("quota", flat=True)) == {3}
    for person in world.annotators:
        for _ in range(2):
            label(world, next_assignment(study=world.study, annotator=person), person)
        assert next_assignment(study=world.study, annotator=person) is None
    assert list(Item.objects.values_list("submitted_count", flat=True)) == [3, 3]


def test_database_refuses_a_second_assignment_of_the_same_pair(world):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(item=assignment.item, annotator=a)


def test_database_refuses_more_than_k_live_assignments(world):
    item = Item.objects.first()
    Item.objects.filter(pk=item.pk).update(active_count=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(active_count=F("active_count") + 1)


def test_database_refuses_more_submitted_than_live(world):
    item = Item.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(submitted_count=1)


def test_only_annotators_of_the_study_get_items(world):
    with pytest.raises(StudyError, match="annotators"):
        next_assignment(study=world.study, annotator=world.owner)
    with pytest.raises(StudyError):
        next_assignment(study=world.study, annotator=UserFactory())


def test_skip_frees_the_slot_and_is_never_offered_again():
    world = make_world(items=1, k=1, annotators=2)
    a, b = world.annotators
    assignment = next_assignment(study=world.study, annotator=a)
    skipped = skip_assignment(assignment=assignment, user=a, reason="conflict of interest")
    assert (skipped.status, skipped.skip_reason) == ("skipped", "conflict of interest")
    assert Item.objects.get().active_count == 0
    assert next_assignment(study=world.study, annotator=a) is None
    assert next_assignment(study=world.study, annotator=b) is not None


def test_skip_needs_a_reason_and_changes_nothing_without_one(world):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    with pytest.raises(StudyError, match="reason"):
        skip_assignment(assignment=assignment, user=a, reason="  ")
    assert Assignment.objects.get().status == "assigned"


def test_untouched_assignment_times_out_and_returns_to_the_pool():
    world = make_world(items=1, k=1, annotators=2)
    a, b = world.annotators
    stale = next_assignment(study=world.study, annotator=a)
    Assignment.objects.filter(pk=stale.pk).update(touched_at=timezone.now() - timedelta(hours=2))
    assert release_stale_assignments(minutes=60) == 1
    assert Assignment.objects.get(pk=stale.pk).status == "expired"
    assert Item.objects.get().active_count == 0
    taken = next_assignment(study=world.study, annotator=b)
    assert taken.item_id == stale.item_id


def test_recent_work_does_not_time_out(world):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    Assignment.objects.filter(pk=assignment.pk).update(
        touched_at=timezone.now() - timedelta(hours=2)
    )
    save_draft(assignment=assignment, user=a, labels={})  # a draft save is activity
    assert release_stale_assignments(minutes=60) == 0


def test_timed_out_work_is_taken_back_while_the_slot_is_free(world):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    Assignment.objects.filter(pk=assignment.pk).update(
        touched_at=timezone.now() - timedelta(hours=2)
    )
    release_stale_assignments(minutes=60)
    label(world, assignment, a)
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"
    assert Item.objects.get(pk=assignment.item_id).submitted_count == 1


def test_timed_out_work_cannot_be_submitted_once_someone_took_the_slot():
    world = make_world(items=1, k=1, annotators=2)
    a, b = world.annotators
    assignment = next_assignment(study=world.study, annotator=a)
    Assignment.objects.filter(pk=assignment.pk).update(
        touched_at=timezone.now() - timedelta(hours=2)
    )
    release_stale_assignments(minutes=60)
    next_assignment(study=world.study, annotator=b)
    with pytest.raises(StudyError, match="another annotator"):
        label(world, assignment, a)
    assert Item.objects.get().submitted_count == 0
