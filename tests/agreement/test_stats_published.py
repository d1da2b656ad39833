# ruff: noqa: RUF001, RUF002, RUF003 -- the notation of the sources (α, κ, ×, −).
"""Published worked examples reproduce (to 1e-6 where the source gives that many digits).

Where a source prints 3 or 4 decimals the exact value is written as the fraction it reduces to
(derived by hand from the table) and checked to 1e-12; the printed rounding is checked too.
Sources and transcriptions: tests/agreement/data/README.md.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from annotator.agreement import stats

DATA = Path(__file__).parent / "data"


def _k2011(name: str) -> list[list[object]]:
    coders = json.loads((DATA / "krippendorff_2011.json").read_text())[name]
    return [list(unit) for unit in zip(*coders.values(), strict=True)]


def _csv(name: str) -> list[list[int]]:
    with (DATA / name).open() as f:
        return [[int(x) for x in row] for row in list(csv.reader(f))[1:]]


def _counts_to_table(counts: list[list[int]]) -> list[list[int | None]]:
    """Expand per-subject category counts to a units × raters table (rater order is moot)."""
    rows = [[k for k, c in enumerate(row) for _ in range(c)] for row in counts]
    width = max(map(len, rows))
    return [row + [None] * (width - len(row)) for row in rows]


def _crosstab_to_pairs(table: list[list[int]]) -> list[list[int]]:
    return [[i, j] for i, row in enumerate(table) for j, c in enumerate(row) for _ in range(c)]


def _abstractors() -> list[list[int]]:
    with (DATA / "gwet_cont3x3abstractors.csv").open() as f:
        rows = list(csv.reader(f))[1:]
    return _crosstab_to_pairs([[int(x) for x in row[1:]] for row in rows])


K2011 = _k2011("reliability_data")
FLEISS_1971 = _csv("fleiss_1971_diagnoses.csv")
ANXIETY_2_3 = [row[1:] for row in _csv("irr_anxiety.csv")]


def _two_by_two(a: int, b: int, c: int, d: int) -> list[list[str]]:
    """Rater 1 × rater 2 table [[yes-yes, yes-no], [no-yes, no-no]] as units."""
    return _crosstab_to_pairs([[a, b], [c, d]])  # type: ignore[return-value]


ALPHA, FLEISS = stats.krippendorff_alpha, stats.fleiss_kappa
GWET, COHEN = stats.gwet_ac1, stats.cohen_kappa
K2011_BINARY = _k2011("binary_two_coders")
K2011_BEN_GERRY = _k2011("nominal_two_observers")
WIKIPEDIA_10X14 = _counts_to_table(_csv("wikipedia_fleiss_10x14.csv"))
SAS_TABLE10 = _crosstab_to_pairs([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
WIKIPEDIA_20_5_10_15 = _two_by_two(20, 5, 10, 15)
WIKIPEDIA_45_15_25_15 = _two_by_two(45, 15, 25, 15)
WIKIPEDIA_25_35_5_35 = _two_by_two(25, 35, 5, 35)
# Feinstein & Cicchetti (1990) J Clin Epidemiol 43(6), tables A and B: same p_o = 0.85,
# κ 0.70 vs 0.32; AC1 stays high (Gwet 2008, §4): the prevalence paradox.
FEINSTEIN_A = _two_by_two(40, 9, 6, 45)
FEINSTEIN_B = _two_by_two(80, 10, 5, 5)
LINEAR = {"weights": "linear"}
# R irr::kappa2 weights the levels PRESENT (1,2,3,4,6); declaring those reproduces it.
PRESENT = {"categories": [1, 2, 3, 4, 6]}
PRESENT_LINEAR = {**PRESENT, **LINEAR}
PRESENT_QUADRATIC = {**PRESENT, "weights": "quadratic"}

CASES = [
    # id, coefficient, table, options, exact value, printed value, printed decimals
    ("K2011 nominal α", ALPHA, K2011, {"level": "nominal"}, Fraction(113, 152), 0.743, 3),
    ("K2011 interval α", ALPHA, K2011, {"level": "interval"}, Fraction(951, 1120), 0.849, 3),
    ("K2011 ordinal α", ALPHA, K2011, {"level": "ordinal"}, None, 0.815, 3),
    ("K2011 ratio α", ALPHA, K2011, {"level": "ratio"}, None, 0.797, 3),
    ("K2011 binary two coders α", ALPHA, K2011_BINARY, {}, Fraction(2, 21), 0.095, 3),
    ("K2011 Ben and Gerry α", ALPHA, K2011_BEN_GERRY, {}, Fraction(155, 224), 0.692, 3),
    ("Fleiss 1971 κ (R irr 0.4302445)", FLEISS, FLEISS_1971, {}, None, 0.4302445, 7),
    ("Wikipedia Fleiss 10×14 κ", FLEISS, WIKIPEDIA_10X14, {}, None, 0.210, 3),
    ("Gwet abstractors AC1", GWET, _abstractors(), {}, None, 0.84933, 5),
    ("SAS FREQ κ (table10)", COHEN, SAS_TABLE10, {}, Fraction(107, 221), 0.4842, 4),
    (
        "SAS FREQ weighted κ (Cicchetti-Allison = linear)",
        COHEN,
        SAS_TABLE10,
        LINEAR,
        Fraction(118, 251),
        0.4701,
        4,
    ),
    ("Wikipedia Cohen κ 20/5/10/15", COHEN, WIKIPEDIA_20_5_10_15, {}, Fraction(2, 5), 0.4, 1),
    ("Wikipedia Cohen κ 45/15/25/15", COHEN, WIKIPEDIA_45_15_25_15, {}, Fraction(3, 23), 0.1304, 4),
    ("Wikipedia Cohen κ 25/35/5/35", COHEN, WIKIPEDIA_25_35_5_35, {}, Fraction(7, 27), 0.2593, 4),
    ("R irr anxiety κ", COHEN, ANXIETY_2_3, PRESENT, None, -0.006289308, 9),
    ("R irr anxiety κ equal", COHEN, ANXIETY_2_3, PRESENT_LINEAR, None, 0.1459075, 7),
    ("R irr anxiety κ squared", COHEN, ANXIETY_2_3, PRESENT_QUADRATIC, None, 0.2520325, 7),
    ("Feinstein-Cicchetti A κ", COHEN, FEINSTEIN_A, {}, Fraction(3492, 4992), 0.70, 2),
    ("Feinstein-Cicchetti B κ", COHEN, FEINSTEIN_B, {}, Fraction(7, 22), 0.32, 2),
    ("Feinstein-Cicchetti A AC1", GWET, FEINSTEIN_A, {}, Fraction(35125, 50125), 0.70, 2),
    ("Feinstein-Cicchetti B AC1", GWET, FEINSTEIN_B, {}, Fraction(63125, 78125), 0.81, 2),
]


@pytest.mark.parametrize(
    ("coefficient", "table", "options", "exact", "printed", "decimals"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_published_value_reproduces(coefficient, table, options, exact, printed, decimals):  # type: ignore[no-untyped-def]
    result = coefficient(table, **options)
    assert result.undefined_reason is None
    assert round(result.value, decimals) == pytest.approx(printed, abs=1e-12)
    if exact is not None:
        assert result.value == pytest.approx(float(exact), abs=1e-12)
    if decimals >= 6:
        assert result.value == pytest.approx(printed, abs=1e-6)


def test_fleiss_1971_per_category_kappas():
    """Fleiss (1971) Table 2: κ for each diagnosis, one category against the rest."""
    published = {1: 0.245, 2: 0.245, 3: 0.520, 4: 0.471, 5: 0.566}
    exact = {1: Fraction(35, 143), 2: Fraction(35, 143), 3: Fraction(13, 25)}
    table = np.array(FLEISS_1971)
    for category, value in published.items():
        kappa = stats.fleiss_kappa((table == category).astype(int)).value
        assert round(kappa, 3) == value
        if category in exact:
            assert kappa == pytest.approx(float(exact[category]), abs=1e-12)


def test_gwet_abstractors_p_a_and_p_e():
    """Gwet's printed p_e 0.26992 is 0.269925 = (0.13·0.87 + 0.255·0.745 + 0.615·0.385)/2."""
    result = stats.gwet_ac1(_abstractors())
    assert result.p_o == pytest.approx(0.89, abs=1e-12)
    assert result.p_e == pytest.approx(0.269925, abs=1e-12)
    assert result.value == pytest.approx(0.84933, abs=5e-6)


