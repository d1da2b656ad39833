# ruff: noqa: RUF002, RUF003 -- the notation of the sources (α, κ, π, Σ, −, ×).
"""More coefficients against references: statsmodels, scikit-learn, published worked examples,
and small tables computed by hand (the arithmetic is in each test's docstring or comments).

References used (irrCAC is not installed; see tests/agreement/data/README.md):
- statsmodels `fleiss_kappa(method="randolph")` for Randolph's κ / Brennan–Prediger (complete
  tables only: it asserts equal ratings per unit), scikit-learn `cohen_kappa_score` and
  `confusion_matrix` for Conger's and Light's κ and two-rater specific agreement.
- Gwet (2014) Handbook of Inter-Rater Reliability, 4th ed.: the 4 raters × 12 units example
  (pp. 55–56, irrCAC `raw_4raters` = our K2011 matrix), Brennan–Prediger 0.7727; the two raters × 11 units example of Table 3.5 (p. 80) with quadratic weights, AC2's
  p_a 0.9375, p_e 0.6405, AC2 0.8261 (the values irrCAC computes; jmgirard/agreement's test
  of that example notes the book's p_e 0.6309 / 0.8307 as a misprint).
- Feinstein & Cicchetti (1990) J. Clin. Epidemiol. 43(6), tables A (40, 9, 6, 45) and
  B (80, 10, 5, 5): p_o 0.85 both, κ 0.70 and 0.32; Byrt, Bishop & Carlin (1993) define PABAK,
  PI and BI and the identity κ = (PABAK − PI² + BI²)/(1 − PI² + BI²) checked here on them;
  Cicchetti & Feinstein (1990) define p_pos = 2a/(2a + b + c), p_neg = 2d/(2d + b + c).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from annotator.agreement import stats
from tests.agreement.test_stats_published import FEINSTEIN_A, FEINSTEIN_B, K2011

EXACT = 1e-12
SEEDS = range(8)
FREE_MARGINAL = [stats.brennan_prediger, stats.randolph_kappa]


def _random_table(seed: int, units: int = 60, raters: int = 4, q: int = 4, missing: float = 0.3):  # type: ignore[no-untyped-def]
    """Correlated ratings 1..q with a share missing; NaN = missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, q + 1, units)
    noise = rng.integers(1, q + 1, (units, raters))
    table = np.where(rng.random((units, raters)) < 0.6, truth[:, None], noise).astype(float)
    table[rng.random(table.shape) < missing] = np.nan
    return table


def _pairable(table: np.ndarray) -> np.ndarray:
    return table[(~np.isnan(table)).sum(axis=1) >= 2]


def _brute_force_se(coefficient, table, **options) -> float:  # type: ignore[no-untyped-def]
    """The delete-one-unit jackknife by refitting without each pairable unit."""
    keep = np.flatnonzero((~np.isnan(table)).sum(axis=1) >= 2)
    loo = np.array(
        [coefficient(table[np.delete(keep, i)], **options).value for i in range(len(keep))]
    )
    return float(np.sqrt((len(loo) - 1) / len(loo) * ((loo - loo.mean()) ** 2).sum()))


