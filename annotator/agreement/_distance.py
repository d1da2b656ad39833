# ruff: noqa: RUF002 -- formulas are written in their own notation.
"""Distances between ratings for Krippendorff's α (pure; no Django).

Each builder returns a values × values matrix δ (zero diagonal) over a RatingTable's distinct
values, or None for nominal, which never needs the matrix. Sets are compared through a
values × labels indicator matrix, so |a ∩ b| for every pair of distinct label sets is one
matrix product rather than a Python loop over pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._table import FloatArray, IntArray, RatingTable

Distance = Callable[[Any, Any], float]
LEVELS = ("nominal", "ordinal", "interval", "ratio")
_BLOCK = 256


def jaccard_distance(a: Any, b: Any) -> float:
    """1 − |a ∩ b| / |a ∪ b|; two empty sets are identical (distance 0).

    Reference: Jaccard (1912); as nltk.metrics.distance.jaccard_distance, which divides by zero
    on two empty sets.
    """
    a, b = frozenset(a), frozenset(b)
    union = len(a | b)
    return 0.0 if union == 0 else 1.0 - len(a & b) / union


def masi_distance(a: Any, b: Any) -> float:
    """MASI distance 1 − J·M (Passonneau 2006, "Measuring agreement on set-valued items").

    J = |a ∩ b| / |a ∪ b| (Jaccard) and M, the monotonicity weight, is 1 when the sets are
    equal, 2/3 when one is a subset of the other, 1/3 when they overlap otherwise, and 0 when
    disjoint. Convention: Passonneau's exact thirds; nltk's `masi_distance` rounds them to
    0.67 and 0.33, so its distances differ from these by J·(0.67 − 2/3) or J·(0.33 − 1/3).
    Two empty sets are identical (distance 0).
    """
    a, b = frozenset(a), frozenset(b)
    return float(_masi(np.array(len(a & b)), np.array(len(a)), np.array(len(b))))


@dataclass(frozen=True)
class TreeDistance:
    """δ = 0 for the same category, 0.5 for siblings (same parent), 1 otherwise.

    Built from a parent map {category: parent or None}; for a hierarchical codebook where
    confusing two leaves under one parent is a lesser disagreement than crossing parents.
    """

    parent: Mapping[Hashable, Hashable | None]

    def __call__(self, a: Hashable, b: Hashable) -> float:
        if a == b:
            return 0.0
        pa, pb = self.parent.get(a), self.parent.get(b)
        return 0.5 if pa is not None and pa == pb else 1.0


def tree_distance(parent: Mapping[Hashable, Hashable | None]) -> TreeDistance:
    """The tree distance for a hierarchy given as {category: parent or None}."""
    return TreeDistance(dict(parent))


def distance_name(level: str | None, distance: str | Distance | None) -> tuple[str, str | None]:
    """(level, distance name) as reported in a result."""
    if distance is None:
        level = level or "nominal"
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        return level, None
    if level not in (None, "nominal"):
        raise ValueError("give either level= or distance=, not both")
    if isinstance(distance, str):
        if distance not in ("masi", "jaccard"):
            raise ValueError(f"distance must be 'masi', 'jaccard' or a callable, got {distance!r}")
        return "distance", distance
    if isinstance(distance, TreeDistance):
        return "distance", "tree"
    return "distance", getattr(distance, "__name__", type(distance).__name__)


def distance_operator(
    table: RatingTable, level: str, distance: str | Distance | None
) -> DenseDelta | SetDelta | None:
    """δ for α: None for nominal/ordinal (computed from counts), else a δ operator."""
    if distance in ("masi", "jaccard") or distance in (masi_distance, jaccard_distance):
        return SetDelta(table, "masi" if distance in ("masi", masi_distance) else "jaccard")
    matrix = distance_matrix(table, level, distance)
    return None if matrix is None else DenseDelta(matrix)


def distance_matrix(
    table: RatingTable, level: str, distance: str | Distance | None
) -> FloatArray | None:
    """Dense δ over the table's values (not label sets); None for nominal and ordinal."""
    if distance is None:
        if level in ("nominal", "ordinal"):
            return None
        x = _numeric(table, level)
        if level == "interval":
            return np.subtract.outer(x, x) ** 2
        total = np.add.outer(x, x)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(total == 0, 0.0, np.subtract.outer(x, x) / total)
        return np.asarray(ratio**2, dtype=np.float64)
    if isinstance(distance, TreeDistance):
        return _tree_matrix(table, distance)
    assert callable(distance)
    values = table.values
    return np.array([[float(distance(a, b)) for b in values] for a in values])


