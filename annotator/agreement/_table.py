# ruff: noqa: RUF001, RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""Encode a units × raters table of labels as integer codes (pure; no Django).

A cell is a hashable label, a set of labels (multi-label facet), or missing (`None`, NaN,
`pandas.NA`). Every coefficient works on the codes: `codes[u, r]` is the index of the value
rater `r` gave unit `u` in `values`, or -1 when missing. Encoding once and passing the
`RatingTable` to several coefficients saves re-reading a large table.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
MISSING = -1


@dataclass(frozen=True, eq=False)
class RatingTable:
    """A coded units × raters table.

    `values` are the distinct ratings in scale order: the declared categories (in the order
    given) for a single-label facet, or the distinct label sets seen for a multi-label facet.
    `labels` is the category set: declared when `declared` is true, else the observed ones.
    """

    codes: IntArray
    values: tuple[Hashable, ...]
    labels: tuple[Hashable, ...]
    declared: bool
    multilabel: bool
    raters: tuple[Hashable, ...]

    @property
    def n_units(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_raters(self) -> int:
        return int(self.codes.shape[1])

    @property
    def q(self) -> int:
        """Number of categories: declared, or observed when none were declared."""
        return len(self.labels)

    def label_indicator(self) -> FloatArray:
        """values × labels 0/1 matrix: which labels each value holds (identity if single)."""
        if not self.multilabel:
            return np.eye(len(self.values))
        index = {label: i for i, label in enumerate(self.labels)}
        out = np.zeros((len(self.values), len(self.labels)))
        for row, value in enumerate(self.values):
            for label in value:  # type: ignore[attr-defined]
                out[row, index[label]] = 1.0
        return out

    def columns(self, keep: Sequence[int]) -> RatingTable:
        """The same coding restricted to some raters (columns)."""
        codes = self.codes[:, list(keep)]
        raters = tuple(self.raters[i] for i in keep)
        return RatingTable(codes, self.values, self.labels, self.declared, self.multilabel, raters)

    def with_codes(self, codes: IntArray, values: Sequence[Hashable]) -> RatingTable:
        """A table with the same raters over recoded values (single-label, values declared)."""
        return RatingTable(codes, tuple(values), tuple(values), True, False, self.raters)


def encode(
    table: Any,
    categories: Iterable[Hashable] | None = None,
    raters: Sequence[Hashable] | None = None,
) -> RatingTable:
    """Code `table` (a RatingTable, a 2-D array or a sequence of equal-length rows)."""
    if isinstance(table, RatingTable):
        if categories is not None and tuple(_ordered(categories)) != table.labels:
            raise ValueError("categories= differs from the categories the table was coded with")
        return table
    declared = None if categories is None else _ordered(categories)
    if len(set(declared or ())) != len(declared or ()):
        raise ValueError("categories= lists a category twice")
    array = _as_numeric_array(table)
    if array is not None:
        return _encode_numeric(array, declared, raters)
    return _encode_objects(table, declared, raters)


def _ordered(categories: Iterable[Hashable]) -> list[Hashable]:
    """Declared order is the order given; an unordered set is sorted."""
    if isinstance(categories, set | frozenset):
        return _sorted(categories)
    return list(categories)


def _sorted(values: Iterable[Hashable]) -> list[Hashable]:
    items = list(values)
    try:
        return sorted(items)  # type: ignore[type-var]
    except TypeError:
        return sorted(items, key=lambda v: (type(v).__name__, repr(v)))


def _as_numeric_array(table: Any) -> npt.NDArray[Any] | None:
    if not isinstance(table, np.ndarray) and not hasattr(table, "to_numpy"):
        return None
    array = np.asarray(table.to_numpy() if hasattr(table, "to_numpy") else table)
    if array.ndim != 2:
        raise ValueError(f"a units × raters table must be 2-D, got {array.ndim}-D")
    return array if array.dtype.kind in "biuf" else None


def _encode_numeric(
    array: npt.NDArray[Any], declared: list[Hashable] | None, raters: Sequence[Hashable] | None
) -> RatingTable:
    present = ~np.isnan(array) if array.dtype.kind == "f" else np.ones(array.shape, bool)
    observed, inverse = np.unique(array[present], return_inverse=True)
    if declared is None:
        values: list[Hashable] = [_scalar(v) for v in observed]
        remap = np.arange(len(values))
    else:
        values = declared
        position = {v: i for i, v in enumerate(declared)}
        unknown = [_scalar(v) for v in observed if _scalar(v) not in position]
        if unknown:
            raise ValueError(f"ratings outside the declared categories: {unknown[:5]}")
        remap = np.array([position[_scalar(v)] for v in observed], dtype=np.int64)
    codes = np.full(array.shape, MISSING, dtype=np.int64)
    codes[present] = remap[inverse] if len(observed) else inverse
    return RatingTable(
        codes, tuple(values), tuple(values), declared is not None, False, _raters(codes, raters)
    )


def _scalar(value: Any) -> Hashable:
    item = value.item() if hasattr(value, "item") else value
    return int(item) if isinstance(item, float) and item.is_integer() else item


def _is_missing(cell: Any) -> bool:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return True
    return type(cell).__name__ in {"NAType", "NaTType"}


def _encode_objects(
    table: Any, declared: list[Hashable] | None, raters: Sequence[Hashable] | None
) -> RatingTable:
    rows = [list(row) for row in table]
    width = len(rows[0]) if rows else 0
    if any(len(row) != width for row in rows):
        raise ValueError("every row of a units × raters table needs the same number of cells")
    index: dict[Hashable, int] = {}
    codes = np.array(_codes(rows, index), dtype=np.int64).reshape(len(rows), width)
    seen = list(index)
    kinds = {isinstance(v, frozenset) for v in seen}
    if len(kinds) > 1:
        raise ValueError("a table mixes label sets with single labels: use sets in every cell")
    multilabel = kinds == {True}
    build = _multilabel_values if multilabel else _single_values
    values, labels, remap = build(seen, declared)
    if len(remap):
        codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], MISSING)
    return RatingTable(
        codes, values, labels, declared is not None, multilabel, _raters(codes, raters)
    )


