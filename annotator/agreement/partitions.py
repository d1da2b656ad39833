# ruff: noqa: RUF001, RUF002, RUF003 -- α, Δ, ×, − are the notation of the statistics.
"""Agreement partitioned by who rated: humans with humans (the headline), humans with a machine
rater, machine with machine, everyone pooled; the substitution test; the confusion of the human
majority against the machine (pure; numpy, no Django).

Inputs are plain cells (`facet_partitions`): per facet a units × humans table (a category code,
a frozenset of codes for a multi-choice facet, or None) and the machine columns ({(rater,
sample): [cell per unit]}); or the same coded as integers against a `Scale`
(`coded_partitions`), as an agreement run's label tables already are: every partition is then
a slice of one array, with no Python object per item. The coefficient is the facet's headline:
nominal Krippendorff's α, MASI α for label sets.

The substitution test (Ahmed et al., MSR 2025): α of the humans beside α with each human in turn
replaced by the machine (the machine's label put in that human's cells), on the units the
machine labelled that have at least two human ratings. Both tables then have the same pairable
units, so the delete-one-unit jackknife is paired: the change Δ = mean(α substituted) − α humans
is re-estimated without each unit, and its 95% interval comes from those replicates. The
verdict: a loss (the interval below 0), a gain (above 0), a pass (the lower bound at or above
−MARGIN), or inconclusive (0 inside an interval reaching further down).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from ._alpha import AlphaModel
from ._distance import distance_name, distance_operator
from ._table import MISSING, FloatArray, IntArray, RatingTable, _sorted, pairable
from ._uncertainty import jackknife
from .stats import alpha_on

Cell = Hashable | None
Column = tuple[str, int]  # (machine rater name, sample index)
INTERVAL = "delete-one-unit jackknife over items, normal 95% interval (paired for Δ)"
# The loss of α the substitution test tolerates before it says "could replace": the lower
# bound of Δ's interval must reach −MARGIN (an equivalence reading; a wide interval that merely
# includes 0 is inconclusive, not a pass).
MARGIN = 0.1


def facet_partitions(
    *,
    key: str,
    name: str,
    multilabel: bool,
    categories: Sequence[str],
    humans: Sequence[Sequence[Cell]],
    human_names: Sequence[str],
    machines: Mapping[Column, Sequence[Cell]],
) -> dict[str, Any]:
    """Every partition of one facet (see the module docstring), from plain cells."""
    scale = Scale(categories, multilabel)
    width = len(human_names) if not humans else len(humans[0])
    rows = scale.code([cell for row in humans for cell in row]).reshape(len(humans), width)
    columns = {column: scale.code(cells) for column, cells in machines.items()}
    return coded_partitions(
        key=key, name=name, scale=scale, humans=rows, human_names=human_names, machines=columns
    )


class Scale:
    """What one facet's cells are coded against, so a partition's tables are slices of one
    integer array rather than a Python list per item (a run's tables hold 100,000 items).

    `universe[i]` is the cell coded i (-1: no rating): the declared categories of a
    single-choice facet, in order; the label sets met so far of a multi-choice one. `_coded`
    turns a slice into the RatingTable `encode_table` gives the same cells — the same values in
    the same order, so every figure is the one the cells give."""

    def __init__(self, categories: Sequence[str], multilabel: bool, sets: Sequence[Cell] = ()):
        self.labels = list(categories)
        self.multilabel = multilabel
        self.universe: list[Hashable] = list(self.labels) if not multilabel else []
        self.index: dict[Hashable, int] = {c: i for i, c in enumerate(self.universe)}
        for value in sets:
            self.add(value)

    def add(self, cell: Cell) -> int:
        """The code of a cell (a category, or a set of them); -1 for no rating."""
        if cell is None:
            return MISSING
        key: Hashable = frozenset(cell) if self.multilabel else cell  # type: ignore[call-overload]
        code = self.index.get(key)
        if code is None:
            if not self.multilabel:
                raise ValueError(f"ratings outside the declared categories: {[cell]}")
            code = self.index[key] = len(self.universe)
            self.universe.append(key)
        return code

    def code(self, cells: Sequence[Cell]) -> IntArray:
        return np.fromiter((self.add(c) for c in cells), dtype=np.int64, count=len(cells))

    def rank(self) -> IntArray:
        """Each label set's place in the order `encode_table` gives sets: by the sorted
        positions of their labels among the labels used. Positions among every label used
        order any subset of the sets as positions among that subset's own labels would."""
        used = _sorted({label for value in self.universe for label in value})  # type: ignore[attr-defined]
        position = {label: i for i, label in enumerate(used)}
        keys = [sorted(position[x] for x in value) for value in self.universe]  # type: ignore[attr-defined]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        rank = np.empty(len(keys), dtype=np.int64)
        rank[order] = np.arange(len(keys))
        return rank


def coded_partitions(
    *,
    key: str,
    name: str,
    scale: Scale,
    humans: IntArray,
    human_names: Sequence[str],
    machines: Mapping[Column, IntArray],
) -> dict[str, Any]:
    """Every partition of one facet from coded cells: `humans` units × humans and each
    machine column (one code per unit) coded against `scale` (-1: no rating)."""
    facet = _Facet(scale)
    raters = sorted({rater for rater, _ in machines})
    first = {r: machines[(r, 0)] for r in raters if (r, 0) in machines}
    all_columns = [machines[c] for c in sorted(machines)]
    out: dict[str, Any] = {
        "key": key,
        "name": name,
        "coefficient": "krippendorff_alpha_masi" if scale.multilabel else "krippendorff_alpha",
        "human_human": facet.alpha(humans),
        "pooled": facet.alpha(np.column_stack([humans, *all_columns])),
        "machine_machine": _machine_machine(first, facet),
        "raters": [],
    }
    for rater in raters:
        samples = [machines[c] for c in sorted(machines) if c[0] == rater]
        out["raters"].append(_rater_partitions(rater, humans, human_names, samples, facet, name))
    return out


def _rater_partitions(
    rater: str,
    rows: IntArray,
    human_names: Sequence[str],
    samples: list[IntArray],
    facet: _Facet,
    name: str,
) -> dict[str, Any]:
    machine = samples[0]
    keep = np.flatnonzero((machine >= 0) & ((rows >= 0).sum(axis=1) >= 2))
    sub_rows, sub_machine = rows[keep], machine[keep]
    test = _substitution(sub_rows, sub_machine, human_names, facet)
    test["verdict"] = verdict(test, rater=rater, facet=name)
    return {
        "rater": rater,
        "units": len(keep),
        "human_machine": _human_machine(sub_rows, sub_machine, human_names, facet),
        "machine_machine": facet.alpha(np.column_stack(samples)) if len(samples) > 1 else None,
        "substitution": test,
        "confusion": _majority_confusion(sub_rows, sub_machine, facet),
    }


def _machine_machine(first: Mapping[str, IntArray], facet: _Facet) -> dict[str, Any] | None:
    """α among the machine raters (each one's first sample); None with fewer than two."""
    if len(first) < 2:
        return None
    return facet.alpha(np.column_stack([first[r] for r in sorted(first)]))


# -- the coefficient with its replicates ---------------------------------------------------------
class _Facet:
    """The tables of one facet's partitions: coded slices → RatingTable → α."""

    def __init__(self, scale: Scale):
        self.scale = scale
        self.labels = tuple(scale.labels)
        self.rank = scale.rank() if scale.multilabel else None

    def table(self, codes: IntArray) -> RatingTable:
        """The RatingTable `encode_table` gives these cells (multi-choice: the label sets
        present, in its order, and the labels they use, sorted; undeclared)."""
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        raters = tuple(range(codes.shape[1]))
        if self.rank is None:
            return RatingTable(codes, self.labels, self.labels, True, False, raters)
        universe = self.scale.universe
        present = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(universe)))
        if not present.size:  # no set at all: encode_table codes it as an empty single scale
            return RatingTable(codes, (), (), False, False, raters)
        ordered = present[np.argsort(self.rank[present], kind="stable")]
        remap = np.full(len(universe), MISSING, dtype=np.int64)
        remap[ordered] = np.arange(len(ordered))
        recoded = np.where(codes >= 0, remap[np.maximum(codes, 0)], MISSING)
        values = tuple(universe[i] for i in ordered)
        used = _sorted({label for value in values for label in value})
        return RatingTable(recoded, values, tuple(used), False, True, raters)

    def fit(self, codes: IntArray) -> tuple[dict[str, Any], FloatArray | None]:
        """(α as stored, its delete-one-unit replicates over the pairable units or None)."""
        if not len(codes):
            return _undefined("no item has a rating of this facet"), None
        if codes.shape[1] < 2:
            return _undefined("fewer than two raters"), None
        coded = self.table(codes)
        pair = pairable(coded)
        distance = "masi" if self.scale.multilabel else None
        result = alpha_on(coded, pair, None, distance)
        stored = {
            "value": result.value,
            "se": result.se,
            "ci": list(result.ci) if result.ci else None,
            "n_pairable_units": result.n_pairable_units,
            "n_raters": result.n_raters,
            "undefined_reason": result.undefined_reason,
        }
        if result.value is None or pair.n_pairable < 2:
            return stored, None
        level, _ = distance_name(None, distance)
        delta = distance_operator(coded, level, distance)
        model = AlphaModel(pair, len(coded.values), delta, False)
        return stored, model.leave_one_out()

    def alpha(self, codes: IntArray) -> dict[str, Any]:
        return self.fit(codes)[0]


