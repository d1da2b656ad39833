"""Replaying known labels: prioritised order beats random where relevant issues share words;
runs are seeded and kept; the prior and the early stop behave as documented."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.screening.ranking import Ranker, random_order
from annotator.screening.simulate import inputs_hash, screening_order, simulate, wss

from .synthetic import vocabulary_dataset


def test_prioritised_screening_beats_random_order_on_shared_vocabulary() -> None:
    texts, labels = vocabulary_dataset(400, share=0.05)
    result = simulate(texts, labels, seed=0, runs=3)
    # 20 relevant of 400: a perfect ranking has WSS@95 = (400 - 19) / 400 - 0.05 = 0.9025.
    assert result.mean("wss@95") > 0.6
    assert result.mean("random_wss@95") < 0.3
    assert result.mean("wss@95") > result.mean("random_wss@95") + 0.4
    assert result.mean("erf@10") > 0.4
    assert result.mean("atd") < result.mean("random_atd") / 2


def test_runs_use_consecutive_seeds_and_keep_each_runs_values() -> None:
    texts, labels = vocabulary_dataset(120)
    result = simulate(texts, labels, seed=5, runs=3)
    assert [run.seed for run in result.runs] == [5, 6, 7]
    per_run = [run.summary()["wss@95"] for run in result.runs]
    assert result.mean("wss@95") == pytest.approx(np.mean(per_run))
    again = simulate(texts, labels, seed=5, runs=3)
    assert [run.found.tolist() for run in again.runs] == [run.found.tolist() for run in result.runs]


def test_the_random_baseline_is_the_seeded_permutation() -> None:
    texts, labels = vocabulary_dataset(60)
    result = simulate(texts, labels, seed=2, runs=2)
    for run in result.runs:
        expected = [labels[i] for i in random_order(60, run.seed).tolist()]
        assert run.random_found.tolist() == expected
        assert run.summary()["random_wss@95"] == pytest.approx(wss(expected, 0.95))


def test_the_random_model_screens_in_the_baselines_order() -> None:
    texts, labels = vocabulary_dataset(60)
    run = simulate(texts, labels, model="random", seed=1).runs[0]
    assert run.found.tolist() == run.random_found.tolist()


def test_the_order_is_a_permutation_and_starts_at_random_until_both_labels_are_seen() -> None:
    texts, labels = vocabulary_dataset(100)
    order = screening_order(Ranker.fit(texts), labels, seed=3).tolist()
    assert sorted(order) == list(range(100))
    permutation = random_order(100, 3).tolist()
    first_relevant = next(i for i, issue in enumerate(permutation) if labels[issue] == 1)
    first_irrelevant = next(i for i, issue in enumerate(permutation) if labels[issue] == 0)
    prior = max(first_relevant, first_irrelevant) + 1
    assert order[:prior] == permutation[:prior]


def test_the_one_each_prior_starts_with_one_relevant_and_one_irrelevant() -> None:
    texts, labels = vocabulary_dataset(100)
    for seed in range(5):
        order = screening_order(Ranker.fit(texts), labels, seed=seed, prior="one-each")
        assert [labels[i] for i in order[:2].tolist()] == [1, 0]


def test_once_all_relevant_are_found_the_rest_follow_without_retraining() -> None:
    texts = ["alpha beta"] * 2 + ["gamma delta"] * 8
    labels = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    calls = []

    class Counting(Ranker):
        def rank(self, labelled, labels, *, seed):  # type: ignore[no-untyped-def]
            calls.append(len(labelled))
            return super().rank(labelled, labels, seed=seed)

    base = Ranker.fit(texts)
    ranker = Counting(model=base.model, size=base.size, features=base.features)
    order = screening_order(ranker, labels, seed=0, every=1, prior="one-each")
    # The prior (a relevant and an irrelevant one), then the other "alpha beta" issue: both
    # relevant found after 3 decisions, so the ranking of 3 decisions is the last one made.
    assert [labels[i] for i in order[:3].tolist()] == [1, 0, 1]
    assert sorted(order.tolist()) == list(range(10))
    assert calls == [2, 3]


@pytest.mark.parametrize(
    ("labels", "options", "message"),
    [
        ([1, 1, 1], {}, "at least one relevant and one irrelevant"),
        ([0, 0, 0], {}, "at least one relevant and one irrelevant"),
        ([1, 0], {}, "3 texts but 2 labels"),
        ([1, 0, 2], {}, "labels must be 0"),
        ([1, 0, 0], {"runs": 0}, "at least 1"),
        ([1, 0, 0], {"every": 0}, "at least 1"),
        ([1, 0, 0], {"prior": "two-each"}, "unknown prior 'two-each'"),
    ],
)
def test_bad_simulations_are_refused(
    labels: list[int], options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(["a b", "c d", "e f"], labels, **options)  # type: ignore[arg-type]


def test_the_inputs_hash_changes_with_a_text_or_a_label() -> None:
    base = inputs_hash(["a", "b"], [1, 0])
    assert base == inputs_hash(["a", "b"], [1, 0])
    assert base != inputs_hash(["a", "c"], [1, 0])
    assert base != inputs_hash(["a", "b"], [0, 1])
    assert base != inputs_hash(["ab", ""], [1, 0])
