# ruff: noqa: RUF001, RUF002, RUF003 -- α, κ in labels.
"""Shape a stored result for the report page (pure; no Django): rows, charts, shades."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import charts
from .summary import conventions_of
from .threshold import judge

ROWS = [
    ("krippendorff_alpha", "Krippendorff's α (nominal)"),
    ("krippendorff_alpha_masi", "Krippendorff's α (MASI, label sets)"),
    ("fleiss_kappa", "Fleiss' κ"),
    ("gwet_ac1", "Gwet's AC1"),
    ("percent_agreement", "Observed agreement p_o"),
]


# Stored beside the headline set (summary.MORE_COEFFICIENTS), shown under it.
MORE_ROWS = [
    ("brennan_prediger", "Brennan–Prediger κ (= Bennett's S, Randolph's κ)"),
    ("conger_kappa", "Conger's κ"),
    ("light_kappa", "Light's κ (mean pairwise Cohen's κ)"),
]
LABELS = dict(ROWS)
MOST_CONFUSED = 5


def facet_view(facet: dict[str, Any], threshold: float) -> dict[str, Any]:
    """What the template shows of one facet."""
    coefficients = facet["coefficients"]
    headline = coefficients[facet["headline"]]
    rows = [_row(name, label, coefficients[name]) for name, label in ROWS if name in coefficients]
    more = facet.get("more_coefficients") or {}
    more_rows = [_row(name, label, more[name]) for name, label in MORE_ROWS if name in more]
    pairs = facet["pairwise_cohen"]
    judgement = judge(headline, threshold, facet=facet["key"])
    return {
        **facet,
        "rows": rows,
        "more_rows": more_rows,
        "headline_label": LABELS.get(facet["headline"], facet["headline"]),
        "headline_value": headline["value"],
        "headline_ci": headline["ci"],
        "headline_n": headline["n_pairable_units"],
        "judgement": judgement,
        "meets": judgement.meets,
        "ac1": coefficients.get("gwet_ac1"),
        "fleiss": coefficients.get("fleiss_kappa"),
        "heatmap": charts.heatmap(pairs["labels"], pairs["cells"]),
        "pairs": pair_rows(pairs),
        "confusion_rows": confusion_rows(facet["confusion"]),
        "confused": most_confused(facet["confusion"]),
    }


def pair_rows(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """Each annotator pair's n, p_o, κ and CI (results stored before schema 2 have none)."""
    return [
        {**pair, "names": " × ".join(str(name) for name in pair["raters"])}
        for pair in matrix.get("pairs", [])
    ]


def most_confused(matrix: dict[str, Any], top: int = MOST_CONFUSED) -> list[dict[str, Any]]:
    """The category pairs with the most disagreeing rating pairs, largest first.

    A cross-table (two raters) counts a, b and b, a together; a symmetric matrix of pairs
    counts each unordered pair once. `share` is the pair's part of all disagreeing pairs.
    """
    cells, labels = matrix["cells"], matrix["labels"]
    symmetric = matrix.get("kind") != "crosstab"
    found = []
    for i in range(len(cells)):
        for j in range(i + 1, len(cells)):
            count = cells[i][j] if symmetric else cells[i][j] + cells[j][i]
            if count:
                found.append((count, i, j))
    total = sum(count for count, _, _ in found)
    found.sort(key=lambda c: (-c[0], c[1], c[2]))
    return [
        {
            "a": label_text(labels[i]),
            "b": label_text(labels[j]),
            "i": i,
            "j": j,
            "count": count,
            "share": count / total,
            "percent": round(100 * count / total),
        }
        for count, i, j in found[:top]
    ]


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


