# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ).
"""What a run stores for one facet, from its units × raters table (pure; no Django).

Every number comes from `stats.py`; this module only chooses which coefficients and diagnostics
the report shows and shapes them as JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import stats
from .stats import RatingTable

COEFFICIENTS = ("krippendorff_alpha", "fleiss_kappa", "gwet_ac1", "percent_agreement")
# Above this many pairable units × categories, the per-category table skips its jackknife
# (stats.per_category_alpha costs ~50 ms per category at 100,000 units) and derives each
# binary α from one coincidence matrix instead; the values are the same.
PER_CATEGORY_JACKKNIFE_LIMIT = 200_000


def facet_summary(
    table: RatingTable,
    *,
    key: str,
    name: str,
    kind: str,
    categories: Sequence[Mapping[str, Any]],
    parent: Mapping[Any, Any] | None,
    rater_names: Sequence[str],
) -> dict[str, Any]:
    """The stored result of one facet: coefficients, design facts and diagnostics."""
    coefficients = {name: getattr(stats, name)(table) for name in COEFFICIENTS}
    headline = "krippendorff_alpha"
    if table.multilabel:
        coefficients["krippendorff_alpha_masi"] = stats.krippendorff_alpha(table, distance="masi")
        headline = "krippendorff_alpha_masi"
    alpha = coefficients["krippendorff_alpha"]
    return {
        "key": key,
        "name": name,
        "kind": kind,
        "multilabel": table.multilabel,
        "headline": headline,
        "categories": [dict(c) for c in categories],
        "design": _design(alpha, table),
        "coefficients": {k: v.to_dict() for k, v in coefficients.items()},
        "per_category": per_category(table),
        "levels": _levels(table, parent),
        "pairwise_cohen": _pairwise(table, rater_names),
        "confusion": stats.confusion_matrix(table).to_dict(),
    }


def _design(alpha: stats.AgreementResult, table: RatingTable) -> dict[str, Any]:
    return {
        "units": alpha.n_units,
        "pairable_units": alpha.n_pairable_units,
        "units_left_out": alpha.n_units_left_out,
        "raters": table.n_raters,
        "raters_with_ratings": int((table.codes >= 0).any(axis=0).sum()),
        "pairable_ratings": alpha.n_pairable_ratings,
        "declared_categories": table.q,
        "observed_categories": alpha.observed_categories,
        "distinct_values": len(table.values),
        "population": alpha.population,
    }


def per_category(table: RatingTable) -> list[dict[str, Any]]:
    """Binary one-vs-rest α per category beside its prevalence."""
    prevalence = stats.category_prevalence(table)
    pairable_units = int(((table.codes >= 0).sum(axis=1) >= 2).sum())
    if pairable_units * table.q <= PER_CATEGORY_JACKKNIFE_LIMIT:
        results = stats.per_category_alpha(table)
        alphas = [_brief(results[label]) for label in table.labels]
    else:
        alphas = _binary_alphas(table)
    return [{**p, **a} for p, a in zip(prevalence, alphas, strict=True)]


def _brief(result: stats.AgreementResult) -> dict[str, Any]:
    data = result.to_dict()
    keep = ("value", "se", "ci", "p_o", "undefined_reason")
    return {"alpha" if k == "value" else k: data[k] for k in keep}


def _binary_alphas(table: RatingTable) -> list[dict[str, Any]]:
    """α of "has label j" for every j from the coincidence matrix o over the table's values.

    With h_j the 0/1 column "value holds label j": o_11 = h_jᵀ o h_j, n_1 = h_jᵀ n,
    α_j = 1 − (n − 1)(n_1 − o_11) / (n_1 (n − n_1)) (nominal α on a 2 × 2 coincidence matrix).
    """
    o = np.asarray(stats.coincidence_matrix(table).cells, dtype=np.float64)
    h = table.label_indicator()
    n_v = o.sum(axis=1)
    n = float(n_v.sum())
    n_1 = h.T @ n_v
    o_11 = np.einsum("vj,vw,wj->j", h, o, h)
    out = []
    for j in range(h.shape[1]):
        defined = n >= 2 and 0 < n_1[j] < n
        value = 1.0 - (n - 1.0) * (n_1[j] - o_11[j]) / (n_1[j] * (n - n_1[j])) if defined else None
        p_o = 1.0 - 2.0 * (n_1[j] - o_11[j]) / n if n else None
        reason = None if defined else "no variation: the label is always or never given"
        out.append({"alpha": value, "se": None, "ci": None, "p_o": p_o, "undefined_reason": reason})
    return out


def _levels(table: RatingTable, parent: Mapping[Any, Any] | None) -> list[dict[str, Any]]:
    if not parent:
        return []
    levels = stats.hierarchy_alpha(table, parent=parent)
    return [{"depth": depth, **result.to_dict()} for depth, result in levels]


def _pairwise(table: RatingTable, rater_names: Sequence[str]) -> dict[str, Any]:
    matrix = stats.pairwise_cohen(table).to_dict()
    matrix["labels"] = list(rater_names)
    return matrix
