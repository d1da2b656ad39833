"""A prioritised screening round: the plan declared before the first decision, the seeded
random order until a relevant and an irrelevant decision exist, then the model's order with
the rank kept on each assignment, k screeners per item, breadth first."""

from __future__ import annotations

import pytest

from annotator.screening import models, ranking
from annotator.screening.decisions import decision_count
from annotator.screening.models import ScreeningModel, ScreeningPlan
from annotator.screening.retrain import retrain
from annotator.screening.services import (
    ScreeningError,
    after_screening_decision,
    declare_screening,
)
from annotator.studies.models import Assignment, Item, Round, ScreeningRank
from annotator.studies.services import next_assignment
from tests.screening.world import screening_world

pytestmark = pytest.mark.django_db


def test_the_models_choices_are_the_rankers_models() -> None:
    assert models.MODELS == ranking.MODELS and models.DEFAULT_MODEL == ranking.DEFAULT_MODEL


def test_a_screening_round_declares_relevant_and_the_rule_with_a_time() -> None:
    sw = screening_world(n=20)
    plan = ScreeningPlan.objects.get(round=sw.world.round)
    assert sw.world.round.kind == Round.Kind.SCREENING
    assert plan.relevant_category.code == "relevant"
    assert plan.relevant_category.facet.key == "screening"
    assert plan.declared_at is not None and plan.target_recall == 0.95
    assert "recall < 95%" in plan.rule_text and "p < 0.05" in plan.rule_text
    assert Item.objects.filter(round=sw.world.round, quota=2).count() == 20


def test_the_rule_cannot_change_after_the_first_decision() -> None:
    sw = screening_world(n=10)
    declare_screening(round=sw.world.round, target_recall=0.9)  # before: allowed
    sw.screen(sw.screeners[0])
    plan = ScreeningPlan.objects.get(round=sw.world.round)
    with pytest.raises(ScreeningError, match=r"field .target_recall.*decisions already"):
        declare_screening(round=sw.world.round, target_recall=0.8)
    plan.refresh_from_db()
    assert plan.target_recall == 0.9


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target_recall", 1.0, "field 'target_recall'"),
        ("alpha", 0, "field 'alpha'"),
        ("looks", 0, "field 'looks'"),
        ("retrain_every", 0, "field 'retrain_every'"),
        ("model", "bert", "field 'model'"),
        ("relevant_category", 987654, "field 'relevant_category'"),
    ],
)
def test_a_bad_plan_is_refused_and_changes_nothing(field: str, value: object, message: str) -> None:
    sw = screening_world(n=5)
    before = ScreeningPlan.objects.get(round=sw.world.round)
    with pytest.raises(ScreeningError, match=message):
        declare_screening(round=sw.world.round, **{field: value})
    after = ScreeningPlan.objects.get(round=sw.world.round)
    assert (after.declared_at, after.target_recall, after.alpha, after.looks) == (
        before.declared_at,
        before.target_recall,
        before.alpha,
        before.looks,
    )


def test_a_main_round_cannot_take_a_screening_plan() -> None:
    sw = screening_world(n=3)
    main = sw.study.rounds.get(number=1)
    with pytest.raises(ScreeningError, match="field 'round': round 1 is a main round"):
        declare_screening(round=main)


def test_before_a_model_the_order_is_the_seeded_random_one() -> None:
    sw = screening_world(n=30)
    first = next_assignment(study=sw.study, annotator=sw.screeners[0])
    assert first is not None and first.screening_rank is None
    item = Item.objects.get(pk=first.item_id)
    assert item.position == 1  # the seeded shuffle's first
    assert not ScreeningRank.objects.exists()


