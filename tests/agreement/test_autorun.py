"""Runs start by themselves when a round completes: through the submit hook and the beat sweep."""

from __future__ import annotations

import pytest

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import on_round_progress, start_runs_for_completed_rounds
from annotator.studies.models import Item
from annotator.studies.services import next_assignment, submit_annotation
from tests.agreement.factories import labelled_world

pytestmark = pytest.mark.django_db


def test_sweep_starts_one_run_per_completed_round_and_not_twice():
    world = labelled_world(items=4, annotators=2)
    runs = start_runs_for_completed_rounds()
    assert [(r.round, r.trigger) for r in runs] == [(world.round, "round_complete")]
    assert start_runs_for_completed_rounds() == []


def test_an_incomplete_round_starts_nothing():
    labelled_world(items=4, annotators=2, skip_last=1)
    assert start_runs_for_completed_rounds() == []
    assert not AgreementRun.objects.exists()


def test_the_submit_that_completes_the_round_starts_a_run(django_capture_on_commit_callbacks):
    world = labelled_world(items=3, annotators=2, skip_last=1)
    person = world.annotators[-1]
    assignment = next_assignment(study=world.study, annotator=person)
    for item in Item.objects.exclude(pk=assignment.item_id):
        with django_capture_on_commit_callbacks(execute=True):
            on_round_progress(item_id=item.pk)  # complete items of an incomplete round
    assert not AgreementRun.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        submit_annotation(
            assignment=assignment, user=person, labels=world.labels(screening="relevant")
        )
        on_round_progress(item_id=assignment.item_id)  # the line studies' submit will call
    run = AgreementRun.objects.get()
    assert run.round == world.round and run.trigger == "round_complete"