def _numeric(table: RatingTable, level: str) -> FloatArray:
    try:
        x = np.array([float(v) for v in table.values])  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"the {level} level needs numeric categories") from None
    if level == "ratio" and (x < 0).any():
        raise ValueError("the ratio level needs non-negative values")
    return x


class DenseDelta:
    """δ as a values × values matrix (levels, tree, callables: V is the category count)."""

    def __init__(self, matrix: FloatArray):
        self.matrix = matrix

    def pairs(self, a: IntArray, b: IntArray) -> FloatArray:
        return np.asarray(self.matrix[a, b] + self.matrix[b, a], dtype=np.float64)

    def times(self, n: FloatArray) -> FloatArray:
        """(δ + δᵀ) n."""
        return np.asarray(self.matrix @ n + self.matrix.T @ n, dtype=np.float64)

    def diagonal(self) -> FloatArray:
        return np.asarray(np.diag(self.matrix), dtype=np.float64)


class SetDelta:
    """MASI or Jaccard δ between distinct label sets, never stored as a K × K matrix.

    Pairs of ratings: |a ∩ b| by popcount of bitmasks (64 labels per word). δ·n: one
    matrix product of indicator rows per block of sets, so memory is O(block × K) however
    many distinct sets the annotators produced.
    """

    def __init__(self, table: RatingTable, kind: str):
        if not table.multilabel:
            raise ValueError(f"the {kind} distance compares label sets: cells must be sets")
        self.kind = kind
        self.x = table.label_indicator()
        self.size = self.x.sum(axis=1)
        bits = np.zeros((self.x.shape[0], -(-self.x.shape[1] // 64) * 64), dtype=np.uint8)
        bits[:, : self.x.shape[1]] = self.x
        self.masks = np.packbits(bits, axis=1, bitorder="little").view(np.uint64)

    def pairs(self, a: IntArray, b: IntArray) -> FloatArray:
        inter = np.zeros(len(a))
        for word in range(self.masks.shape[1]):
            both = self.masks[a, word] & self.masks[b, word]
            inter += np.bitwise_count(both)
        return 2.0 * self._delta(inter, self.size[a], self.size[b])

    def times(self, n: FloatArray) -> FloatArray:
        """(δ + δᵀ) n, in row blocks."""
        out = np.empty(len(self.size))
        for start in range(0, len(self.size), _BLOCK):
            rows = slice(start, start + _BLOCK)
            inter = self.x[rows] @ self.x.T
            out[rows] = self._delta(inter, self.size[rows, None], self.size[None, :]) @ n
        return 2.0 * out

    def diagonal(self) -> FloatArray:
        return np.zeros(len(self.size))

    def _delta(self, inter: Any, size_a: Any, size_b: Any) -> FloatArray:
        if self.kind == "masi":
            return _masi(inter, size_a, size_b)
        union = size_a + size_b - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.where(union == 0, 0.0, 1.0 - inter / union), dtype=np.float64)


def _masi(inter: Any, sa: Any, sb: Any) -> FloatArray:
    union = sa + sb - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = np.where(union == 0, 1.0, inter / union)
    equal = (inter == sa) & (inter == sb)
    subset = inter == np.minimum(sa, sb)
    monotonicity = np.select([equal, subset, inter > 0], [1.0, 2.0 / 3.0, 1.0 / 3.0], 0.0)
    return np.asarray(1.0 - jaccard * monotonicity, dtype=np.float64)


def _tree_matrix(table: RatingTable, tree: TreeDistance) -> FloatArray:
    if table.multilabel:
        raise ValueError("the tree distance compares single categories, not label sets")
    parents = [tree.parent.get(v) for v in table.values]
    ids = {p: i for i, p in enumerate(dict.fromkeys(p for p in parents if p is not None))}
    pid = np.array([ids.get(p, -1) if p is not None else -1 for p in parents])
    sibling = (pid[:, None] == pid[None, :]) & (pid[:, None] >= 0)
    out = np.where(sibling, 0.5, 1.0)
    np.fill_diagonal(out, 0.0)
    return out


def ancestor_path(parent: Mapping[Hashable, Hashable | None], node: Hashable) -> list[Hashable]:
    """[root, ..., node] following the parent map; a cycle is an error."""
    path = [node]
    while (up := parent.get(path[-1])) is not None:
        if up in path:
            raise ValueError(f"the parent map has a cycle through {up!r}")
        path.append(up)
    return path[::-1]