def test_the_first_retrain_waits_for_a_relevant_and_an_irrelevant_decision() -> None:
    sw = screening_world(n=40, share=0.5, retrain_every=1000)
    a = sw.screeners[0]
    seen: set[bool] = set()
    started = None
    while started is None:
        assignment = sw.screen(a)
        assert assignment is not None
        seen.add(sw.truth[Item.objects.get(pk=assignment.item_id).issue_id])
        started = after_screening_decision(round_id=sw.world.round.pk)
        if len(seen) < 2:
            assert started is None
    assert seen == {True, False} and started.reason == "decisions"


def test_a_retrain_every_n_decisions() -> None:
    sw = screening_world(n=40, share=0.5, retrain_every=3)
    a = sw.screeners[0]
    sw.screen(a)
    sw.screen(a)
    assert decision_count(sw.world.round) == 2
    ScreeningModel.objects.create(
        round=sw.world.round, version=1, model="random", seed=0, training_hash="x"
    )  # a model exists: only the count can start one now
    assert after_screening_decision(round_id=sw.world.round.pk) is None
    sw.screen(a)
    job = after_screening_decision(round_id=sw.world.round.pk)
    assert job is not None
    # One job at a time: the queued one is returned, not a second.
    assert after_screening_decision(round_id=sw.world.round.pk) in (None, job)


def test_a_prioritised_round_hands_out_the_best_ranked_item_and_keeps_its_rank() -> None:
    sw = screening_world(n=200, share=0.1)
    a, b = sw.screeners
    while not (
        any(sw.truth[i.issue_id] for i in _screened(sw))
        and not all(sw.truth[i.issue_id] for i in _screened(sw))
    ):
        sw.screen(a), sw.screen(b)
    model = retrain(sw.world.round.pk)
    assert model.version == 1 and model.n_relevant >= 1 and model.n_irrelevant >= 1
    assert model.vocabulary_size > 0 and len(model.training_hash) == 64
    assert model.params["model"] == "tfidf-svm" and model.seed == sw.plan.seed
    top = ScreeningRank.objects.filter(round=sw.world.round).order_by("rank").first()
    assert top is not None and top.rank == 1
    given = next_assignment(study=sw.study, annotator=a)
    assert given is not None and given.item_id == top.item_id and given.screening_rank == 1
    # Breadth first: the second screener gets the same (half-screened) item, with its rank.
    second = next_assignment(study=sw.study, annotator=b)
    assert second is not None and second.item_id == top.item_id and second.screening_rank == 1
    stored = Assignment.objects.get(pk=given.pk)
    assert stored.screening_rank == 1


def test_prioritised_screening_meets_the_relevant_issues_early() -> None:
    """Planted signal: after the first model, the next 20 items are mostly relevant, where the
    random order gives 10%."""
    sw = screening_world(n=200, share=0.1, retrain_every=10)
    a, b = sw.screeners
    while not (
        any(sw.truth[i.issue_id] for i in _screened(sw))
        and not all(sw.truth[i.issue_id] for i in _screened(sw))
    ):
        sw.screen(a), sw.screen(b)
    retrain(sw.world.round.pk)
    found = []
    for _ in range(20):
        assignment = sw.screen(a)
        sw.screen(b)
        assert assignment is not None
        found.append(sw.truth[Item.objects.get(pk=assignment.item_id).issue_id])
    assert sum(found) >= 12  # 16 relevant left of 200; random would give ~2


def test_every_item_goes_to_k_screeners_and_no_more() -> None:
    sw = screening_world(n=30, share=0.3)
    a, b = sw.screeners
    for turn in range(30):
        sw.screen(a), sw.screen(b)
        if turn == 5:
            retrain(sw.world.round.pk)
    assert sw.screen(a) is None and sw.screen(b) is None
    counts = list(
        Item.objects.filter(round=sw.world.round).values_list("submitted_count", flat=True)
    )
    assert counts == [2] * 30
    assert Assignment.objects.filter(item__round=sw.world.round).count() == 60


def _screened(sw) -> list[Item]:  # type: ignore[no-untyped-def]
    return list(Item.objects.filter(round=sw.world.round, submitted_count__gte=1))
