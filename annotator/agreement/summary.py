# ruff: noqa: RUF001, RUF002, RUF003 -- formulas are written in their own notation (α, κ, −).
"""What a run stores for one facet, from its units × raters table (pure; no Django).

Every number comes from `stats.py`; this module only chooses which coefficients and diagnostics
the report shows and shapes them as JSON.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from . import stats
from .stats import RatingTable
from .threshold import RULE as THRESHOLD_RULE

COEFFICIENTS = ("krippendorff_alpha", "fleiss_kappa", "gwet_ac1", "percent_agreement")
# Above this many pairable units × categories, the per-category table skips its jackknife
# (stats.per_category_alpha costs ~50 ms per category at 100,000 units) and derives each
# binary α from one coincidence matrix instead; the values are the same.
PER_CATEGORY_JACKKNIFE_LIMIT = 200_000

# Stored beside the headline set, never instead of it (reporting only the most favourable
# coefficient is the antipattern they answer): Brennan-Prediger (= Bennett's S = Randolph's
# free-marginal kappa, one formula), Conger's kappa (each rater's own marginals) and Light's
# kappa (the mean pairwise Cohen's kappa). Their jackknife costs ~0.45 s per facet at 100,000
# pairable units, so above MORE_LIMIT they are left out of the run (stats.py computes them on
# an export's table) and the run says so.
MORE_COEFFICIENTS = ("brennan_prediger", "conger_kappa", "light_kappa")
MORE_LIMIT = 20_000
MORE_RULE = (
    f"Brennan-Prediger, Conger's and Light's kappa are stored when a facet has at most "
    f"{MORE_LIMIT:,} pairable units"
)

HIERARCHY_Q_RULE = (
    "the leaves of the hierarchy (the categories at the level compared; at a coarser level, "
    "the leaves' ancestors there), plus any group actually given among the pairable ratings"
)
AC1_Q = {
    "single": "the codebook version's declared categories of the facet",
    "multi": "the distinct label sets among the pairable ratings (the values compared)",
    "hierarchy": HIERARCHY_Q_RULE,
}
HEADLINE = "Krippendorff's α, nominal; for a multi-choice facet, α with the MASI distance"
INTERVAL = (
    "delete-one-unit jackknife over pairable units: SE² = (n − 1)/n · Σ (θ₍ᵤ₎ − θ̄)², "
    "95% interval θ ± 1.96 SE with the upper end capped at 1"
)
PAIRWISE = (
    "Cohen's κ for each pair of annotators on the units both labelled, stored with n, p_o, "
    "p_e, the jackknife SE and 95% interval"
)
LEGACY_CONVENTIONS: dict[str, Any] = {
    "population": stats.POPULATION_RULE,
    "missing": "a facet an annotator left empty is a missing rating, not an empty set",
    "ac1_q": {
        "single": "the codebook version's declared categories of the facet",
        "multi": "the declared categories of the facet (not the label sets compared)",
        "hierarchy": "every declared category of the facet, groups included",
    },
    "headline": HEADLINE,
    "interval": INTERVAL,
    "bootstrap": None,
    "pairwise_cohen": "Cohen's κ for each pair of annotators (value only; no n, p_o or CI)",
    "threshold": THRESHOLD_RULE,
    "recorded": False,
}


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
    headline, coefficients = facet_coefficients(table, parent)
    alpha = coefficients["krippendorff_alpha"]
    return {
        "key": key,
        "name": name,
        "kind": kind,
        "multilabel": table.multilabel,
        "headline": headline,
        "categories": [dict(c) for c in categories],
        "design": _design(alpha, table),
        "coefficients": _coefficient_dicts(coefficients, hierarchical=bool(parent)),
        "per_category": per_category(table),
        "levels": _levels(table, parent, coefficients),
        "pairwise_cohen": _pairwise(table, rater_names),
        "confusion": stats.confusion_matrix(table).to_dict(),
        "more_coefficients": more_coefficients(table, alpha.n_pairable_units),
    }


def more_coefficients(table: RatingTable, pairable_units: int) -> dict[str, Any]:
    """The coefficients stored beside the headline set (MORE_COEFFICIENTS), on the same
    table and conventions; empty above MORE_LIMIT pairable units (MORE_RULE)."""
    if pairable_units > MORE_LIMIT:
        return {}
    return {name: getattr(stats, name)(table).to_dict() for name in MORE_COEFFICIENTS}


def facet_coefficients(
    table: RatingTable, parent: Mapping[Any, Any] | None
) -> tuple[str, dict[str, stats.AgreementResult]]:
    """(headline name, the facet's coefficients): α, Fleiss' κ, AC1 (q of the hierarchy's
    leaves for a hierarchical single-choice facet), p_o, and MASI α for a multi-choice facet."""
    q = None
    if parent and not table.multilabel:
        q = stats.hierarchy_q(table, stats.hierarchy_leaves(table.labels, parent))
    coefficients = {
        name: getattr(stats, name)(table, **({"q": q} if name == "gwet_ac1" and q else {}))
        for name in COEFFICIENTS
    }
    headline = "krippendorff_alpha"
    if table.multilabel:
        coefficients["krippendorff_alpha_masi"] = stats.krippendorff_alpha(table, distance="masi")
        headline = "krippendorff_alpha_masi"
    return headline, coefficients


def coefficient_dicts(
    table: RatingTable, parent: Mapping[Any, Any] | None
) -> tuple[str, dict[str, Any]]:
    """(headline, coefficients as stored), the part of `facet_summary` a dataset card uses."""
    headline, coefficients = facet_coefficients(table, parent)
    return headline, _coefficient_dicts(coefficients, hierarchical=bool(parent))


def _coefficient_dicts(
    coefficients: Mapping[str, stats.AgreementResult], *, hierarchical: bool
) -> dict[str, Any]:
    out = {k: v.to_dict() for k, v in coefficients.items()}
    ac1 = out["gwet_ac1"]
    if hierarchical and ac1["extra"].get("q_rule") == "given":
        ac1["extra"]["q_rule"] = HIERARCHY_Q_RULE
    return out


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


def _levels(
    table: RatingTable,
    parent: Mapping[Any, Any] | None,
    coefficients: Mapping[str, stats.AgreementResult],
) -> list[dict[str, Any]]:
    """α and AC1 at each depth (labels projected to their ancestor there), roots first. The
    deepest level projects every label to itself: it is the facet's own table, whose α and
    AC1 (with the same q) are already computed."""
    if not parent:
        return []
    levels = stats.hierarchy_levels(table, parent)
    out = []
    for depth, level, leaves in levels:
        if depth == len(levels) - 1:
            alpha, ac1 = coefficients["krippendorff_alpha"], coefficients["gwet_ac1"]
        else:
            alpha = stats.krippendorff_alpha(level)
            q = stats.hierarchy_q(level, () if table.multilabel else leaves)
            ac1 = stats.gwet_ac1(level, q=q)
        level_ac1 = ac1.to_dict()
        level_ac1["extra"]["q_rule"] = AC1_Q["multi" if table.multilabel else "hierarchy"]
        out.append({"depth": depth, **alpha.to_dict(), "gwet_ac1": level_ac1})
    return out


def _pairwise(table: RatingTable, rater_names: Sequence[str]) -> dict[str, Any]:
    """Cohen's κ per annotator pair: the matrix (`cells`, for the heatmap) and, per pair, n,
    p_o, p_e, κ, SE and 95% CI (`pairs`)."""
    names: list[Hashable] = (
        list(rater_names) if len(rater_names) == table.n_raters else list(table.raters)
    )
    return stats.pairwise_cohen(table, raters=names).to_dict()


def conventions() -> dict[str, Any]:
    """The conventions a result is computed under, stored with it (`result["conventions"]`)."""
    return {
        "population": stats.POPULATION_RULE,
        "missing": "a facet an annotator left empty is a missing rating, not an empty set",
        "ac1_q": dict(AC1_Q),
        "headline": HEADLINE,
        "interval": INTERVAL,
        "bootstrap": None,
        "pairwise_cohen": PAIRWISE,
        "threshold": THRESHOLD_RULE,
        "more_coefficients": MORE_RULE,
    }


def conventions_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """A stored result's conventions; results stored before they were recorded (schema 1) get
    the conventions those runs were computed under."""
    stored = result.get("conventions")
    return dict(stored) if stored else LEGACY_CONVENTIONS