def _codes(rows: list[list[Any]], index: dict[Hashable, int]) -> list[int]:
    """Every cell's code, row by row (`_code`), with the cells tables mostly hold (None, a
    string, a frozenset of labels: never a missing value of another kind, their own key) coded
    inline: a run's machine partitions code a million cells this way."""
    get = index.get
    out: list[int] = []
    append = out.append
    for row in rows:
        for cell in row:
            if cell is None:
                append(MISSING)
                continue
            kind = type(cell)
            if kind is str or kind is frozenset:
                code = get(cell)
                if code is None:
                    code = index[cell] = len(index)
                append(code)
            else:
                append(_code(cell, index))
    return out


def _code(cell: Any, index: dict[Hashable, int]) -> int:
    if _is_missing(cell):
        return MISSING
    key = frozenset(cell) if isinstance(cell, set | frozenset) else cell
    code = index.get(key)
    if code is None:
        code = index[key] = len(index)
    return code


def _single_values(
    seen: list[Hashable], declared: list[Hashable] | None
) -> tuple[tuple[Hashable, ...], tuple[Hashable, ...], IntArray]:
    values = declared if declared is not None else _sorted(seen)
    position = {v: i for i, v in enumerate(values)}
    unknown = [v for v in seen if v not in position]
    if unknown:
        raise ValueError(f"ratings outside the declared categories: {unknown[:5]}")
    remap = np.array([position[v] for v in seen], dtype=np.int64)
    return tuple(values), tuple(values), remap


