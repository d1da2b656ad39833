"""The simulation's metrics on orders small enough to work out by hand.

An order is the 0/1 labels of the issues in the order they were screened: [1, 1, 0, …] means
the first two screened were relevant. N issues, R relevant.
"""

from __future__ import annotations

import pytest

from annotator.screening.simulate import atd, erf, metrics, recall_curve, screened_to_recall, wss

PERFECT = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]  # N = 10, R = 2, both relevant first
WORST = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]  # both relevant last
MIDDLE = [0, 1, 0, 0, 1, 0, 0, 0, 0, 0]  # found at positions 2 and 5


def test_recall_curve_counts_relevant_among_the_first_k() -> None:
    assert recall_curve(MIDDLE).tolist() == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize(
    ("order", "recall", "expected"),
    [
        # Perfect: 100% recall after k = 2 of N = 10; TN + FN = 8 unscreened:
        # WSS@100 = 8/10 - (1 - 1) = 0.8 = (N - R) / N.
        (PERFECT, 1.0, 0.8),
        # 95% of R = 2 is 1.9, so both must be found: k = 2, WSS@95 = 8/10 - 0.05 = 0.75.
        (PERFECT, 0.95, 0.75),
        # Worst: every issue screened (k = 10) before the last relevant one:
        # WSS@100 = 0/10 - 0 = 0 and WSS@95 = 0 - 0.05 = -0.05.
        (WORST, 1.0, 0.0),
        (WORST, 0.95, -0.05),
        # The second relevant one at position 5: WSS@100 = 5/10 - 0 = 0.5.
        (MIDDLE, 1.0, 0.5),
        # Recall 0.5 needs one of two, found at k = 2: WSS@50 = 8/10 - 0.5 = 0.3.
        (MIDDLE, 0.5, 0.3),
    ],
)
def test_wss_is_cohens_work_saved_over_sampling(
    order: list[int], recall: float, expected: float
) -> None:
    assert wss(order, recall) == pytest.approx(expected, abs=1e-12)


def test_wss_at_95_needs_exactly_ceil_of_095_r_when_it_is_whole() -> None:
    # R = 20: 0.95 * 20 = 19 (no float drift up to 20): the 19th relevant issue is enough.
    order = [1] * 19 + [0] * 80 + [1]  # N = 100; the 20th relevant issue comes last
    assert screened_to_recall(order, 0.95) == 19
    assert wss(order, 0.95) == pytest.approx((100 - 19) / 100 - 0.05)  # 0.76
    assert wss(order, 1.0) == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        # N = 20, R = 4, relevant at positions 1 and 2 (then 10 and 20). k = floor(0.1 * 20) = 2;
        # found(2) = 2; random: round(4 * (2 - 1) / 19) = round(0.21) = 0. ERF = (2 - 0) / 4.
        ([1, 1] + [0] * 7 + [1] + [0] * 9 + [1], 0.5),
        # The same N and R, none in the first two: (0 - 0) / 4 = 0.
        ([0, 0, 1] + [0] * 6 + [1, 1] + [0] * 8 + [1], 0.0),
        # N = 100, R = 10, all ten first: k = 10, found 10; random round(10 * 9 / 99) =
        # round(0.909) = 1 (asreview-insights' line from 0 at record 1 to R at record N).
        # ERF = (10 - 1) / 10 = 0.9.
        ([1] * 10 + [0] * 90, 0.9),
        # N = 9: k = floor(0.9) = 0, nothing screened yet: 0.
        ([1, 0, 0, 0, 0, 0, 0, 0, 1], 0.0),
    ],
)
def test_erf_at_10_follows_asreview_insights(order: list[int], expected: float) -> None:
    assert erf(order, 0.10) == pytest.approx(expected, abs=1e-12)


def test_erf_rounds_the_random_line_half_to_even_as_numpy_does() -> None:
    # N = 21, R = 5, k = floor(2.1) = 2: random 5 * 1 / 20 = 0.25 → 0. With R = 10 it is
    # 10 / 20 = 0.5, which numpy rounds to 0 (half to even), so found(2) = 1 gives 1/10.
    assert erf([1, 0] + [1] * 4 + [0] * 15, 0.10) == pytest.approx(1 / 5)
    assert erf([1, 0] + [1] * 9 + [0] * 10, 0.10) == pytest.approx(1 / 10)


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        # Relevant at positions 1 and 4 of N = 10: TD = 1/10 and 4/10, ATD = 0.25.
        ([1, 0, 0, 1, 0, 0, 0, 0, 0, 0], 0.25),
        (PERFECT, (1 + 2) / 2 / 10),  # 0.15
        (WORST, (9 + 10) / 2 / 10),  # 0.95
    ],
)
def test_atd_is_the_mean_fraction_screened_when_each_relevant_one_is_found(
    order: list[int], expected: float
) -> None:
    assert atd(order) == pytest.approx(expected)


def test_metrics_names_every_value_and_atd_records_is_asreviews_mean_position() -> None:
    found = metrics(MIDDLE)
    assert found == pytest.approx(
        {
            "wss@95": 0.45,  # k = 5: 5/10 - 0.05
            "wss@100": 0.5,
            "erf@10": 0.0,  # k = 1: found(1) = 0, random round(2 * 0 / 9) = 0
            "atd": 0.35,  # (2 + 5) / 2 / 10
            "atd_records": 3.5,
            "screened_to_95": 5,
            "screened_to_100": 5,
        }
    )