def test_gwet_raw4raters_differs_only_by_the_population_rule():
    """K2011's matrix is Gwet's raw_4raters. Gwet/irrCAC print AC1 0.77544 and Fleiss 0.76117,
    letting unit 12 (one rating) into π; leaving it out (our rule) gives irrCAC's own result on
    the 11 pairable units (checked against irrCAC in test_stats_oracles.py)."""
    ac1, fleiss = stats.gwet_ac1(K2011), stats.fleiss_kappa(K2011)
    assert ac1.n_units_left_out == 1 and ac1.n_pairable_units == 11
    assert ac1.p_o == pytest.approx(0.818181818181818, abs=1e-12)  # Gwet's p_a 0.81818
    assert ac1.value == pytest.approx(0.775151708719259, abs=1e-12)
    assert round(ac1.value, 5) != 0.77544 and round(fleiss.value, 5) != 0.76117


def test_declared_categories_change_ac1():
    """agreement.md: on raw4raters AC1 is ~0.775 with the 5 observed categories and ~0.814 with
    34 declared (0.8139 is irrCAC's with unit 12 in; ours, unit 12 out, on 11 units)."""
    observed = stats.gwet_ac1(K2011)
    declared = stats.gwet_ac1(K2011, categories=range(1, 35))
    assert (observed.q, declared.q) == (5, 34)
    assert round(declared.value, 3) == 0.814
    assert declared.value == pytest.approx(0.8138640515335065, abs=1e-12)


