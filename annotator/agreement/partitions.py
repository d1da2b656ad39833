# ruff: noqa: RUF001, RUF002, RUF003 -- α, Δ, ×, − are the notation of the statistics.
"""Agreement partitioned by who rated: humans with humans (the headline), humans with a machine
rater, machine with machine, everyone pooled; the substitution test; the confusion of the human
majority against the machine (pure; numpy, no Django).

Inputs are plain cells: per facet a units × humans table (a category code, a frozenset of codes
for a multi-choice facet, or None) and the machine columns ({(rater, sample): [cell per unit]}).
The coefficient is the facet's headline: nominal Krippendorff's α, MASI α for label sets.

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
from ._table import FloatArray, RatingTable, encode, pairable
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
    """Every partition of one facet (see the module docstring)."""
    labels = list(categories)
    rows = [list(r) for r in humans]
    raters = sorted({rater for rater, _ in machines})
    first = {r: machines[(r, 0)] for r in raters if (r, 0) in machines}
    all_columns = [list(machines[c]) for c in sorted(machines)]
    out: dict[str, Any] = {
        "key": key,
        "name": name,
        "coefficient": "krippendorff_alpha_masi" if multilabel else "krippendorff_alpha",
        "human_human": _alpha(rows, labels, multilabel),
        "pooled": _alpha(_join(rows, all_columns), labels, multilabel),
        "machine_machine": _machine_machine(first, labels, multilabel),
        "raters": [],
    }
    for rater in raters:
        samples = [machines[c] for c in sorted(machines) if c[0] == rater]
        out["raters"].append(
            _rater_partitions(rater, rows, human_names, samples, labels, multilabel, name)
        )
    return out


def _rater_partitions(
    rater: str,
    rows: list[list[Cell]],
    human_names: Sequence[str],
    samples: list[Sequence[Cell]],
    labels: list[str],
    multilabel: bool,
    facet: str,
) -> dict[str, Any]:
    machine = list(samples[0])
    keep = [u for u, row in enumerate(rows) if machine[u] is not None and _rated(row) >= 2]
    sub_rows = [rows[u] for u in keep]
    sub_machine = [machine[u] for u in keep]
    test = substitution(sub_rows, sub_machine, human_names, labels, multilabel)
    test["verdict"] = verdict(test, rater=rater, facet=facet)
    return {
        "rater": rater,
        "units": len(keep),
        "human_machine": human_machine(sub_rows, sub_machine, human_names, labels, multilabel),
        "machine_machine": (
            _alpha([list(c) for c in zip(*samples, strict=True)], labels, multilabel)
            if len(samples) > 1
            else None
        ),
        "substitution": test,
        "confusion": majority_confusion(sub_rows, sub_machine, labels, multilabel),
    }


def _machine_machine(
    first: Mapping[str, Sequence[Cell]], labels: list[str], multilabel: bool
) -> dict[str, Any] | None:
    """α among the machine raters (each one's first sample); None with fewer than two."""
    if len(first) < 2:
        return None
    columns = [first[r] for r in sorted(first)]
    return _alpha([list(c) for c in zip(*columns, strict=True)], labels, multilabel)


# -- the coefficient with its replicates ---------------------------------------------------------
def _coded(rows: list[list[Cell]], labels: list[str], multilabel: bool) -> RatingTable:
    width = len(rows[0]) if rows else 1
    table: Any = rows if rows else np.zeros((0, width))
    # Label sets are encoded from the sets observed, as the run's tables are.
    return encode(table, None if multilabel else labels, None)


def _fit(
    rows: list[list[Cell]], labels: list[str], multilabel: bool
) -> tuple[dict[str, Any], FloatArray | None]:
    """(α as stored, its delete-one-unit replicates over the pairable units or None)."""
    if not rows:
        return _undefined("no item has a rating of this facet"), None
    if len(rows[0]) < 2:
        return _undefined("fewer than two raters"), None
    coded = _coded(rows, labels, multilabel)
    pair = pairable(coded)
    distance = "masi" if multilabel else None
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
    model = AlphaModel(pair, len(coded.values), distance_operator(coded, level, distance), False)
    return stored, model.leave_one_out()


def _alpha(rows: list[list[Cell]], labels: list[str], multilabel: bool) -> dict[str, Any]:
    return _fit(rows, labels, multilabel)[0]


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
def human_machine(
    rows: list[list[Cell]],
    machine: list[Cell],
    human_names: Sequence[str],
    labels: list[str],
    multilabel: bool,
) -> dict[str, Any]:
    """α of each human with the machine (two columns, the units both rated), and their mean
    with a delete-one-unit jackknife interval (a unit a human did not rate leaves that pair's
    α unchanged)."""
    pairs, replicates, values = [], [], []
    for h, person in enumerate(human_names):
        rated = [u for u, row in enumerate(rows) if row[h] is not None]
        stored, loo = _fit([[rows[u][h], machine[u]] for u in rated], labels, multilabel)
        pairs.append({"human": person, **stored})
        if stored["value"] is None or loo is None:
            continue
        full = np.full(len(rows), stored["value"])
        full[rated] = loo
        replicates.append(full)
        values.append(stored["value"])
    mean = _mean_with_interval(values, replicates)
    return {"pairs": pairs, **mean}


def substitution(
    rows: list[list[Cell]],
    machine: list[Cell],
    human_names: Sequence[str],
    labels: list[str],
    multilabel: bool,
) -> dict[str, Any]:
    """α of the humans, α with each human replaced by the machine in turn, their mean, and
    the change Δ with a paired unit jackknife interval (rows: units with ≥ 2 human ratings
    and a machine label)."""
    humans, base = _fit(rows, labels, multilabel)
    replaced, replicates, values = [], [], []
    for h, person in enumerate(human_names):
        if not any(row[h] is not None for row in rows):
            continue  # this human rated none of these items: nothing to replace
        swapped = [[machine[u] if c == h and cell is not None else cell for c, cell in
                    enumerate(row)] for u, row in enumerate(rows)]  # fmt: skip
        stored, loo = _fit(swapped, labels, multilabel)
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
def majority_confusion(
    rows: list[list[Cell]], machine: list[Cell], labels: list[str], multilabel: bool
) -> dict[str, Any]:
    """Single choice: the human majority (more than half the item's human ratings) × the
    machine's category, items without a majority counted apart. Multi choice: per label,
    whether the majority of the humans chose it × whether the machine did."""
    if multilabel:
        return _label_confusion(rows, machine, labels)
    index = {code: i for i, code in enumerate(labels)}
    cells = [[0] * len(labels) for _ in labels]
    no_majority = 0
    for row, said in zip(rows, machine, strict=True):
        major = _majority([c for c in row if c is not None])
        if major is None:
            no_majority += 1
        elif major in index and said in index:
            cells[index[major]][index[str(said)]] += 1
    per_category = []
    for i, code in enumerate(labels):
        human = sum(cells[i])
        said_n = sum(r[i] for r in cells)
        agree = cells[i][i]
        per_category.append(_category_row(code, human, said_n, agree))
    return {
        "kind": "single",
        "labels": labels,
        "cells": cells,
        "no_majority": no_majority,
        "per_category": per_category,
    }


def _label_confusion(
    rows: list[list[Cell]], machine: list[Cell], labels: list[str]
) -> dict[str, Any]:
    per_category = []
    for code in labels:
        human = said_n = agree = 0
        for row, said in zip(rows, machine, strict=True):
            rated = [c for c in row if c is not None]
            majority = sum(code in c for c in rated) * 2 > len(rated)  # type: ignore[operator]
            machine_has = said is not None and code in said  # type: ignore[operator]
            human += majority
            said_n += machine_has
            agree += majority and machine_has
        per_category.append(_category_row(code, human, said_n, agree))
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


def _majority(cells: list[Cell]) -> Cell:
    counts: dict[Cell, int] = {}
    for c in cells:
        counts[c] = counts.get(c, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1], default=(None, 0))
    return best[0] if best[1] * 2 > len(cells) else None


def _rated(row: Sequence[Cell]) -> int:
    return sum(c is not None for c in row)


def _join(rows: list[list[Cell]], columns: list[list[Cell]]) -> list[list[Cell]]:
    return [row + [c[u] for c in columns] for u, row in enumerate(rows)]