def _multilabel_values(
    seen: list[Hashable], declared: list[Hashable] | None
) -> tuple[tuple[Hashable, ...], tuple[Hashable, ...], IntArray]:
    used = {label for value in seen for label in value}  # type: ignore[attr-defined]
    labels = declared if declared is not None else _sorted(used)
    position = {label: i for i, label in enumerate(labels)}
    unknown = [label for label in used if label not in position]
    if unknown:
        raise ValueError(f"labels outside the declared categories: {unknown[:5]}")
    values = sorted(seen, key=lambda v: sorted(position[x] for x in v))  # type: ignore[attr-defined]
    order = {v: i for i, v in enumerate(values)}
    remap = np.array([order[v] for v in seen], dtype=np.int64)
    return tuple(values), tuple(labels), remap


def _raters(codes: IntArray, raters: Sequence[Hashable] | None) -> tuple[Hashable, ...]:
    if raters is None:
        return tuple(range(codes.shape[1]))
    if len(raters) != codes.shape[1]:
        raise ValueError(f"{len(raters)} rater names for {codes.shape[1]} columns")
    return tuple(raters)


@dataclass(frozen=True, eq=False)
class Pairable:
    """The pairable units (≥ 2 ratings), each row's ratings packed to the left.

    `values[u, j]` for j < m[u] are unit u's ratings (order within a unit is irrelevant to
    every coefficient here except Cohen's κ, which reads the original columns).
    """

    values: IntArray
    m: IntArray
    n_rows: int
    n_pairable: int

    # The three views below are computed once per Pairable (each coefficient's model reads
    # them; `pairable` keeps one Pairable per table) and handed out read-only.
    def flat(self) -> tuple[IntArray, IntArray]:
        """(unit index, value) of every pairable rating."""
        return self._flat

    @functools.cached_property
    def _flat(self) -> tuple[IntArray, IntArray]:
        present = self.values >= 0
        units = np.broadcast_to(np.arange(self.values.shape[0])[:, None], self.values.shape)
        return _frozen(units[present]), _frozen(self.values[present])

    def column_pairs(self) -> Iterable[tuple[IntArray, IntArray, IntArray]]:
        """(units, a, b) for every pair of rating slots i < j both present."""
        return self._column_pairs

    @functools.cached_property
    def _column_pairs(self) -> list[tuple[IntArray, IntArray, IntArray]]:
        width = self.values.shape[1]
        out = []
        for i in range(width):
            for j in range(i + 1, width):
                units = np.flatnonzero(self.values[:, j] >= 0)
                out.append((units, self.values[units, i], self.values[units, j]))
        return [(_frozen(u), _frozen(a), _frozen(b)) for u, a, b in out]

    @functools.cached_property
    def observed(self) -> IntArray:
        """The distinct values among the pairable ratings, ascending (np.unique of them, by
        counting: the codes are small non-negative ints)."""
        present = self._flat[1]
        return _frozen(np.flatnonzero(np.bincount(present)) if present.size else present)


def _frozen(array: IntArray) -> IntArray:
    array.setflags(write=False)
    return array


# A run computes a dozen coefficients and diagnostics on each facet's table, and each starts
# from its pairable units: packed once per table (tables are never changed once built).
_PAIRABLE: weakref.WeakKeyDictionary[RatingTable, Pairable] = weakref.WeakKeyDictionary()


def pairable(table: RatingTable) -> Pairable:
    """Units with at least two ratings; the population every coefficient uses."""
    found = _PAIRABLE.get(table)
    if found is None:
        found = _PAIRABLE[table] = _pack(table)
    return found


def _pack(table: RatingTable) -> Pairable:
    m_all = (table.codes >= 0).sum(axis=1)
    keep = m_all >= 2
    # Sorting -codes ascending puts present codes (≤ 0) before missing ones (+1).
    packed = -np.sort(-table.codes[keep], axis=1)
    width = int(m_all.max()) if keep.any() else 0
    return Pairable(packed[:, :width], m_all[keep], table.n_units, int(keep.sum()))