# -- Brennan–Prediger, Bennett's S, Randolph's κ ----------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_free_marginal_kappas_match_statsmodels_randolph(seed):  # type: ignore[no-untyped-def]
    """statsmodels takes q from the count table's columns: declare the same categories."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table = _random_table(seed, raters=5, missing=0.0).astype(int)
    declared = [1, 2, 3, 4, 5, 6]  # 5 and 6 never used: q = 6 all the same
    counts, _ = aggregate_raters(table - 1, n_cat=len(declared))
    expected = fleiss_kappa(counts, method="randolph")
    for coefficient in FREE_MARGINAL:
        result = coefficient(table, categories=declared)
        assert result.value == pytest.approx(expected, abs=EXACT)
        assert result.p_e == pytest.approx(1 / 6, abs=EXACT) and result.q == 6
        assert result.extra["q_rule"] == "declared categories"


def test_brennan_prediger_gwet_2014_four_raters():
    """Gwet (2014) pp. 55–56, 4 raters × 12 units: Brennan–Prediger 0.7727. p_a = 9/11 on the
    11 pairable units, q = 5 (unit 12's one rating is a category seen elsewhere, so leaving it
    out changes nothing): (9/11 − 1/5)/(1 − 1/5) = 17/22."""
    for coefficient in FREE_MARGINAL:
        result = coefficient(K2011)
        assert round(result.value, 4) == 0.7727
        assert result.value == pytest.approx(17 / 22, abs=EXACT)
        assert result.p_o == pytest.approx(9 / 11, abs=EXACT)
        assert result.n_units_left_out == 1 and result.q == 5


@pytest.mark.parametrize("seed", SEEDS)
def test_bennett_s_is_the_two_rater_case(seed):  # type: ignore[no-untyped-def]
    """S = (q p_o − 1)/(q − 1) on the units both rated (Bennett et al. 1954)."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table = _random_table(seed, raters=2)
    both = table[~np.isnan(table).any(axis=1)].astype(int)
    p_o = float((both[:, 0] == both[:, 1]).mean())
    result = stats.bennett_s(table, categories=[1, 2, 3, 4, 5])
    assert result.value == pytest.approx((5 * p_o - 1) / 4, abs=EXACT)
    counts, _ = aggregate_raters(both - 1, n_cat=5)
    assert result.value == pytest.approx(fleiss_kappa(counts, method="randolph"), abs=EXACT)
    assert result.value == pytest.approx(
        stats.brennan_prediger(table, categories=[1, 2, 3, 4, 5]).value, abs=EXACT
    )
    with pytest.raises(ValueError, match="two fixed raters"):
        stats.bennett_s(_random_table(seed, raters=3))


@pytest.mark.parametrize("seed", SEEDS)
def test_free_marginal_jackknife_equals_brute_force(seed):  # type: ignore[no-untyped-def]
    table = _random_table(seed, units=25)
    result = stats.brennan_prediger(table, categories=[1, 2, 3, 4])
    assert result.se == pytest.approx(
        _brute_force_se(stats.brennan_prediger, table, categories=[1, 2, 3, 4]), abs=1e-9
    )


