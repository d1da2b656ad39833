# ruff: noqa: RUF003 -- α and χ² are the notation of the statistics.
"""Per-annotator diagnostics: the marginal-homogeneity tests against statsmodels, the pure
pieces, and a planted round where one annotator is biased toward one category."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import SquareTable

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.agreement.annotators import (
    Activity,
    crosstab,
    decision_agreement,
    learning_curve,
    marginal_homogeneity,
)
from annotator.agreement.annotators_service import diagnostics_csv, round_annotator_diagnostics
from annotator.agreement.models import AgreementRun, AnnotatorDiagnostics
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.studies.models import Item
from annotator.studies.services import next_assignment, skip_assignment, submit_annotation
from tests.studies.factories import World, make_world

SYMPTOMS = ["failure", "hang", "oom", "crash", "slow", "other"]
TABLES = [
    [[20, 3, 1], [2, 15, 4], [6, 1, 12]],
    [[10, 5, 0, 2], [1, 8, 3, 0], [4, 0, 9, 2], [1, 1, 3, 7]],
    [[35, 2], [9, 30]],
    [[5, 1, 2, 0, 1], [0, 7, 1, 1, 0], [3, 0, 6, 2, 1], [0, 2, 0, 9, 1], [1, 0, 3, 0, 4]],
]


# --- the tests of marginal homogeneity --------------------------------------------------------
@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("method", ["stuart_maxwell", "bhapkar"])
def test_marginal_homogeneity_equals_statsmodels(table, method):
    ours = marginal_homogeneity(table, method=method)
    theirs = SquareTable(np.asarray(table), shift_zeros=False).homogeneity(method=method)
    assert ours["statistic"] == pytest.approx(theirs.statistic, abs=1e-10, rel=0)
    assert ours["df"] == theirs.df
    assert ours["p_value"] == pytest.approx(theirs.pvalue, abs=1e-10, rel=0)
    assert ours["dropped"] == 0


def test_categories_neither_rater_used_are_dropped_and_counted():
    table = np.array(TABLES[0])
    padded = np.zeros((5, 5), dtype=int)
    padded[np.ix_([0, 2, 4], [0, 2, 4])] = table
    ours = marginal_homogeneity(padded)
    assert ours["dropped"] == 2 and ours["df"] == 2
    assert ours["statistic"] == pytest.approx(marginal_homogeneity(table)["statistic"], abs=1e-12)


def test_identical_margins_give_zero_and_a_singular_covariance_is_undefined():
    assert marginal_homogeneity([[4, 0], [0, 6]])["statistic"] == 0.0  # perfect agreement
    assert marginal_homogeneity([[4, 0], [0, 6]])["p_value"] == 1.0
    singular = marginal_homogeneity([[0, 3], [0, 0]], method="bhapkar")  # V = 0 after d dᵀ
    assert singular["statistic"] is None and "singular" in singular["note"]
    assert marginal_homogeneity([[7]])["df"] == 0


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        marginal_homogeneity(TABLES[0], method="mcnemar")


# --- the pure pieces --------------------------------------------------------------------------
def test_crosstab_counts_the_units_both_rated():
    a = np.array([0, 1, -1, 2, 1])
    b = np.array([0, 2, 1, -1, 2])
    assert crosstab(a, b, 3).tolist() == [[1, 0, 0], [0, 0, 2], [0, 0, 0]]


def test_decision_agreement_counts_rated_and_decided_units_only():
    codes = np.array([0, 1, 1, -1, 2])
    decided = np.array([0, 1, 2, 0, -1])
    assert decision_agreement(codes, decided) == {
        "decided": 3,
        "agree_decided": 2,
        "decision_agreement": 2 / 3,
    }


def test_learning_curve_windows_follow_submission_order_with_the_remainder_in_the_last():
    n = 13
    position = np.arange(n, 0, -1)  # the rows were submitted in reverse
    decided = np.zeros(n, dtype=np.int64)
    codes = np.where(position <= 5, 1, 0)  # the first five submitted disagree
    curve = learning_curve(codes, decided, position, window=5)
    assert [(w["first"], w["last"], w["n"]) for w in curve] == [(1, 5, 5), (6, 13, 8)]
    assert [w["agreement"] for w in curve] == [0.0, 1.0]
    assert learning_curve(codes[:4], decided[:4], position[:4], window=5) == []


def test_activity_rates():
    row = Activity(rater=1, name="a", assigned=5, submitted=3, skipped=1, seconds=[4, 10, 6])
    assert row.to_dict()["skip_rate"] == 0.25 and row.to_dict()["median_seconds"] == 6.0
    assert Activity(rater=2, name="b").to_dict()["skip_rate"] is None


def test_the_pure_module_imports_no_django():
    code = "import sys, annotator.agreement.annotators; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- a planted round --------------------------------------------------------------------------
def planted_world(*, items: int = 40, seed: int = 3, bias: float = 0.6) -> World:
    """Three annotators label `items` issues. The first two copy the item's true symptom with
    probability 0.85 (else draw one at random); the third answers "crash" with probability
    `bias` and otherwise behaves like them. Items without a unanimous decision are decided
    with the true labels. The third marks symptom unsure on every fourth item."""
    world = make_world(items=items, k=3, annotators=3)
    rng = random.Random(seed)
    truth = {issue.pk: rng.choice(SYMPTOMS) for issue in world.issues}
    for n, person in enumerate(world.annotators):
        for i in range(items):
            assignment = next_assignment(study=world.study, annotator=person)
            assert assignment is not None
            symptom = truth[assignment.item.issue_id]
            if n == 2 and rng.random() < bias:
                symptom = "crash"
            elif rng.random() > 0.85:
                symptom = rng.choice(SYMPTOMS)
            labels = world.labels(screening="relevant", symptom=symptom, fix=["config"])
            unsure = ["symptom"] if n == 2 and i % 4 == 0 else []
            submit_annotation(assignment=assignment, user=person, labels=labels, unsure=unsure)
    _decide_the_rest(world, truth)
    return world


def _decide_the_rest(world: World, truth: dict[int, str]) -> None:
    for item in Item.objects.filter(round=world.round, decision__isnull=True):
        decision = Decision.objects.create(item=item, source="adjudicated", reason="other")
        for facet, code in [("symptom", truth[item.issue_id]), ("screening", "relevant")]:
            category = world.category(facet, code)
            DecisionLabel.objects.create(decision=decision, facet=category.facet, category=category)


def compute_diagnostics(world: World, *, round: Any = None) -> AgreementRun:
    """An agreement run of the round over every facet, as the page's button starts it; the run
    stores the round's per-annotator diagnostics."""
    run = start_agreement_run(study=world.study, round=round or world.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.SUCCEEDED, run.error
    return run


def facet_of(report: dict[str, Any], key: str) -> dict[str, Any]:
    return next(f for f in report["facets"] if f["key"] == key)


@pytest.mark.django_db
def test_a_biased_annotator_is_flagged_by_stuart_maxwell_and_lowers_alpha():
    world = planted_world()
    report = round_annotator_diagnostics(study=world.study, round=world.round)
    symptom = facet_of(report, "symptom")
    biased = world.annotators[2].username
    p = {tuple(pair["raters"]): pair["stuart_maxwell"]["p_value"] for pair in symptom["pairs"]}
    for pair, value in p.items():
        if biased in pair:
            assert value < 0.05, pair
        else:
            assert value >= 0.05, pair
    rows = {row["name"]: row for row in symptom["annotators"]}
    assert rows[biased]["alpha_without"] > symptom["alpha_all"]
    for other in world.annotators[:2]:
        assert rows[other.username]["alpha_without"] < symptom["alpha_all"]
        assert rows[other.username]["decision_agreement"] > rows[biased]["decision_agreement"]
    assert rows[biased]["profile"]["crash"] > symptom["pooled_profile"]["crash"]
    assert rows[biased]["unsure_rate"] == pytest.approx(10 / 40)
    assert rows[world.annotators[0].username]["unsure_rate"] == 0
    assert rows[biased]["other_rate"] < rows[world.annotators[0].username]["other_rate"] + 0.2
    assert [w["n"] for w in rows[biased]["learning_curve"]] == [5] * 8
    assert symptom["decided_units"] == 40


@pytest.mark.django_db
def test_skips_time_and_the_csv():
    world = make_world(items=6, k=2, annotators=2)
    first, second = world.annotators
    labels = world.labels(screening="relevant", symptom="hang", fix=[])
    for seconds in (30, 5, 12, 40, 7, 9):
        assignment = next_assignment(study=world.study, annotator=first)
        submit_annotation(assignment=assignment, user=first, labels=labels, seconds_spent=seconds)
    skip_assignment(
        assignment=next_assignment(study=world.study, annotator=second), user=second, reason="x"
    )
    assignment = next_assignment(study=world.study, annotator=second)
    submit_annotation(assignment=assignment, user=second, labels=labels)
    report = round_annotator_diagnostics(study=world.study, round=world.round)
    activity = {a["name"]: a for a in report["annotators"]}
    assert activity[second.username]["skipped"] == 1
    assert activity[second.username]["skip_rate"] == 0.5
    assert activity[first.username]["skip_rate"] == 0
    assert activity[first.username]["median_seconds"] == 10.5  # of 5 7 9 12 30 40
    text = diagnostics_csv(report)
    lines = text.strip().splitlines()
    assert lines[0].startswith("facet,annotator,ratings,alpha_all,alpha_without")
    assert any(line.startswith(f"symptom,{second.username},1,") for line in lines)


# --- stored with the agreement run ------------------------------------------------------------
def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [3, 11])
def test_the_run_stores_the_figures_the_round_computes(seed):
    """What an agreement run of the round stores is, figure for figure, what
    `round_annotator_diagnostics` computes from the database on the same labels."""
    world = planted_world(items=30, seed=seed)
    run = compute_diagnostics(world)
    stored = AnnotatorDiagnostics.objects.get(run=run)
    live = round_annotator_diagnostics(study=world.study, round=world.round)
    assert stored.report == _json(live)
    symptom = facet_of(stored.report, "symptom")
    assert len(symptom["annotators"]) == 3 and symptom["pairs"]
    assert stored.seconds >= 0


