# ruff: noqa: RUF002, RUF003 -- the notation of the sources (α, κ, π, Σ, −).
"""AC1's q, the number of categories in p_e = Σ_k π_k (1 − π_k) / (q − 1), for multi-choice
and hierarchical facets, on tables small enough to compute by hand; and the pairwise κ entries
(n, p_o, p_e, CI) against scikit-learn.

Gwet (2008; Handbook 2014, ch. 2) defines q as the number of categories of the rating scale: the values a
rating can take. For a multi-choice facet the values compared are label SETS (π_k runs over
them), so q is the number of distinct sets among the pairable ratings — what irrCAC counts when
given set-valued ratings (its `categ` defaults to the distinct values observed). For a
hierarchy the values are the categories of the level compared: the leaves, not the groups
above them, plus any group a rater actually chose.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from annotator.agreement import stats, summary

# Two raters, four units. π over the distinct sets: {a} 3/8, {a, b} 3/8, {b} 1/4.
SETS = [
    [{"a"}, {"a"}],
    [{"a", "b"}, {"a"}],
    [{"b"}, {"b"}],
    [{"a", "b"}, {"a", "b"}],
]


def test_multi_choice_ac1_counts_the_distinct_label_sets_compared():
    result = stats.gwet_ac1(SETS, categories=["a", "b", "c", "d"])
    # p_a = 3/4; Σ π(1 − π) = 2·(3/8)(5/8) + (1/4)(3/4) = 21/32; q = 3 sets → p_e = 21/64
    p_a, p_e = Fraction(3, 4), Fraction(21, 32) / 2
    assert result.q == 3 and result.extra["q_rule"].startswith("distinct label sets")
    assert result.p_o == pytest.approx(float(p_a), abs=1e-12)
    assert result.p_e == pytest.approx(float(p_e), abs=1e-12)
    assert result.value == pytest.approx(float((p_a - p_e) / (1 - p_e)), abs=1e-12)  # 27/43
    assert result.value == pytest.approx(27 / 43, abs=1e-12)


def test_the_old_convention_counted_declared_labels_and_overstated_ac1():
    """q = 4 declared labels (the convention of schema-1 results) lowers p_e to 21/96 and lifts
    AC1 to 0.68, though only three values were ever compared; the declared labels are not the
    scale the sets are rated on (that would be the 2^4 = 16 possible sets, mostly never used)."""
    old = stats.gwet_ac1(SETS, categories=["a", "b", "c", "d"], q=4)
    assert old.value == pytest.approx(0.68, abs=1e-12)
    assert old.value > stats.gwet_ac1(SETS, categories=["a", "b", "c", "d"]).value


def test_single_choice_ac1_still_counts_the_declared_categories():
    rows = [["a", "a"], ["a", "b"], ["b", "b"], ["a", "a"]]
    result = stats.gwet_ac1(rows, categories=["a", "b", "c"])
    assert result.q == 3 and result.extra["q_rule"] == "declared categories"


# X groups a and b; Y groups c. Declared: the groups and the leaves, five categories.
PARENT = {"X": None, "a": "X", "b": "X", "Y": None, "c": "Y"}
DECLARED = ["X", "a", "b", "Y", "c"]
LEAVES = [["a", "a"], ["a", "b"], ["c", "a"], ["b", "b"]]


def test_hierarchy_ac1_counts_the_leaves_not_the_groups():
    assert stats.hierarchy_leaves(DECLARED, PARENT) == ["a", "b", "c"]
    q = stats.hierarchy_q(LEAVES, ["a", "b", "c"], categories=DECLARED)
    assert q == 3
    result = stats.gwet_ac1(LEAVES, categories=DECLARED, q=q)
    # p_a = 1/2; π: a 1/2, b 3/8, c 1/8; Σ π(1 − π) = 1/4 + 15/64 + 7/64 = 19/32; p_e = 19/64
    assert result.value == pytest.approx(13 / 45, abs=1e-12)
    with_groups = stats.gwet_ac1(LEAVES, categories=DECLARED)  # q = 5: groups counted
    assert with_groups.q == 5 and with_groups.value > result.value


def test_a_group_a_rater_chose_counts_as_a_category():
    rows = [*LEAVES, ["X", "a"]]
    assert stats.hierarchy_q(rows, ["a", "b", "c"], categories=DECLARED) == 4


def test_hierarchy_levels_have_ac1_with_the_categories_of_that_level():
    levels = dict(stats.hierarchy_ac1(LEAVES, parent=PARENT, categories=DECLARED))
    # top level: X X, X X, Y X, X X → p_a = 3/4; π_X = 7/8, π_Y = 1/8; q = 2 → p_e = 7/32
    assert levels[0].q == 2 and levels[0].value == pytest.approx(17 / 25, abs=1e-12)
    assert levels[1].q == 3 and levels[1].value == pytest.approx(13 / 45, abs=1e-12)


def test_the_stored_result_uses_these_conventions_and_records_them():
    table = stats.encode_table(LEAVES, categories=DECLARED)
    categories = [{"code": c, "name": c, "parent": PARENT[c]} for c in DECLARED]
    facet = summary.facet_summary(
        table,
        key="symptom",
        name="Symptom",
        kind="single",
        categories=categories,
        parent=PARENT,
        rater_names=["ann", "bob"],
    )
    ac1 = facet["coefficients"]["gwet_ac1"]
    assert ac1["q"] == 3 and ac1["value"] == pytest.approx(13 / 45, abs=1e-12)
    assert ac1["extra"]["q_rule"] == summary.HIERARCHY_Q_RULE
    assert [level["gwet_ac1"]["q"] for level in facet["levels"]] == [2, 3]
    conventions = summary.conventions()
    assert conventions["ac1_q"]["hierarchy"] == summary.HIERARCHY_Q_RULE
    assert "lower bound" in conventions["threshold"] and conventions["bootstrap"] is None
    assert summary.conventions_of({"facets": []}) == summary.LEGACY_CONVENTIONS


def test_pairwise_kappa_entries_carry_n_p_o_and_ci_and_agree_with_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rows = [
        ["a", "a", "b"],
        ["a", "b", "b"],
        ["b", "b", None],
        ["c", "c", "c"],
        ["a", "a", "a"],
        ["b", "c", "b"],
        [None, "a", "a"],
    ]
    matrix = stats.pairwise_cohen(rows, categories=["a", "b", "c"], raters=["p", "q", "r"])
    assert [(e["i"], e["j"]) for e in matrix.pairs] == [(0, 1), (0, 2), (1, 2)]
    for entry in matrix.pairs:
        i, j = entry["i"], entry["j"]
        both = [(row[i], row[j]) for row in rows if row[i] is not None and row[j] is not None]
        a, b = [x for x, _ in both], [y for _, y in both]
        assert entry["raters"] == [["p", "q", "r"][i], ["p", "q", "r"][j]]
        assert entry["n"] == len(both)
        assert entry["p_o"] == pytest.approx(sum(x == y for x, y in both) / len(both), abs=1e-12)
        want = metrics.cohen_kappa_score(a, b, labels=["a", "b", "c"])
        assert entry["kappa"] == pytest.approx(want, abs=1e-12)
        assert matrix.cells[i][j] == entry["kappa"]
        assert entry["ci"][0] <= entry["kappa"] <= entry["ci"][1] and entry["se"] > 0
    # p × q by hand: 6 shared units, 4 agree; margins p a 3, b 2, c 1 and q a 2, b 2, c 2, so
    # p_e = (3·2 + 2·2 + 1·2)/36 = 1/3 and κ = (2/3 − 1/3)/(1 − 1/3) = 1/2
    first = matrix.pairs[0]
    assert first["n"] == 6 and first["p_o"] == pytest.approx(4 / 6, abs=1e-12)
    assert first["p_e"] == pytest.approx(1 / 3, abs=1e-12)
    assert first["kappa"] == pytest.approx(0.5, abs=1e-12)