# -- Conger's κ and Light's κ -----------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_conger_with_two_raters_is_cohen_as_sklearn(seed):  # type: ignore[no-untyped-def]
    from sklearn.metrics import cohen_kappa_score

    table = _random_table(seed, raters=2)
    both = table[~np.isnan(table).any(axis=1)].astype(int)
    expected = cohen_kappa_score(both[:, 0], both[:, 1], labels=[1, 2, 3, 4])
    assert stats.conger_kappa(table, categories=[1, 2, 3, 4]).value == pytest.approx(
        expected, abs=EXACT
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_conger_on_complete_tables_from_sklearn_pairs(seed):  # type: ignore[no-untyped-def]
    """Conger (1980): with every rater on every unit, p_o and p_e are the means over rater
    pairs of the pair's p_o and Σ_k p_rk p_sk (each pair's p_e from sklearn's crosstab)."""
    from sklearn.metrics import confusion_matrix

    table = _random_table(seed, raters=4, missing=0.0).astype(int)
    p_o, p_e = [], []
    for r, s in itertools.combinations(range(4), 2):
        joint = confusion_matrix(table[:, r], table[:, s], labels=[1, 2, 3, 4]) / len(table)
        p_o.append(np.trace(joint))
        p_e.append(joint.sum(axis=1) @ joint.sum(axis=0))
    expected = (np.mean(p_o) - np.mean(p_e)) / (1 - np.mean(p_e))
    result = stats.conger_kappa(table, categories=[1, 2, 3, 4])
    assert result.value == pytest.approx(expected, abs=EXACT)
    assert result.p_e == pytest.approx(np.mean(p_e), abs=EXACT)
    fleiss = stats.fleiss_kappa(table, categories=[1, 2, 3, 4])
    assert result.p_o == pytest.approx(fleiss.p_o, abs=EXACT)  # the same p_a


def _conger_by_hand(table: list[list[object]], units: list[int]) -> float:
    """Conger's κ as Gwet (2014, §2.4) writes it: p_a over units with ≥ 2 ratings; p_rk each
    rater's share of category k among the units in `units` that rater rated;
    p_e = Σ_k (p̄_k² − s²_k / R), s²_k the variance of p_rk over the R raters."""
    categories = sorted({v for row in table for v in row if v is not None})
    raters = range(len(table[0]))
    p = np.array(
        [
            [
                sum(table[u][r] == k for u in units) / sum(table[u][r] is not None for u in units)
                for k in categories
            ]
            for r in raters
        ]
    )
    p_e = float((p.mean(axis=0) ** 2 - p.var(axis=0, ddof=1) / len(p)).sum())
    shares = []
    for row in table:
        present = [v for v in row if v is not None]
        if len(present) >= 2:
            pairs = list(itertools.combinations(present, 2))
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    p_a = float(np.mean(shares))
    return (p_a - p_e) / (1 - p_e)


def test_conger_four_raters_by_gwets_formula():
    """Gwet's four raters × 12 units: Conger's κ by Gwet's (2014, §2.4) formula — the one
    irrCAC's `conger.kappa.raw` implements — on the 11 pairable units. (A printed 0.7628 for this
    example, quoted by jmgirard/agreement's tests, is not what that formula gives with unit 12 in
    the marginals either, 0.7621; so only the formula is checked here.)"""
    ours = stats.conger_kappa(K2011)
    assert ours.value == pytest.approx(_conger_by_hand(K2011, list(range(11))), abs=EXACT)
    assert ours.n_units_left_out == 1
    with_unit_12 = _conger_by_hand(K2011, list(range(12)))
    assert ours.value != pytest.approx(with_unit_12, abs=1e-4)  # the population rule matters


@pytest.mark.parametrize("seed", SEEDS)
def test_conger_jackknife_equals_brute_force_with_sparse_raters(seed):  # type: ignore[no-untyped-def]
    """A sixth rater with a single pairable unit drops out of p_e when that unit is left out."""
    table = _random_table(seed, units=25, raters=5)
    sparse = np.full((25, 1), np.nan)
    sparse[3, 0] = table[3, 0] if not np.isnan(table[3, 0]) else 1.0
    table = np.hstack([table, sparse])
    table[3, 1] = 2.0  # unit 3 stays pairable
    result = stats.conger_kappa(table, categories=[1, 2, 3, 4])
    expected = _brute_force_se(stats.conger_kappa, table, categories=[1, 2, 3, 4])
    assert result.se == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_light_is_the_mean_of_sklearn_pairwise_cohen(seed):  # type: ignore[no-untyped-def]
    from sklearn.metrics import cohen_kappa_score

    table = _random_table(seed, raters=4)
    kappas = []
    for r, s in itertools.combinations(range(4), 2):
        both = table[~np.isnan(table[:, [r, s]]).any(axis=1)][:, [r, s]].astype(int)
        kappas.append(cohen_kappa_score(both[:, 0], both[:, 1], labels=[1, 2, 3, 4]))
    result = stats.light_kappa(table, categories=[1, 2, 3, 4])
    assert result.value == pytest.approx(np.mean(kappas), abs=EXACT)
    assert result.extra["pairs_used"] == 6 and result.extra["pairs_left_out"] == 0
    weighted = stats.light_kappa(table, categories=[1, 2, 3, 4], weights="quadratic")
    assert weighted.weights == "quadratic"
    assert result.se == pytest.approx(
        _brute_force_se(stats.light_kappa, table, categories=[1, 2, 3, 4]), abs=1e-9
    )


def test_light_leaves_out_pairs_without_kappa():
    """Raters 0 and 2 share one unit: no κ for that pair, the mean is over the other two.
    Pair (0, 1): 4 units, p_o 3/4, margins a 2/4 b 2/4 and a 1/4 b 3/4 → p_e 1/2, κ 1/2;
    pair (1, 2): 2 units (b, b), (a, a) → κ 1. Light's κ = 3/4."""
    rows = [
        ["a", "a", None],
        ["a", "b", None],
        ["b", "b", "b"],
        ["b", "b", None],
        [None, "a", "a"],
    ]
    result = stats.light_kappa(rows)
    assert result.extra == {"pairs_used": 2, "pairs_left_out": 1}
    assert result.value == pytest.approx(0.75, abs=EXACT)


# -- Gwet's AC2 -------------------------------------------------------------------------------


def _ac2_by_hand(table: np.ndarray, weights: np.ndarray) -> float:
    """Gwet (2014) ch. 3 term by term: r*_uk = Σ_l w_kl r_ul, p_a = mean of
    Σ_k r_uk (r*_uk − 1)/(m_u (m_u − 1)); p_e = T_w/(q(q − 1)) Σ_k π_k (1 − π_k)."""
    q = len(weights)
    rows = [[int(v) - 1 for v in row if v == v] for row in table]
    rows = [row for row in rows if len(row) >= 2]
    counts = np.array([np.bincount(row, minlength=q) for row in rows], dtype=float)
    m = counts.sum(axis=1)
    star = counts @ weights.T
    p_a = float(((counts * (star - 1)).sum(axis=1) / (m * (m - 1))).mean())
    pi = (counts / m[:, None]).mean(axis=0)
    p_e = weights.sum() / (q * (q - 1)) * float((pi * (1 - pi)).sum())
    return (p_a - p_e) / (1 - p_e)


def test_ac2_identity_is_ac1():
    table = _random_table(3)
    ac1 = stats.gwet_ac1(table, categories=range(1, 6))
    ac2 = stats.gwet_ac2(table, categories=range(1, 6), weights="identity")
    assert ac2.value == pytest.approx(ac1.value, abs=EXACT)
    assert ac2.se == pytest.approx(ac1.se, abs=EXACT)
    assert ac2.p_e == pytest.approx(ac1.p_e, abs=EXACT)


@pytest.mark.parametrize("weights", ["linear", "quadratic", "ordinal"])
@pytest.mark.parametrize("seed", SEEDS)
def test_ac2_matches_gwets_formula_term_by_term(seed, weights):  # type: ignore[no-untyped-def]
    from annotator.agreement._extra import ordered_weights

    table = _random_table(seed, q=5)
    w = ordered_weights(6, weights)  # declared 1..6; 6 never used
    result = stats.gwet_ac2(table, categories=range(1, 7), weights=weights)
    assert result.value == pytest.approx(_ac2_by_hand(table, w), abs=EXACT)
    assert result.weights == weights and result.q == 6
    if seed < 3:
        expected = _brute_force_se(stats.gwet_ac2, table, categories=range(1, 7), weights=weights)
        assert result.se == pytest.approx(expected, abs=1e-9)


def test_ordinal_weights_are_gwets():
    """irrCAC `ordinal.weights(1:3)` (Gwet 2014, ch. 3): M = C(|k − l| + 1, 2) = 0, 1, 3."""
    from annotator.agreement._extra import ordered_weights

    expected = [[1, 2 / 3, 0], [2 / 3, 1, 2 / 3], [0, 2 / 3, 1]]
    assert np.allclose(ordered_weights(3, "ordinal"), expected, atol=EXACT)
    with pytest.raises(ValueError, match="weights must be"):
        stats.gwet_ac2([[1, 2], [2, 2]], weights="circular")


GWET_TABLE_3_5 = [
    ["A", None],
    ["B", "C"],
    ["C", "C"],
    ["C", "C"],
    ["B", "B"],
    ["B", None],
    ["A", "A"],
    ["A", "B"],
    ["B", "B"],
    ["B", "B"],
    [None, "C"],
]


def test_ac2_gwet_2014_table_3_5_quadratic():
    """Gwet (2014) p. 80, Table 3.5: 2 raters, 11 units, A < B < C, quadratic weights (adjacent
    0.75, T_w = 6). p_a = (6 + 0.75 + 0.75)/8 = 0.9375 on the 8 pairable units, as printed.
    irrCAC's p_e 0.6405 lets units 1, 6, 11 (one rating each) into π: π = (2.5, 5, 3.5)/11,
    p_e = 6/6 · (1 − 43.5/121) → AC2 0.8261. Our rule, 8 pairable units: π = (1.5, 4, 2.5)/8,
    p_e = 1 − 24.5/64 = 79/128, AC2 = (15/16 − 79/128)/(49/128) = 41/49."""
    p_e_irrcac = 1 - 43.5 / 121
    assert round(p_e_irrcac, 4) == 0.6405
    assert round((0.9375 - p_e_irrcac) / (1 - p_e_irrcac), 4) == 0.8261
    result = stats.gwet_ac2(GWET_TABLE_3_5, categories=["A", "B", "C"], weights="quadratic")
    assert result.p_o == pytest.approx(0.9375, abs=EXACT)
    assert result.p_e == pytest.approx(79 / 128, abs=EXACT)
    assert result.value == pytest.approx(float(Fraction(41, 49)), abs=EXACT)
    assert result.n_units_left_out == 3 and result.q == 3


def test_ac2_refuses_ordered_weights_on_label_sets():
    with pytest.raises(ValueError, match="single-label"):
        stats.gwet_ac2([[{"a"}, {"a", "b"}], [{"b"}, {"b"}]], weights="linear")


# -- PABAK, prevalence and bias indices -------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "counts", "pi", "bi", "kappa_printed"),
    [
        (FEINSTEIN_A, (40, 9, 6, 45), Fraction(-5, 100), Fraction(3, 100), 0.70),
        (FEINSTEIN_B, (80, 10, 5, 5), Fraction(75, 100), Fraction(5, 100), 0.32),
    ],
)
def test_pabak_feinstein_cicchetti_tables(table, counts, pi, bi, kappa_printed):  # type: ignore[no-untyped-def]
    """Both tables: p_o = 0.85 → PABAK 0.7; PI = (a − d)/n, BI = (b − c)/n; Cohen's κ from
    Byrt et al.'s identity equals cohen_kappa (and F&C's printed 0.70, 0.32)."""
    result = stats.pabak(table, positive=0)  # code 0 = "yes" in these tables
    a, b, c, d = counts
    assert result.extra["counts"] == {"a": a, "b": b, "c": c, "d": d}
    assert result.value == pytest.approx(0.7, abs=EXACT) and result.p_o == pytest.approx(0.85)
    assert result.extra["prevalence_index"] == pytest.approx(float(pi), abs=EXACT)
    assert result.extra["bias_index"] == pytest.approx(float(bi), abs=EXACT)
    kappa = stats.cohen_kappa(table).value
    assert result.extra["cohen_kappa"] == pytest.approx(kappa, abs=EXACT)
    assert round(kappa, 2) == kappa_printed
    assert result.value == pytest.approx(stats.bennett_s(table).value, abs=EXACT)
    assert result.ci[0] < result.value < result.ci[1]
    flipped = stats.pabak(table)  # default positive: the second category (code 1 = "no")
    assert flipped.extra["prevalence_index"] == pytest.approx(-float(pi), abs=EXACT)
    assert flipped.extra["bias_index"] == pytest.approx(-float(bi), abs=EXACT)