@pytest.mark.django_db
def test_runs_of_all_rounds_or_of_chosen_facets_store_no_diagnostics():
    world = planted_world(items=10)
    for kwargs in ({"round": None}, {"round": world.round, "facets": ["symptom"]}):
        run = start_agreement_run(study=world.study, enqueue=False, **kwargs)
        run_agreement_run(run_id=run.pk)
        run.refresh_from_db()
        assert run.status == AgreementRun.Status.SUCCEEDED
    assert not AnnotatorDiagnostics.objects.exists()


# --- the vectorised pieces against the loops they replaced ------------------------------------
def _learning_curve_by_loop(codes, decided, position, *, window):
    """The learning curve as it was first written, one window at a time (the oracle)."""
    both = (codes >= 0) & (decided != -1) & (position > 0)
    order = np.argsort(position[both], kind="stable")
    hits = (codes[both] == decided[both])[order]
    places = position[both][order]
    count = len(hits) // window
    out = []
    for w in range(count):
        stop = len(hits) if w == count - 1 else (w + 1) * window
        part = slice(w * window, stop)
        out.append(
            {
                "first": int(places[part][0]),
                "last": int(places[part][-1]),
                "n": stop - w * window,
                "agreement": float(hits[part].mean()),
            }
        )
    return out


def _other_rate_by_loop(table, j, other_labels):
    """The other rate as it was first written, one rating at a time (the oracle)."""
    rated = table.codes[:, j] >= 0
    values = [table.values[c] for c in table.codes[rated, j]]
    sets = [frozenset(v) if isinstance(v, frozenset) else frozenset([v]) for v in values]
    return sum(bool(s & other_labels) for s in sets) / int(rated.sum())