def method_sentences(inputs: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """ "How this was computed", in sentences: data, units, pairable n, missing ratings,
    distances, AC1's q, intervals and bootstrap, software — from the run's stored records."""
    conventions = conventions_of(result)
    counts = inputs.get("counts", {})
    scope = f"round {inputs['round']}" if inputs.get("round") is not None else "every round"
    out = [
        f"Data: the submitted annotations of {scope} of the study on codebook version "
        f"{inputs.get('codebook_version', result.get('codebook_version'))} — "
        f"{counts.get('annotations', '?')} annotations of {counts.get('items_labelled', '?')} "
        f"labelled items (of {counts.get('items', '?')} items), {inputs.get('labels', '?')} "
        f"labels by {inputs.get('raters', len(result.get('raters', [])))} annotators. "
        f"Annotations on another codebook version were left out "
        f"({counts.get('other_version', 0)}); drafts never count."
        + (
            f" Items with a gold answer were left out ({counts['gold_left_out']}): chosen to "
            "teach or check, not at random."
            if counts.get("gold_left_out")
            else ""
        )
        + (
            f" Items of issues marked duplicates of other issues were left out "
            f"({counts['duplicates_left_out']}): one bug counted once."
            if counts.get("duplicates_left_out")
            else ""
        ),
        "Units: a unit is an item and a rater an annotator; each facet is its own table of "
        "units × annotators, with the codebook version's categories of the facet declared.",
        "Pairable units: " + _pairable(result) + ". " + _capital(conventions["population"]) + ".",
        "Missing ratings: " + conventions["missing"] + "; the coefficients use the ratings "
        "present, so units need not have the same number of ratings.",
        "Distances: " + _capital(conventions["headline"]) + ". Nominal α counts two ratings as "
        "agreeing only when equal (for label sets: the same set); MASI (Passonneau 2006) gives "
        "partial credit to overlapping sets; the levels of a hierarchy are nominal α and AC1 "
        "after projecting each label to its ancestor at that level.",
        "AC1's number of categories q: for a single-choice facet, "
        + conventions["ac1_q"]["single"]
        + "; for a multi-choice facet, "
        + conventions["ac1_q"]["multi"]
        + "; for a hierarchical facet, "
        + conventions["ac1_q"]["hierarchy"]
        + ".",
        "Intervals: " + conventions["interval"] + ". " + _bootstrap(conventions) + " "
        "Per-category α have the same interval while pairable units × categories ≤ "
        f"{inputs.get('per_category_jackknife_limit', 200_000):,}, none above.",
        "Threshold: " + conventions["threshold"] + ".",
    ]
    out.append(_software(inputs))
    if conventions.get("recorded") is False:
        out.append(
            "This run was stored before results recorded their conventions: the AC1 and "
            "pairwise κ conventions above are those of such runs (AC1's q counted every "
            "declared category; pairwise κ was stored without n, p_o or CI)."
        )
    return out


def _pairable(result: dict[str, Any]) -> str:
    parts = []
    for facet in result.get("facets", []):
        design = facet.get("design", {})
        parts.append(
            f"{facet['name']} {design.get('pairable_units', '?')} of "
            f"{design.get('units', '?')} units ({design.get('units_left_out', 0)} left out)"
        )
    return "; ".join(parts) or "none"


def _bootstrap(conventions: dict[str, Any]) -> str:
    boot = conventions.get("bootstrap")
    if not boot:
        return "No bootstrap was run (no replicates, no seed): every interval is the jackknife's."
    return (
        f"A unit bootstrap ran with {boot.get('replicates')} replicates and seed "
        f"{boot.get('seed')}."
    )


def _software(inputs: dict[str, Any]) -> str:
    versions = inputs.get("versions", {})
    seconds = inputs.get("seconds", {})
    named = ", ".join(f"{name} {v}" for name, v in versions.items())
    digest = str(inputs.get("label_table_sha256", ""))[:16]
    return (
        f"Software: {named or 'not recorded'}; the labels were read in "
        f"{seconds.get('load', '?')} s and computed in {seconds.get('compute', '?')} s. The "
        f"label rows' SHA-256 begins {digest or '(not recorded)'}: the same labels give the same "
        "digest and the same result."
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