def test_pabak_index_se_is_the_jackknife_of_a_mean():
    """PI is a mean over units of x_u ∈ {1, 0, −1}: its jackknife SE is sd(x)/√n."""
    result = stats.pabak(FEINSTEIN_B, positive=0)
    x = np.array([1] * 80 + [0] * 15 + [-1] * 5, dtype=float)
    assert result.extra["prevalence_index_se"] == pytest.approx(
        x.std(ddof=1) / np.sqrt(100), abs=EXACT
    )


def test_pabak_needs_binary_two_rater_data():
    with pytest.raises(ValueError, match="binary"):
        stats.pabak([["a", "b"], ["c", "c"]])
    with pytest.raises(ValueError, match="two fixed raters"):
        stats.pabak([["a", "b", "a"], ["b", "b", "a"]])
    with pytest.raises(ValueError, match="not one of"):
        stats.pabak([["a", "b"], ["b", "b"]], positive="c")


def test_pabak_by_category_one_vs_rest():
    """a: units (a,b) (a,a) (c,c) (b,b) → a = 1, b = 1, c = 0, d = 2: PABAK 2·3/4 − 1 = 1/2,
    PI (1 − 2)/4, BI 1/4. Multi-label: each label present or not."""
    rows = [["a", "b"], ["a", "a"], ["c", "c"], ["b", "b"]]
    per = stats.pabak_by_category(rows, categories=["a", "b", "c"])
    assert list(per) == ["a", "b", "c"]
    assert per["a"].value == pytest.approx(0.5, abs=EXACT)
    assert per["a"].extra["prevalence_index"] == pytest.approx(-0.25, abs=EXACT)
    assert per["a"].extra["bias_index"] == pytest.approx(0.25, abs=EXACT)
    assert per["c"].value == pytest.approx(1.0, abs=EXACT)
    for label, result in per.items():
        binary = [[int(x == label) for x in row] for row in rows]
        assert result.value == pytest.approx(
            stats.pabak(binary, categories=[0, 1]).value, abs=EXACT
        )
    sets = [[{"a"}, {"a", "b"}], [{"b"}, {"b"}], [{"a", "b"}, {"a"}]]
    per_label = stats.pabak_by_category(sets)
    assert per_label["a"].value == pytest.approx(1.0, abs=EXACT)  # a in all but unit 2, twice
    assert per_label["b"].value == pytest.approx(2 * (1 / 3) - 1, abs=EXACT)


