"""The label table matches labels to annotations and numbers units by id lookups: they must
give what the sorting versions (np.searchsorted, np.unique) give, dense ids or sparse."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.agreement._table import RatingTable, pairable
from annotator.agreement.labels import _distinct, _positions, _unique_inverse


def sorted_positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids, wanted, sorter=order), len(order) - 1)
    match = order[at]
    return np.where(ids[match] == wanted, match, -1)


@pytest.mark.parametrize("spread", [1, 3, 1000])  # dense, dense with gaps, sparse
def test_positions_and_units_match_the_sorting_versions(spread: int) -> None:
    rng = np.random.default_rng(spread)
    ids = rng.permutation(np.arange(5, 5 + 2_000 * spread, spread)).astype(np.int64)
    wanted = rng.integers(0, 6 + 2_000 * spread, 10_000).astype(np.int64)
    wanted[:100] = ids[:100]
    assert np.array_equal(_positions(ids, wanted), sorted_positions(ids, wanted))
    values = rng.choice(ids, 8_000)
    units, row = _unique_inverse(values)
    expected_units, expected_row = np.unique(values, return_inverse=True)
    assert np.array_equal(units, expected_units) and units.dtype == expected_units.dtype
    assert np.array_equal(row, expected_row)
    distinct = _distinct(values)
    assert np.array_equal(distinct, expected_units) and distinct.dtype == expected_units.dtype


def test_empty_inputs() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert _positions(empty, np.array([1, 2])).tolist() == [-1, -1]
    assert _positions(np.array([1, 2]), empty).tolist() == []
    units, row = _unique_inverse(empty)
    assert units.tolist() == [] and row.tolist() == [] and _distinct(empty).tolist() == []


def test_a_tables_pairable_units_are_packed_once_and_read_only() -> None:
    codes = np.array([[0, 1, -1], [1, 1, 1], [-1, -1, 0], [2, -1, 2]])
    table = RatingTable(codes, ("a", "b", "c"), ("a", "b", "c"), True, False, (1, 2, 3))
    pair = pairable(table)
    assert pairable(table) is pair
    units, values = pair.flat()
    assert units.tolist() == [0, 0, 1, 1, 1, 2, 2] and values.tolist() == [1, 0, 1, 1, 1, 2, 2]
    assert pair.observed.tolist() == [0, 1, 2]
    with pytest.raises(ValueError):
        values[0] = 5