@pytest.mark.parametrize("seed", range(6))
def test_the_learning_curve_and_other_rate_equal_the_loops_they_replaced(seed):
    from annotator.agreement._table import encode
    from annotator.agreement.annotators import FacetInput, _rater_rates

    rng = np.random.default_rng(seed)
    n, window = int(rng.integers(0, 60)), int(rng.integers(2, 8))
    codes = rng.integers(-1, 4, n)
    decided = rng.integers(-2, 4, n)
    position = rng.permutation(n + 3)[:n]  # some rows not submitted (0), others out of order
    ours = learning_curve(codes, decided, position, window=window)
    assert ours == _learning_curve_by_loop(codes, decided, position, window=window)
    choices = [None, "hang", "other", "oom-other", "crash"]
    rows = [[rng.choice(choices) for _ in range(3)] for _ in range(max(n, 1))]
    rows = [[None if c == "None" else c for c in row] for row in rows]
    table = encode(rows, ["hang", "other", "oom-other", "crash"], [1, 2, 3])
    other = frozenset({"other", "oom-other"})
    shape = table.codes.shape
    facet = FacetInput(
        key="symptom",
        name="Symptom",
        kind="single",
        table=table,
        decided=[None] * shape[0],
        position=np.zeros(shape, dtype=np.int64),
        unsure=np.zeros(shape, dtype=bool),
        other_labels=other,
    )
    for j in range(3):
        if (table.codes[:, j] >= 0).any():
            assert _rater_rates(facet, j)["other_rate"] == _other_rate_by_loop(table, j, other)