# -- Specific agreement -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "p_pos", "p_neg"),
    [
        (FEINSTEIN_A, Fraction(80, 95), Fraction(90, 105)),
        (FEINSTEIN_B, Fraction(160, 175), Fraction(10, 25)),
    ],
)
def test_positive_negative_agreement_cicchetti_feinstein(table, p_pos, p_neg):  # type: ignore[no-untyped-def]
    """p_pos = 2a/(2a + b + c), p_neg = 2d/(2d + b + c): A 80/95, 90/105; B 160/175, 10/25 —
    where κ alone (0.70 vs 0.32) hides that B's disagreement is all about the rare "no"."""
    both = stats.positive_negative_agreement(table, positive=0)
    assert both["positive"].value == pytest.approx(float(p_pos), abs=EXACT)
    assert both["negative"].value == pytest.approx(float(p_neg), abs=EXACT)
    per = stats.specific_agreement(table)
    assert per[0].value == pytest.approx(float(p_pos), abs=EXACT)
    assert per[1].value == pytest.approx(float(p_neg), abs=EXACT)
    for result in both.values():
        assert result.se is not None and result.ci[0] < result.value < result.ci[1]
        assert result.se_method.startswith("jackknife")


@pytest.mark.parametrize("seed", SEEDS)
def test_two_rater_specific_agreement_from_sklearn_crosstab(seed):  # type: ignore[no-untyped-def]
    """For two raters p_s(k) = 2 n_kk/(n_k· + n_·k)."""
    from sklearn.metrics import confusion_matrix

    table = _random_table(seed, raters=2)
    both = table[~np.isnan(table).any(axis=1)].astype(int)
    joint = confusion_matrix(both[:, 0], both[:, 1], labels=[1, 2, 3, 4])
    per = stats.specific_agreement(table, categories=[1, 2, 3, 4])
    for k, result in zip([1, 2, 3, 4], per.values(), strict=True):
        i = k - 1
        expected = 2 * joint[i, i] / (joint[i].sum() + joint[:, i].sum())
        assert result.value == pytest.approx(expected, abs=EXACT)
        assert result.extra["category"] == k


