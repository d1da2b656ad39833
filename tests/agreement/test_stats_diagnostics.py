# ruff: noqa: RUF002, RUF003 -- the notation of the sources (α, κ, ×, −).
"""Diagnostics: per-category and per-level α, annotator pairs, confusions, prevalence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from annotator.agreement import stats

ROWS = [
    ["a", "a", "b"],
    ["a", "a", None],
    ["b", "b", "b"],
    ["c", "b", "c"],
    ["c", "c", "c"],
    [None, "a", None],
]
PARENT = {"a": "X", "b": "X", "c": "Y", "X": None, "Y": None}


def test_per_category_alpha_is_binary_alpha_one_vs_rest():
    results = stats.per_category_alpha(ROWS, categories=["a", "b", "c", "d"])
    assert list(results) == ["a", "b", "c", "d"]
    for label in "abc":
        binary = [[None if v is None else int(v == label) for v in row] for row in ROWS]
        assert results[label].value == pytest.approx(
            stats.krippendorff_alpha(binary).value, abs=1e-12
        )
    assert results["d"].value is None and "no variation" in results["d"].undefined_reason


def test_per_category_alpha_on_label_sets_uses_one_variable_per_label():
    rows = [[{"a", "b"}, {"a"}], [{"b"}, {"b"}], [set(), {"a"}], [{"a", "b"}, {"a", "b"}]]
    results = stats.per_category_alpha(rows, categories=["a", "b"])
    has_a = [[int("a" in c) for c in row] for row in rows]
    assert results["a"].value == pytest.approx(stats.krippendorff_alpha(has_a).value, abs=1e-12)


def test_hierarchy_alpha_projects_labels_to_their_ancestors():
    levels = stats.hierarchy_alpha(ROWS, parent=PARENT, categories=["a", "b", "c"])
    assert [depth for depth, _ in levels] == [0, 1]
    top = [[None if v is None else PARENT[v] for v in row] for row in ROWS]
    assert levels[0][1].value == pytest.approx(stats.krippendorff_alpha(top).value, abs=1e-12)
    assert levels[1][1].value == pytest.approx(stats.krippendorff_alpha(ROWS).value, abs=1e-12)


def test_tree_distance_gives_half_credit_to_siblings():
    tree = stats.tree_distance(PARENT)
    assert (tree("a", "a"), tree("a", "b"), tree("a", "c")) == (0.0, 0.5, 1.0)
    via_matrix = stats.krippendorff_alpha(ROWS, distance=tree).value
    via_callable = stats.krippendorff_alpha(ROWS, distance=lambda x, y: tree(x, y)).value
    assert via_matrix == pytest.approx(via_callable, abs=1e-12)
    assert via_matrix > stats.krippendorff_alpha(ROWS).value


def test_pairwise_cohen_leaves_cells_empty_when_a_pair_shares_fewer_than_two_units():
    rows = [["a", "b", None], ["b", "b", None], ["a", "a", "a"], ["b", "a", None]]
    matrix = stats.pairwise_cohen(rows, raters=["ann", "bob", "cy"])
    assert matrix.labels == ["ann", "bob", "cy"]
    assert matrix.cells[0][1] == pytest.approx(stats.cohen_kappa([r[:2] for r in rows]).value)
    assert matrix.cells[0][2] is None and matrix.cells[1][2] is None and matrix.cells[0][0] is None
    json.dumps(matrix.to_dict())


def test_rater_vs_others_reports_agreement_and_alpha_without_the_rater():
    report = stats.rater_vs_others(ROWS)
    assert [r["rater"] for r in report] == [0, 1, 2]
    third = report[2]
    assert third["alpha_without"] == pytest.approx(
        stats.krippendorff_alpha([r[:2] for r in ROWS]).value
    )
    assert third["pairs"] == 8 and third["p_o"] == pytest.approx(5 / 8)


def test_coincidence_and_confusion_matrices():
    coincidence = stats.coincidence_matrix(ROWS)
    o = np.array(coincidence.cells)
    assert np.allclose(o, o.T) and o.sum() == pytest.approx(14)  # 14 pairable ratings
    confusion = stats.confusion_matrix(ROWS)
    c = np.array(confusion.cells)
    assert confusion.kind == "pairs" and np.array_equal(c, c.T)
    assert c[0, 1] == 2 and c[1, 2] == 2 and c[0, 0] == 2  # unordered pairs within units
    crosstab = stats.confusion_matrix([r[:2] for r in ROWS])
    assert crosstab.kind == "crosstab" and crosstab.cells[2][1] == 1  # rater 0 'c', rater 1 'b'
    assert stats.units_with_pair(ROWS, "c", "b") == [3]


def test_category_prevalence_over_all_and_pairable_ratings():
    prevalence = {
        p["category"]: p for p in stats.category_prevalence(ROWS, categories=["a", "b", "c", "d"])
    }
    assert prevalence["a"]["ratings"] == 5 and prevalence["a"]["pairable_ratings"] == 4
    assert prevalence["d"]["ratings"] == 0
    assert sum(p["share"] for p in prevalence.values()) == pytest.approx(1.0)
