"""Reliability on a sample: a seeded, stratified share of a main round's items goes to k
annotators and the rest to one. The draw is reproducible from its seed, proportional per
repository, recorded on the selection; the next-item order fills the quotas (at most k, at
most one outside the sample); single items are decided as "single", never "unanimous"; and a
new k leaves the single items at one."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.adjudication.models import Decision
from annotator.agreement._table import MISSING
from annotator.agreement.labels import load_label_table
from annotator.studies.models import Assignment, Item, Round, Selection
from annotator.studies.services import (
    StudyError,
    create_round,
    next_assignment,
    select_issues,
    submit_annotation,
    update_study,
)
from tests.factories import IssueFactory, RepositoryFactory
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db


def sampled_world(share: int = 20, seed: int = 7, k: int = 2) -> tuple[World, Round, Selection]:
    """A k = 2 study with three annotators and a main round 2 of 30 + 20 issues of two
    repositories, `share` % of them in the reliability sample."""
    world = make_world(items=1, k=k, annotators=3)
    round = create_round(study=world.study, kind=Round.Kind.MAIN)
    ids = []
    for owner, name, n in (("microsoft", "DeepSpeed", 30), ("NVIDIA", "Megatron-LM", 20)):
        repository = RepositoryFactory(owner=owner, name=name)
        ids += [IssueFactory(repository=repository).pk for _ in range(n)]
    selection = select_issues(
        study=world.study,
        round=round,
        filters={"q": ""},
        seed=1,
        reliability_share=share,
        reliability_seed=seed,
        user=world.owner,
    )
    return world, round, selection


def sample_of(round: Round) -> set[int]:
    return set(
        Item.objects.filter(round=round, reliability_sample=True).values_list("issue", flat=True)
    )


def test_the_share_is_drawn_per_repository_and_recorded():
    _world, round, selection = sampled_world(share=20)
    items = Item.objects.filter(round=round)
    assert items.count() == 50
    double = items.filter(reliability_sample=True)
    assert double.count() == 10 and set(double.values_list("quota", flat=True)) == {2}
    assert set(items.filter(reliability_sample=False).values_list("quota", flat=True)) == {1}
    assert selection.reliability_strata == {
        "NVIDIA/Megatron-LM": {"items": 20, "double": 4},
        "microsoft/DeepSpeed": {"items": 30, "double": 6},
    }
    assert selection.reliability_seed == 7
    text = selection.method_text
    assert "Reliability sample: 20% of the 50 items (10)" in text and "seed 7" in text


def test_the_same_seed_draws_the_same_sample():
    world, round, _ = sampled_world(seed=11)
    first = sample_of(round)
    Item.objects.filter(round=round).delete()
    Selection.objects.filter(round=round).delete()
    select_issues(
        study=world.study,
        round=round,
        filters={"q": ""},
        seed=1,
        reliability_share=20,
        reliability_seed=11,
    )
    assert sample_of(round) == first
    Item.objects.filter(round=round).delete()
    select_issues(
        study=world.study,
        round=round,
        filters={"q": ""},
        seed=1,
        reliability_share=20,
        reliability_seed=12,
    )
    assert sample_of(round) != first and len(sample_of(round)) == len(first) == 10


def test_refusals_name_the_field():
    world = make_world(items=1)
    calibration = create_round(study=world.study, kind=Round.Kind.CALIBRATION)
    with pytest.raises(StudyError, match=r"reliability_share.*calibration round"):
        select_issues(study=world.study, round=calibration, filters={}, reliability_share=20)
    with pytest.raises(StudyError, match=r"reliability_share.*1 to 99"):
        select_issues(study=world.study, round=world.round, filters={}, reliability_share=100)
    update_study(study=world.study, name=world.study.name, guidelines="", overlap_k=1)
    with pytest.raises(StudyError, match=r"reliability_share.*k is 1"):
        select_issues(study=world.study, round=world.round, filters={}, reliability_share=20)
    assert not Selection.objects.filter(reliability_share__isnull=False).exists()


def test_labeling_fills_k_inside_the_sample_and_one_outside():
    world, round, _ = sampled_world(share=20)
    labels = world.labels(screening="relevant", symptom="hang")
    for person in world.annotators:
        while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
            submit_annotation(assignment=assignment, user=person, labels=labels)
    items = Item.objects.filter(round=round)
    assert all(i.submitted_count == i.quota for i in items)
    submitted = Assignment.objects.filter(item__round=round, status="submitted")
    assert submitted.count() == 10 * 2 + 40
    sources = dict(
        Decision.objects.filter(item__round=round)
        .values_list("item__reliability_sample", "source")
        .distinct()
    )
    assert sources == {True: "unanimous", False: "single"}
    # agreement reads the double-labelled items only: the single ones carry no pairs
    table = load_label_table(study_id=world.study.pk, version=world.version, round_id=round.pk)
    facet = next(f for f in table.facets if f.key == "symptom")
    assert facet.table.n_units == 50
    assert int(((facet.table.codes != MISSING).sum(axis=1) >= 2).sum()) == 10


def test_a_new_k_leaves_the_single_items_at_one():
    world, round, _ = sampled_world(share=20)
    update_study(study=world.study, name=world.study.name, guidelines="", overlap_k=3)
    items = Item.objects.filter(round=round)
    assert set(items.filter(reliability_sample=True).values_list("quota", flat=True)) == {3}
    assert set(items.filter(reliability_sample=False).values_list("quota", flat=True)) == {1}


def test_the_selection_page_takes_the_share_and_refuses_it_on_a_calibration_round(client):
    world = make_world(items=1)
    repository = RepositoryFactory(owner="microsoft", name="DeepSpeed")
    for _ in range(10):
        IssueFactory(repository=repository)
    client.force_login(world.owner)
    url = reverse("studies:select", args=[world.study.pk])
    form = {"repository": repository.pk, "kind": "issue", "stratify": "on"}
    refused = client.post(url, {**form, "round": "new-calibration", "reliability_share": 30})
    assert refused.status_code == 400 and "calibration round" in refused.content.decode()
    assert world.study.rounds.count() == 1  # the refused selection left no round behind
    response = client.post(
        url, {**form, "round": "new-main", "reliability_share": 30, "reliability_seed": 5}
    )
    assert response.status_code == 302
    selection = Selection.objects.get(reliability_share=30)
    assert selection.reliability_seed == 5
    assert Item.objects.filter(round=selection.round, reliability_sample=True).count() == 3
    study_page = client.get(world.study.get_absolute_url()).content.decode()
    assert "Reliability sample: 30% of the 10 items (3)" in study_page


def test_the_api_takes_the_share(client):
    world = make_world(items=1)
    repository = RepositoryFactory(owner="microsoft", name="DeepSpeed")
    for _ in range(10):
        IssueFactory(repository=repository)
    client.force_login(world.owner)
    new = create_round(study=world.study, kind=Round.Kind.MAIN)
    response = client.post(
        f"/api/studies/{world.study.pk}/selections/",
        {"round": new.pk, "repository": repository.pk, "reliability_share": 50},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["reliability_share"] == 50 and body["reliability_strata"] == {
        "microsoft/DeepSpeed": {"items": 10, "double": 5}
    }