def test_uebersax_specific_agreement_many_raters_by_hand():
    """Units (a,a,a), (a,a,b), (b,b,None), (a,b,None), (c,None,None) — the last left out.
    a: Σ r(r − 1) = 6 + 2 + 0 + 0 = 8; Σ r(m − 1) = 6 + 4 + 0 + 1 = 11 → 8/11.
    b: 0 + 0 + 2 + 0 = 2; 0 + 2 + 2 + 1 = 5 → 2/5. c: no pairable rating → undefined."""
    rows = [["a", "a", "a"], ["a", "a", "b"], ["b", "b", None], ["a", "b", None], ["c", None, None]]
    per = stats.specific_agreement(rows)
    assert per["a"].value == pytest.approx(8 / 11, abs=EXACT)
    assert per["b"].value == pytest.approx(2 / 5, abs=EXACT)
    assert per["c"].value is None and "0/0" in per["c"].undefined_reason
    assert per["a"].n_units_left_out == 1
    pn = stats.positive_negative_agreement(rows, positive="a")
    # not-a: s = m − r = 0, 1, 2, 1 → Σ s(s − 1) = 2; Σ s(m − 1) = 0 + 2 + 2 + 1 = 5
    assert pn["negative"].value == pytest.approx(2 / 5, abs=EXACT)
    table = np.array([[0, 0, 0], [0, 0, 1], [1, 1, np.nan], [0, 1, np.nan], [0, 1, 1]] * 3)
    result = stats.specific_agreement(table)[0]
    assert result.se == pytest.approx(
        _brute_force_se(lambda t: stats.specific_agreement(t)[0], table), abs=1e-9
    )


