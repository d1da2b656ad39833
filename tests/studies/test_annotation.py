"""Drafts, submits and their validation; proposals; the label usage hook; sampling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.studies import sampling
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, Selection
from annotator.studies.services import (
    LabelErrors,
    StudyError,
    next_assignment,
    propose_category,
    save_draft,
    select_issues,
    submit_annotation,
)
from annotator.studies.usage import StudyLabelUsage
from taxonomy_app.models import Proposal
from taxonomy_app.usage import label_usage
from tests.factories import IssueFactory, RepositoryFactory
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db


def start(world, index=0):
    person = world.annotators[index]
    return person, next_assignment(study=world.study, annotator=person)


def test_draft_keeps_labels_and_notes_across_saves(world):
    a, assignment = start(world)
    save_draft(
        assignment=assignment,
        user=a,
        labels=world.labels(symptom="hang"),
        notes="n1",
        seconds_spent=12,
    )
    save_draft(
        assignment=assignment,
        user=a,
        labels=world.labels(symptom="oom", fix=["version", "config"]),
        notes="n2",
        seconds_spent=30,
    )
    annotation = Annotation.objects.get()
    assert (annotation.status, annotation.notes, annotation.seconds_spent) == ("draft", "n2", 30)
    codes = sorted(AnnotationLabel.objects.values_list("category__code", flat=True))
    assert codes == ["config", "oom", "version"]
    assert Item.objects.get(pk=assignment.item_id).submitted_count == 0


def test_submit_requires_required_facets_and_writes_nothing(world):
    a, assignment = start(world)
    with pytest.raises(LabelErrors) as refused:
        submit_annotation(assignment=assignment, user=a, labels=world.labels(symptom="hang"))
    assert refused.value.errors == {"screening": "required: choose a category"}
    assert not Annotation.objects.exists()
    assert Assignment.objects.get().status == "assigned"


def test_single_choice_facet_takes_one_category(world):
    a, assignment = start(world)
    with pytest.raises(LabelErrors) as refused:
        submit_annotation(
            assignment=assignment, user=a, labels=world.labels(screening=["relevant", "not-a-bug"])
        )
    assert refused.value.errors == {"screening": "choose one category only"}


def test_category_of_another_facet_is_refused(world):
    a, assignment = start(world)
    labels = world.labels(screening="relevant")
    labels[next(iter(labels))] = [world.category("symptom", "hang").pk]
    with pytest.raises(LabelErrors, match="choose among"):
        submit_annotation(assignment=assignment, user=a, labels=labels)


def test_second_submit_updates_the_same_annotation(world):
    a, assignment = start(world)
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="not-a-bug"))
    annotation = Annotation.objects.get()
    assert annotation.status == "submitted" and annotation.submitted_at
    assert list(annotation.labels.values_list("category__code", flat=True)) == ["not-a-bug"]
    assert Item.objects.get(pk=assignment.item_id).submitted_count == 1


def test_nobody_writes_to_someone_elses_assignment(world):
    _, assignment = start(world)
    with pytest.raises(StudyError, match="someone else"):
        save_draft(assignment=assignment, user=world.annotators[1], labels={})


def test_changed_since_labeled(world):
    a, assignment = start(world)
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    assignment = Assignment.objects.select_related("annotation", "item__issue").get()
    assert not assignment.changed_since_labeled
    issue = assignment.item.issue
    issue.changed_at = timezone.now() + timedelta(minutes=1)
    issue.save()
    assert (
        Assignment.objects.select_related("annotation", "item__issue").get().changed_since_labeled
    )


def test_propose_category_creates_a_proposal_naming_the_issue(world):
    a, assignment = start(world)
    facet = world.category("symptom", "hang").facet
    proposal = propose_category(
        assignment=assignment,
        user=a,
        facet_id=facet.pk,
        name="Checkpoint mismatch",
        rationale="resume fails",
    )
    assert Proposal.objects.get() == proposal
    assert proposal.proposed_by == a and proposal.issue.endswith(
        f"/issues/{assignment.item.issue.number}"
    )
    with pytest.raises(StudyError, match="name"):
        propose_category(assignment=assignment, user=a, facet_id=facet.pk, name=" ")


def test_label_usage_hook_counts_lists_and_moves_labels(world):
    a, assignment = start(world)
    submit_annotation(
        assignment=assignment, user=a, labels=world.labels(screening="relevant", symptom="hang")
    )
    hang, oom = world.category("symptom", "hang"), world.category("symptom", "oom")
    usage = label_usage()
    assert isinstance(usage, StudyLabelUsage)
    assert usage.count_labels([hang.pk, oom.pk], viewer=world.owner) == {hang.pk: 1}
    assert len(usage.labels_using(hang.pk)) == 1
    assert usage.relabel({hang.pk: oom.pk}) == 1
    assert usage.count_labels([hang.pk, oom.pk], viewer=world.owner) == {oom.pk: 1}


def test_selection_records_filters_counts_and_seed_and_is_reproducible():
    world = make_world(items=0)
    deepspeed = RepositoryFactory(owner="deepspeedai", name="DeepSpeed")
    megatron = RepositoryFactory(owner="NVIDIA", name="Megatron-LM")
    for _ in range(30):
        IssueFactory(repository=deepspeed, state="closed")
    for _ in range(10):
        IssueFactory(repository=megatron, state="closed")
    IssueFactory(repository=megatron, state="open")
    selection = select_issues(
        study=world.study,
        round=world.round,
        filters={"state": "closed"},
        sample_size=8,
        seed=42,
        user=world.owner,
    )
    assert (selection.matched, selection.sampled, selection.added, selection.seed) == (40, 8, 8, 42)
    assert selection.strata == {
        "NVIDIA/Megatron-LM": {"matched": 10, "sampled": 2},
        "deepspeedai/DeepSpeed": {"matched": 30, "sampled": 6},
    }
    assert (
        "seed 42" in selection.method_text and "stratified by repository" in selection.method_text
    )
    assert Item.objects.count() == 8
    # the same seed on the same candidates picks the same issues
    ids = sampling.stratified_sample(
        [(pk, "a" if pk % 2 else "b") for pk in range(100)], 10, seed=42
    ).ids
    assert (
        ids
        == sampling.stratified_sample(
            [(pk, "a" if pk % 2 else "b") for pk in range(100)], 10, seed=42
        ).ids
    )
    # a second selection adds only issues new to the study
    again = select_issues(
        study=world.study, round=world.round, filters={"state": "closed"}, user=world.owner
    )
    assert (again.matched, again.added) == (32, 32)
    assert Selection.objects.filter(study=world.study).count() == 3  # make_world's, then two
    assert Item.objects.count() == 40


@pytest.mark.parametrize(
    ("sizes", "n", "expected"),
    [
        ({"a": 30, "b": 10}, 8, {"a": 6, "b": 2}),
        ({"a": 5, "b": 5, "c": 5}, 4, {"a": 2, "b": 1, "c": 1}),
        ({"a": 1, "b": 99}, 10, {"a": 0, "b": 10}),
        ({"a": 3, "b": 2}, 10, {"a": 3, "b": 2}),
    ],
)
def test_proportional_allocation_by_largest_remainder(sizes, n, expected):
    assert sampling.allocate(sizes, n) == expected


def test_round_progress_is_exact_unless_an_age_is_allowed(world):
    from annotator.studies.services.progress import round_progress

    a, assignment = start(world)
    round_id = assignment.item.round_id
    before = round_progress(round_id=round_id)
    assert round_progress(round_id=round_id, max_age=5) == before  # cached now
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    assert round_progress(round_id=round_id).done == before.done + 1
    assert round_progress(round_id=round_id, max_age=5) == before  # up to 5 s old