def _undefined(reason: str) -> dict[str, Any]:
    return {
        "value": None,
        "se": None,
        "ci": None,
        "n_pairable_units": 0,
        "n_raters": 0,
        "undefined_reason": reason,
    }


# -- human–machine and the substitution test ------------------------------------------------------
def _human_machine(
    rows: IntArray, machine: IntArray, human_names: Sequence[str], facet: _Facet
) -> dict[str, Any]:
    """α of each human with the machine (two columns, the units both rated), and their mean
    with a delete-one-unit jackknife interval (a unit a human did not rate leaves that pair's
    α unchanged)."""
    pairs, replicates, values = [], [], []
    for h, person in enumerate(human_names):
        rated = np.flatnonzero(rows[:, h] >= 0)
        stored, loo = facet.fit(np.column_stack([rows[rated, h], machine[rated]]))
        pairs.append({"human": person, **stored})
        if stored["value"] is None or loo is None:
            continue
        full = np.full(len(rows), stored["value"])
        full[rated] = loo
        replicates.append(full)
        values.append(stored["value"])
    mean = _mean_with_interval(values, replicates)
    return {"pairs": pairs, **mean}


def _substitution(
    rows: IntArray, machine: IntArray, human_names: Sequence[str], facet: _Facet
) -> dict[str, Any]:
    """α of the humans, α with each human replaced by the machine in turn, their mean, and
    the change Δ with a paired unit jackknife interval (rows: units with ≥ 2 human ratings
    and a machine label)."""
    humans, base = facet.fit(rows)
    replaced, replicates, values = [], [], []
    for h, person in enumerate(human_names):
        rated = rows[:, h] >= 0
        if not rated.any():
            continue  # this human rated none of these items: nothing to replace
        swapped = rows.copy()
        swapped[:, h] = np.where(rated, machine, MISSING)
        stored, loo = facet.fit(swapped)
        replaced.append({"human": person, **stored})
        if stored["value"] is not None and loo is not None:
            values.append(stored["value"])
            replicates.append(loo)
    mean = _mean_with_interval(values, replicates)
    difference = _difference(humans, base, values, replicates)
    return {
        "units": len(rows),
        "humans": humans,
        "replaced": replaced,
        "substituted": mean,
        "difference": difference,
        "interval": INTERVAL,
        "margin": MARGIN,
    }


