# ruff: noqa: RUF001, RUF002, RUF003 -- α, κ in labels.
"""Shape a stored result for the report page (pure; no Django): rows, charts, shades."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import charts

ROWS = [
    ("krippendorff_alpha", "Krippendorff's α (nominal)"),
    ("krippendorff_alpha_masi", "Krippendorff's α (MASI, label sets)"),
    ("fleiss_kappa", "Fleiss' κ"),
    ("gwet_ac1", "Gwet's AC1"),
    ("percent_agreement", "Observed agreement p_o"),
]


def facet_view(facet: dict[str, Any], threshold: float) -> dict[str, Any]:
    """What the template shows of one facet."""
    coefficients = facet["coefficients"]
    headline = coefficients[facet["headline"]]["value"]
    rows = [_row(name, label, coefficients[name]) for name, label in ROWS if name in coefficients]
    pairs = facet["pairwise_cohen"]
    return {
        **facet,
        "rows": rows,
        "headline_value": headline,
        "meets": headline is not None and headline >= threshold,
        "heatmap": charts.heatmap(pairs["labels"], pairs["cells"]),
        "confusion_rows": confusion_rows(facet["confusion"]),
    }


def _row(name: str, label: str, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "value": result["value"],
        "ci": result["ci"],
        "se": result["se"],
        "analytic_se": result.get("analytic_se"),
        "n": result["n_pairable_units"],
        "p_o": result["p_o"],
        "undefined_reason": result["undefined_reason"],
    }


def confusion_rows(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the confusion matrix with each cell's count, shade and indexes (for its link)."""
    cells = matrix["cells"]
    off = [c for i, row in enumerate(cells) for j, c in enumerate(row) if i != j]
    largest = max(off, default=0)
    return [
        {
            "label": label_text(matrix["labels"][i]),
            "cells": [
                {
                    "i": i,
                    "j": j,
                    "count": count,
                    "diagonal": i == j,
                    "shade": charts.shade(count, largest) if i != j else 0,
                }
                for j, count in enumerate(row)
            ],
        }
        for i, row in enumerate(cells)
    ]


def label_text(label: Any) -> str:
    """A category code, or a label set as "{a, b}" (an empty set as "{}")."""
    if isinstance(label, list):
        return "{" + ", ".join(str(x) for x in label) + "}"
    return str(label)


def trend_chart(runs: Sequence[Any], threshold: float) -> dict[str, Any] | None:
    """The trend of headline α across rounds, from each round's latest succeeded run."""
    points = []
    facets: list[str] = []
    for run in runs:
        if run.round is None or not run.result:
            continue
        values = {}
        for facet in run.result["facets"]:
            values[facet["key"]] = facet["coefficients"][facet["headline"]]["value"]
            if facet["key"] not in facets:
                facets.append(facet["key"])
        points.append((run.round.number, values))
    if not points:
        return None
    return charts.trend(points, facets, threshold)
