# ruff: noqa: RUF003 -- the statistics are written with their minus signs and dashes.
"""The stopping rule of Callaghan & Müller-Hansen (2020): its p-value by hand on small urns,
its claim held in repeated simulations (when recall is below the target, it says "stop" at most
alpha of the time), and the count of audits still needed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import hypergeom

from annotator.screening.stopping import audits_needed, k_target, p_value, stopping_test


def test_k_target_is_the_fewest_relevant_items_that_keep_recall_below_target():
    # 90 found before the audit, none in it: recall < 95% needs K > 90/0.95 − 90 = 4.74
    assert k_target(90, 0, 0.95) == 5
    assert 90 / (90 + 5) < 0.95 <= 90 / (90 + 4)
    # 19 found, 1 of them in the audit: K > 20/0.95 − 19 = 2.05
    assert k_target(19, 1, 0.95) == 3


def test_p_value_by_hand_on_a_small_urn():
    # Pool of 10, 90 relevant found before, 4 audited, none relevant: K_tar = 5.
    # P(no relevant in 4 draws from 10 holding 5) = C(5,4)/C(10,4) = 5/210.
    assert p_value(10, 90, 4, 0, 0.95) == pytest.approx(5 / 210, abs=1e-12)
    assert p_value(10, 90, 4, 0, 0.95) == pytest.approx(hypergeom.cdf(0, 10, 5, 4), abs=1e-15)
    # 6 audited of 10 with none relevant: 5 relevant cannot fit in the 4 left: p = 0
    assert p_value(10, 90, 6, 0, 0.95) == 0.0


def test_the_verdict_says_stop_or_how_many_more_audits():
    test = stopping_test(2000, 95, 0, 0)
    assert not test.stop and "more audited item" in test.verdict()
    more = audits_needed(2000, 95, 0, 0)
    assert more is not None and more > 0
    enough = stopping_test(2000, 95, more, 0)
    assert enough.stop and enough.verdict().startswith("stop: recall ≥ 95% at p = ")
    assert not stopping_test(2000, 95, more - 1, 0).stop  # the fewest that suffice
    assert audits_needed(2000, 95, more, 0) == 0


def test_the_recall_interval_holds_the_estimate():
    test = stopping_test(1000, 100, 200, 2)
    assert test.recall == pytest.approx(102 / (102 + 2 / 200 * 800))
    low, high = test.recall_ci
    assert low < test.recall < high <= 1.0


def simulate(true_recall: float, looks: list[int], level: float, runs: int = 400) -> float:
    """The share of simulated audits in which the test, read at the draws in `looks` at
    `level`, says "stop" while recall (counting the relevant items the audit found) is still
    below 95%. A pool of 3,000 unscreened items holds the relevant items that make recall
    `true_recall` before the audit; 300 were found before it."""
    rng = np.random.default_rng(7)
    found, pool = 300, 3000
    missing = math.ceil(found / true_recall - found)
    n = np.array(looks)
    wrong = 0
    for _ in range(runs):
        urn = np.zeros(pool, dtype=bool)
        urn[rng.choice(pool, missing, replace=False)] = True
        hits = np.cumsum(urn[rng.permutation(pool)])[n - 1]
        needed = np.floor((found + hits) / 0.95 - found) + 1
        p = np.where(needed > pool - n + hits, 0.0, hypergeom.cdf(hits, pool, needed, n))
        below = (found + hits) / (found + missing) < 0.95
        wrong += bool(((p < level) & below).any())
    return wrong / runs


BOUND = 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)  # alpha plus three binomial standard errors


@pytest.mark.parametrize("true_recall", [0.90, 0.94])
def test_one_look_at_the_planned_audit_says_stop_wrongly_at_most_alpha_of_the_time(true_recall):
    planned = audits_needed(3000, 300, 0, 0)
    assert planned is not None
    assert simulate(true_recall, [planned], 0.05) <= BOUND


@pytest.mark.parametrize("true_recall", [0.90, 0.94])
def test_declared_checkpoints_split_alpha_and_keep_the_claim(true_recall):
    looks = [300, 600, 900, 1200, 1500]
    test = stopping_test(3000, 300, 300, 0, looks=len(looks))
    assert test.level == pytest.approx(0.01)
    assert simulate(true_recall, looks, test.level) <= BOUND


def test_reading_after_every_draw_would_break_the_claim():
    """Why looks are declared: read after each of 1,500 draws at 0.05, a wrong stop happens
    far more often than 5% of the time when recall was 94% before the audit."""
    assert simulate(0.94, list(range(1, 1501)), 0.05) > BOUND


def test_it_stops_when_everything_was_found():
    """Power: with every relevant item already found, the rule stops after a few hundred
    audits of 3,000 (it needs no relevant item in them)."""
    more = audits_needed(3000, 300, 0, 0)
    assert more is not None and more < 1000
    assert stopping_test(3000, 300, more, 0).stop


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="audited from a pool"):
        p_value(10, 5, 11, 0, 0.95)
    with pytest.raises(ValueError, match="relevant among"):
        p_value(10, 5, 3, 4, 0.95)
    with pytest.raises(ValueError, match="strictly between"):
        k_target(5, 0, 1.0)