def _mean_with_interval(values: list[float], replicates: list[FloatArray]) -> dict[str, Any]:
    if not values:
        return {"value": None, "se": None, "ci": None}
    value = float(np.mean(values))
    se, ci, _ = jackknife(value, np.mean(np.vstack(replicates), axis=0))
    return {"value": value, "se": se, "ci": list(ci) if ci else None}


def _difference(
    humans: dict[str, Any],
    base: FloatArray | None,
    values: list[float],
    replicates: list[FloatArray],
) -> dict[str, Any]:
    """Δ = mean substituted α − α of the humans, its jackknife SE over the shared units and a
    normal 95% interval (not capped: Δ may exceed 1 in either direction only in theory)."""
    if humans["value"] is None or base is None or not values:
        return {"value": None, "se": None, "ci": None}
    value = float(np.mean(values)) - float(humans["value"])
    paired = np.mean(np.vstack(replicates), axis=0) - base
    se, _, _ = jackknife(value, paired)
    if se is None:
        return {"value": value, "se": None, "ci": None}
    z = NormalDist().inv_cdf(0.975)
    return {"value": value, "se": se, "ci": [value - z * se, value + z * se]}


def verdict(test: Mapping[str, Any], *, rater: str, facet: str) -> str:
    """The sentence a paper would write about the substitution test of one facet."""
    humans, mean, diff = test["humans"], test["substituted"], test["difference"]
    if humans["value"] is None:
        reason = humans.get("undefined_reason") or "undefined"
        return (
            f"{facet}: α of the humans is undefined on the {test['units']} items {rater} "
            f"labelled ({reason}), so the substitution test cannot be read."
        )
    if mean["value"] is None or diff["ci"] is None:
        return (
            f"{facet}: α with {rater} in place of a human is undefined on these "
            f"{test['units']} items, so the substitution test cannot be read."
        )
    low, high = diff["ci"]
    said = (
        f"{facet}: replacing one human annotator by {rater} changes Krippendorff's α from "
        f"{_num(humans['value'])} (95% CI {_ci(humans['ci'])}) to {_num(mean['value'])} "
        f"(mean of {len(test['replaced'])} substitutions; change {diff['value']:+.3f}, 95% CI "
        f"{low:+.3f} to {high:+.3f}; {test['units']} items): "
    )
    if high < 0:
        return said + (
            "the model agrees with the humans less than they agree with each other; it could "
            "not replace a human annotator on this facet."
        )
    if low > 0:
        return said + (
            "agreement rises with the model in place of a human; by this test it could "
            "replace a human annotator on this facet."
        )
    if low >= -MARGIN:
        return said + (
            f"the interval excludes a loss of more than {MARGIN}; by this test the model "
            "could replace a human annotator on this facet."
        )
    return said + (
        f"no change is detectable, but the interval still allows a loss of up to {-low:.3f}: "
        "inconclusive at this number of items; label more items to decide."
    )


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _ci(ci: Sequence[float] | None) -> str:
    return "undefined" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


