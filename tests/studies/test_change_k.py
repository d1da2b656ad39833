"""Changing k: allowed before labeling starts, either way; refused once an open main round has
a submitted label (it left items complete without a decision, or "unanimous" on fewer labels
than k), with nothing changed; a closed round keeps its quotas whatever k becomes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.adjudication.models import Decision
from annotator.studies.errors import StudyError
from annotator.studies.models import Item, Study
from annotator.studies.services import (
    close_round,
    create_round,
    next_assignment,
    select_issues,
    submit_annotation,
    update_study,
)
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db


def set_k(study: Study, k: int) -> Study:
    return update_study(study=study, name=study.name, guidelines=study.guidelines, overlap_k=k)


def quotas(world: World) -> list[int]:
    return sorted(Item.objects.filter(round=world.round).values_list("quota", flat=True))


def submit_one(world: World) -> None:
    person = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=person)
    assert assignment is not None
    labels = world.labels(screening="relevant", symptom="hang")
    submit_annotation(assignment=assignment, user=person, labels=labels)


@pytest.mark.parametrize("new_k", [1, 3])
def test_k_changes_either_way_before_labeling_starts(new_k):
    world = make_world(items=3, k=2, annotators=3)
    set_k(world.study, new_k)
    assert quotas(world) == [new_k] * 3


@pytest.mark.parametrize("new_k", [1, 3])
def test_k_is_refused_either_way_once_a_label_is_submitted_and_nothing_changes(new_k):
    world = make_world(items=3, k=2, annotators=3)
    submit_one(world)
    decisions = Decision.objects.count()
    with pytest.raises(StudyError, match="field 'overlap_k': round 1 already has submitted"):
        set_k(world.study, new_k)
    world.study.refresh_from_db()
    assert world.study.overlap_k == 2 and quotas(world) == [2, 2, 2]
    assert Decision.objects.count() == decisions


def test_the_same_k_with_labels_still_saves_the_name():
    world = make_world(items=2, k=2)
    submit_one(world)
    study = world.study
    update_study(study=study, name="Renamed", guidelines="", overlap_k=2)
    study.refresh_from_db()
    assert study.name == "Renamed"


def test_after_the_labelled_round_closes_k_applies_to_a_new_round_only():
    world = make_world(items=2, k=2)
    submit_one(world)
    close_round(round=world.round)
    later = create_round(study=world.study)
    select_issues(study=world.study, round=later, filters={}, repeat_issues=True, seed=3)
    set_k(world.study, 3)
    assert quotas(world) == [2, 2]
    assert sorted(Item.objects.filter(round=later).values_list("quota", flat=True)) == [3, 3]


def test_the_settings_page_says_why_and_keeps_k(client):
    world = make_world(items=2, k=2)
    submit_one(world)
    client.force_login(world.owner)
    form = {"name": world.study.name, "overlap_k": 1, "guidelines": ""}
    response = client.post(reverse("studies:edit", args=[world.study.pk]), form)
    assert "round 1 already has submitted labels with k = 2" in response.content.decode()
    world.study.refresh_from_db()
    assert world.study.overlap_k == 2


def test_the_api_update_keeps_k_whatever_it_is_sent():
    """The API's study update changes name, guidelines and routing; k only through the page."""
    from rest_framework.test import APIClient

    world = make_world(items=2, k=2)
    submit_one(world)
    client = APIClient()
    client.force_authenticate(world.owner)
    answer = client.patch(f"/api/studies/{world.study.pk}/update/", {"overlap_k": 3}, format="json")
    world.study.refresh_from_db()
    assert answer.status_code == 200 and answer.data["overlap_k"] == 2
    assert world.study.overlap_k == 2 and quotas(world) == [2, 2]
