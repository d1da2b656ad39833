# ruff: noqa: RUF003 -- the notation of the sources (α, κ, ×, −).
"""Properties every coefficient must have, on tables hypothesis draws (missing cells included)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotator.agreement import stats

NOMINAL = [
    (stats.percent_agreement, {}),
    (stats.fleiss_kappa, {}),
    (stats.gwet_ac1, {}),
    (stats.krippendorff_alpha, {}),
]
ALL_LEVELS = [
    *NOMINAL,
    *[(stats.krippendorff_alpha, {"level": lv}) for lv in ("ordinal", "interval", "ratio")],
]
CATEGORIES = [1, 2, 3, 4]
# database=None: no .hypothesis/ folder in the repository.
SETTINGS = settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def tables(draw, min_raters: int = 2, max_raters: int = 4):  # type: ignore[no-untyped-def]
    units = draw(st.integers(3, 12))
    raters = draw(st.integers(min_raters, max_raters))
    cell = st.one_of(st.none(), st.sampled_from(CATEGORIES))
    rows = draw(
        st.lists(st.lists(cell, min_size=raters, max_size=raters), min_size=units, max_size=units)
    )
    return rows


def _same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-9)


@SETTINGS
@given(tables(), st.randoms(use_true_random=False))
def test_unit_order_does_not_matter(rows, rnd):  # type: ignore[no-untyped-def]
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    for coefficient, options in ALL_LEVELS:
        a = coefficient(rows, categories=CATEGORIES, **options)
        b = coefficient(shuffled, categories=CATEGORIES, **options)
        assert _same(a.value, b.value) and _same(a.se, b.se)


@pytest.mark.parametrize(("coefficient", "options"), ALL_LEVELS)
def test_the_jackknife_of_a_table_left_without_variation_does_not_depend_on_unit_order(
    coefficient, options
):
    # Found by the property above: leaving out [1, 4] leaves only [4, 4, 4], where chance
    # agreement is 1; the leave-one-out algebra computed it as 1 − 4e-16 in one unit order.
    rows = [[None, 1, 4], [4, 4, 4], [None, None, None]]

    results = [coefficient(order, categories=CATEGORIES, **options) for order in (rows, rows[::-1])]

    assert _same(results[0].value, results[1].value)
    assert _same(results[0].se, results[1].se)
    if coefficient in (stats.fleiss_kappa, stats.krippendorff_alpha):  # chance agreement 1
        assert results[0].se is None


@SETTINGS
@given(tables(), st.randoms(use_true_random=False))
def test_rater_order_does_not_matter(rows, rnd):  # type: ignore[no-untyped-def]
    order = list(range(len(rows[0])))
    rnd.shuffle(order)
    permuted = [[row[i] for i in order] for row in rows]
    for coefficient, options in ALL_LEVELS:
        a = coefficient(rows, categories=CATEGORIES, **options).value
        assert _same(a, coefficient(permuted, categories=CATEGORIES, **options).value)
    two = [row[:2] for row in rows]
    swapped = [row[::-1] for row in two]
    for weights in (None, "linear", "quadratic"):
        a = stats.cohen_kappa(two, categories=CATEGORIES, weights=weights).value
        assert _same(a, stats.cohen_kappa(swapped, categories=CATEGORIES, weights=weights).value)


@SETTINGS
@given(tables(), st.permutations(["w", "x", "y", "z"]))
def test_renaming_categories_does_not_matter_for_nominal_coefficients(rows, names):  # type: ignore[no-untyped-def]
    rename = dict(zip(CATEGORIES, names, strict=True))
    renamed = [[None if v is None else rename[v] for v in row] for row in rows]
    for coefficient, options in NOMINAL:
        a = coefficient(rows, categories=CATEGORIES, **options).value
        assert _same(a, coefficient(renamed, categories=names, **options).value)


@SETTINGS
@given(
    st.lists(st.sampled_from(CATEGORIES), min_size=2, max_size=12).filter(
        lambda v: len(set(v)) > 1
    ),
    st.integers(2, 4),
)
def test_perfect_agreement_gives_one(truth, raters):  # type: ignore[no-untyped-def]
    rows = [[v] * raters for v in truth]
    for coefficient, options in ALL_LEVELS:
        assert coefficient(rows, categories=CATEGORIES, **options).value == pytest.approx(1.0)
    assert stats.cohen_kappa(
        [row[:2] for row in rows], categories=CATEGORIES, weights="quadratic"
    ).value == pytest.approx(1.0)


@SETTINGS
@given(st.sampled_from(CATEGORIES), st.integers(2, 10), st.integers(2, 4))
def test_no_variation_is_undefined_with_reason_and_p_o(category, units, raters):  # type: ignore[no-untyped-def]
    rows = [[category] * raters for _ in range(units)]
    for coefficient, options in [*ALL_LEVELS[1:], (stats.cohen_kappa, {})]:
        table = [row[:2] for row in rows] if coefficient is stats.cohen_kappa else rows
        result = coefficient(table, categories=CATEGORIES, **options)
        assert result.value is None and result.se is None
        assert "no variation" in (result.undefined_reason or "")
        assert result.p_o == pytest.approx(1.0)


@SETTINGS
@given(tables())
def test_fewer_than_two_pairable_units_is_undefined(rows):  # type: ignore[no-untyped-def]
    single = [[row[0] if i == 0 else None for i in range(len(row))] for row in rows]
    single[0] = [1, 2, *single[0][2:]]  # one pairable unit only
    for coefficient, options in ALL_LEVELS[1:]:
        result = coefficient(single, categories=CATEGORIES, **options)
        assert result.value is None and "fewer than 2 pairable units" in (
            result.undefined_reason or ""
        )
        assert result.n_pairable_units == 1


@SETTINGS
@given(tables())
def test_result_is_json_and_reports_the_population(rows):  # type: ignore[no-untyped-def]
    for coefficient, options in ALL_LEVELS:
        result = coefficient(rows, categories=CATEGORIES, bootstrap=5, seed=1, **options)
        data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        pairable = sum(1 for row in rows if sum(v is not None for v in row) >= 2)
        assert data["n_pairable_units"] == pairable
        assert data["n_units_left_out"] == len(rows) - pairable
        assert data["population"] == stats.POPULATION_RULE
        assert (data["value"] is None) == (data["undefined_reason"] is not None)


def test_bootstrap_is_seeded_and_reports_threshold_probabilities():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 200)
    table = np.where(rng.random((200, 3)) < 0.8, truth[:, None], rng.integers(0, 4, (200, 3)))
    a = stats.krippendorff_alpha(table, bootstrap=300, seed=7)
    b = stats.krippendorff_alpha(table, bootstrap=300, seed=7)
    assert a.bootstrap == b.bootstrap and a.bootstrap is not None
    assert set(a.bootstrap.p_below) == {"0.667", "0.8"}
    assert 0.0 <= a.bootstrap.p_below["0.667"] <= a.bootstrap.p_below["0.8"] <= 1.0
    assert a.bootstrap.se == pytest.approx(a.se, rel=0.3)  # unit bootstrap ≈ unit jackknife


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="outside the declared categories"):
        stats.fleiss_kappa([[1, 2], [3, 9]], categories=[1, 2, 3])
    with pytest.raises(ValueError, match="two fixed raters"):
        stats.cohen_kappa([[1, 2, 3]])
    with pytest.raises(ValueError, match="same number of cells"):
        stats.krippendorff_alpha([[1, 2], [1]])
    with pytest.raises(ValueError, match="mixes label sets"):
        stats.krippendorff_alpha([[{"a"}, "a"], [{"b"}, {"b"}]])
    with pytest.raises(ValueError, match="numeric"):
        stats.krippendorff_alpha([["a", "b"], ["b", "b"]], level="interval")
    with pytest.raises(ValueError, match="level must be one of"):
        stats.krippendorff_alpha([[1, 2]], level="nominall")