def test_weights_follow_the_declared_scale_not_the_labels_present():
    """With the full 1..6 scale declared, the gap where 5 is unused counts: κ_w drops."""
    present = stats.cohen_kappa(ANXIETY_2_3, categories=[1, 2, 3, 4, 6], weights="quadratic")
    scale = stats.cohen_kappa(ANXIETY_2_3, categories=[1, 2, 3, 4, 5, 6], weights="quadratic")
    assert present.value == pytest.approx(0.2520325, abs=1e-7)
    assert scale.value == pytest.approx(0.22979797979797958, abs=1e-12)


MASI_CASES = [
    # Passonneau (2006): 1 − J·M, M = 1 equal, 2/3 subset, 1/3 overlap, 0 disjoint.
    ({"a"}, {"a"}, Fraction(0)),
    ({"a"}, {"a", "b"}, 1 - Fraction(1, 2) * Fraction(2, 3)),
    ({1, 2}, {1, 2, 3, 4}, 1 - Fraction(1, 2) * Fraction(2, 3)),  # nltk doctest: 0.665 with M=0.67
    ({"a", "b"}, {"b", "c"}, 1 - Fraction(1, 3) * Fraction(1, 3)),
    ({"a"}, {"b"}, Fraction(1)),
    (set(), set(), Fraction(0)),
    (set(), {"a"}, Fraction(1)),
]


@pytest.mark.parametrize(("a", "b", "expected"), MASI_CASES)
def test_masi_distance(a, b, expected):  # type: ignore[no-untyped-def]
    assert stats.masi_distance(a, b) == pytest.approx(float(expected), abs=1e-12)
    assert stats.masi_distance(b, a) == pytest.approx(float(expected), abs=1e-12)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"a"}, {"a"}, 0.0),
        ({"a"}, {"a", "b"}, 0.5),
        ({"a", "b"}, {"b", "c"}, 2 / 3),
        (set(), set(), 0.0),
    ],
)
def test_jaccard_distance(a, b, expected):  # type: ignore[no-untyped-def]
    assert stats.jaccard_distance(a, b) == pytest.approx(expected, abs=1e-12)