def test_specific_agreement_bootstrap_is_over_units():
    result = stats.specific_agreement(FEINSTEIN_B, bootstrap=200, seed=7)[1]
    pabak = stats.pabak(FEINSTEIN_B, bootstrap=200, seed=7)
    assert pabak.bootstrap is not None and pabak.bootstrap.ci[0] < 0.7 < pabak.bootstrap.ci[1]
    assert result.bootstrap is not None and result.bootstrap.seed == 7
    low, high = result.bootstrap.ci
    assert low < result.value < high


# -- Undefined cases follow the module's rules ------------------------------------------------

CHANCE_CORRECTED = [
    ("brennan_prediger", {}),
    ("randolph_kappa", {}),
    ("bennett_s", {}),
    ("conger_kappa", {}),
    ("light_kappa", {}),
    ("gwet_ac2", {"weights": "quadratic"}),
    ("pabak", {}),
]


@pytest.mark.parametrize(("name", "options"), CHANCE_CORRECTED)
def test_no_variation_is_undefined_with_p_o(name, options):  # type: ignore[no-untyped-def]
    rows = [["yes", "yes"], ["yes", "yes"], ["yes", "yes"], ["no", None]]
    result = getattr(stats, name)(rows, categories=["no", "yes"], **options)
    assert result.value is None and result.se is None
    assert result.undefined_reason.startswith("no variation")
    assert result.n_pairable_units == 3 and result.n_units_left_out == 1
    if name != "light_kappa":
        assert result.p_o == pytest.approx(1.0, abs=EXACT)


@pytest.mark.parametrize(("name", "options"), CHANCE_CORRECTED)
def test_fewer_than_two_pairable_units_is_undefined(name, options):  # type: ignore[no-untyped-def]
    rows = [["yes", "no"], ["yes", None], [None, "no"]]
    result = getattr(stats, name)(rows, categories=["no", "yes"], **options)
    assert result.value is None
    assert result.undefined_reason.startswith("fewer than 2 pairable units")
    assert result.n_pairable_units == 1 and result.n_units_left_out == 2


def test_specific_agreement_is_defined_like_p_o():
    """Not chance-corrected: defined on one pairable unit and without variation, as
    percent_agreement is; undefined on none."""
    one = stats.specific_agreement([["a", "a"], ["b", None]])
    assert one["a"].value == pytest.approx(1.0, abs=EXACT) and one["a"].se is None
    assert one["a"].se_note == "jackknife needs at least 2 pairable units"
    none = stats.specific_agreement([["a", None]])
    assert none["a"].value is None
    assert none["a"].undefined_reason.startswith("fewer than 1 pairable unit")


def test_results_serialise():
    for result in [
        stats.conger_kappa(K2011),
        stats.pabak(FEINSTEIN_A),
        stats.gwet_ac2(K2011, weights="linear"),
        *stats.positive_negative_agreement(FEINSTEIN_A).values(),
    ]:
        assert result.to_dict()["coefficient"] == result.coefficient
