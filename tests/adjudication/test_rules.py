"""The automatic decision rules and per-item agreement, on plain data."""

from __future__ import annotations

import pytest

from annotator.adjudication.services.rules import decide, item_agreement

F1, F2 = 1, 2


def sets(*rows: dict[int, set[int]]) -> list[dict[int, frozenset[int]]]:
    return [{f: frozenset(c) for f, c in row.items()} for row in rows]


@pytest.mark.parametrize(
    ("rows", "majority", "source"),
    [
        (sets({F1: {10}, F2: {20}}, {F1: {10}, F2: {20}}), False, "unanimous"),
        (sets({F1: {10}}, {F1: {10}, F2: set()}), False, "unanimous"),  # empty = unlabeled
        (sets({F1: {10}}, {F1: {11}}), False, None),
        (sets({F1: {10}}, {F1: {11}}), True, None),  # k = 2: no majority rule
        (sets({F1: {10}}, {F1: {10}}, {F1: {11}}), False, None),
        (sets({F1: {10}}, {F1: {10}}, {F1: {11}}), True, "majority"),
        (sets({F1: {10}}, {F1: {11}}, {F1: {12}}), True, None),
        (sets({F1: {10}, F2: {1}}, {F1: {10}, F2: {2}}, {F1: {11}, F2: {3}}), True, None),
    ],
)
def test_rules_decide_unanimous_majority_or_queue(rows, majority, source):
    assert decide(rows, [F1, F2], majority=majority).source == source


def test_majority_decides_the_labels_most_chose():
    outcome = decide(sets({F1: {10}}, {F1: {11}}, {F1: {10}}), [F1, F2], majority=True)
    assert outcome.labels == {F1: frozenset({10}), F2: frozenset()}
    assert outcome.disagreeing == (F1,)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (sets({F1: {10}}, {F1: {10}}), 1.0),
        (sets({F1: {10}}, {F1: {11}}), 0.0),
        (sets({F1: {10}, F2: {1}}, {F1: {11}, F2: {1}}), 0.5),
        (sets({F1: {10}}, {F1: {10}}, {F1: {11}}), 1 / 3),  # p_o: 1 of 3 pairs agree
        (sets({F1: {1, 2}}, {F1: {1}}), 1 - 2 / 3),  # MASI: subset, Jaccard 1/2 * 2/3
        (sets({}, {}), 1.0),
    ],
)
def test_item_agreement_is_mean_pairwise_agreement(rows, expected):
    assert item_agreement(rows, [F1, F2]) == pytest.approx(expected)