# -- confusion of the human majority against the machine -------------------------------------------
def _majority_confusion(rows: IntArray, machine: IntArray, facet: _Facet) -> dict[str, Any]:
    """Single choice: the human majority (more than half the item's human ratings) × the
    machine's category, items without a majority counted apart. Multi choice: per label,
    whether the majority of the humans chose it × whether the machine did."""
    labels = list(facet.labels)
    rated = (rows >= 0).sum(axis=1)
    if facet.scale.multilabel:
        return _label_confusion(rows, machine, rated, facet)
    q = len(labels)
    counts = np.zeros((len(rows), q + 1), dtype=np.int64)  # the last column: no rating
    np.add.at(counts, (np.arange(len(rows))[:, None], np.where(rows >= 0, rows, q)), 1)
    major = counts[:, :q].argmax(axis=1) if q else np.zeros(len(rows), dtype=np.int64)
    has = counts[np.arange(len(rows)), major] * 2 > rated if q else np.zeros(len(rows), bool)
    said = has & (machine >= 0)
    cells = np.zeros((q, q), dtype=np.int64)
    np.add.at(cells, (major[said], machine[said]), 1)
    human, said_n, agree = cells.sum(axis=1), cells.sum(axis=0), np.diagonal(cells)
    per_category = [
        _category_row(code, int(human[i]), int(said_n[i]), int(agree[i]))
        for i, code in enumerate(labels)
    ]
    return {
        "kind": "single",
        "labels": labels,
        "cells": cells.tolist(),
        "no_majority": int((~has).sum()),
        "per_category": per_category,
    }


def _label_confusion(
    rows: IntArray, machine: IntArray, rated: IntArray, facet: _Facet
) -> dict[str, Any]:
    labels = list(facet.labels)
    # holds[v, l]: label l is in the set coded v; a last row of zeros for no rating
    universe = facet.scale.universe
    holds = np.zeros((len(universe) + 1, len(labels)), dtype=np.int64)
    for v, value in enumerate(universe):
        for i, code in enumerate(labels):
            holds[v, i] = code in value  # type: ignore[operator]
    chose = holds[np.where(rows >= 0, rows, len(universe))].sum(axis=1)  # units × labels
    majority = chose * 2 > rated[:, None]
    machine_has = holds[np.where(machine >= 0, machine, len(universe))].astype(bool)
    per_category = [
        _category_row(
            code,
            int(majority[:, i].sum()),
            int(machine_has[:, i].sum()),
            int((majority[:, i] & machine_has[:, i]).sum()),
        )
        for i, code in enumerate(labels)
    ]
    return {"kind": "labels", "labels": labels, "no_majority": 0, "per_category": per_category}


def _category_row(code: str, human: int, said: int, agree: int) -> dict[str, Any]:
    return {
        "code": code,
        "human_majority": human,
        "machine": said,
        "both": agree,
        "recall": agree / human if human else None,
        "precision": agree / said if said else None,
    }
