# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""Inter-rater agreement coefficients, pure numpy: plain data in, plain data out; no Django.

Input: a units × raters table — a 2-D numpy array / DataFrame / sequence of equal-length rows,
or a `RatingTable` from `encode_table` — where a cell is a category, a set of labels
(multi-label facet) or missing (`None`, NaN). `categories=` declares the category set in scale
order (the codebook version's categories); without it the observed values, sorted, are used.

Population rule, the same for every coefficient: only units with at least 2 ratings (pairable
units) enter any term, category marginals included; each result reports how many units were
left out. (irrCAC lets single-rated units into Fleiss' and AC1's marginals; statsmodels
refuses unequal ratings per unit; Krippendorff's α has always used pairable values only.)
Cohen's κ and Scott's π, being two-rater coefficients, use the units both raters rated.

Undefined results: fewer than 2 pairable units, or no variation (one observed category among
pairable ratings), or AC1 with fewer than 2 declared categories give `value=None` with
`undefined_reason`, and `p_o` beside it. AC1 would be 1 on data without variation; it is
reported undefined like the others because nothing there separates agreement from a constant.

Uncertainty comes from units: every result carries the delete-one-unit jackknife SE and a
normal interval (`se`, `ci`); Fleiss' κ and AC1 also carry Gwet's analytic SE
(`analytic_se`); `bootstrap=B, seed=S` adds a seeded unit bootstrap with P(value < 0.667) and
P(value < 0.8). Every computation is vectorised over units: memory is O(units × raters + V²).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from ._alpha import AlphaModel
from ._diagnostics import (
    LabelledMatrix,
    category_prevalence,
    coincidence_matrix,
    confusion_matrix,
    hierarchy_ac1,
    hierarchy_alpha,
    hierarchy_leaves,
    hierarchy_levels,
    hierarchy_q,
    pairwise_cohen,
    per_category_alpha,
    rater_vs_others,
    units_with_pair,
)
from ._distance import (
    Distance,
    TreeDistance,
    distance_name,
    distance_operator,
    jaccard_distance,
    masi_distance,
    tree_distance,
)
from ._kappa import CohenModel, MultiRaterModel, agreement_weights
from ._result import POPULATION_RULE, AgreementResult, Bootstrap
from ._table import FloatArray, Pairable, RatingTable, encode, pairable
from ._uncertainty import jackknife, normal_ci, unit_bootstrap

__all__ = [
    "POPULATION_RULE",
    "AgreementResult",
    "Bootstrap",
    "LabelledMatrix",
    "RatingTable",
    "TreeDistance",
    "category_prevalence",
    "cohen_kappa",
    "coincidence_matrix",
    "confusion_matrix",
    "encode_table",
    "fleiss_kappa",
    "gwet_ac1",
    "hierarchy_ac1",
    "hierarchy_alpha",
    "hierarchy_leaves",
    "hierarchy_levels",
    "hierarchy_q",
    "jaccard_distance",
    "krippendorff_alpha",
    "masi_distance",
    "pairwise_cohen",
    "per_category_alpha",
    "percent_agreement",
    "rater_vs_others",
    "scott_pi",
    "tree_distance",
    "units_with_pair",
]

Categories = Iterable[Hashable] | None


class _Model(Protocol):
    def value(self, w: FloatArray) -> float: ...
    def leave_one_out(self) -> FloatArray: ...


def encode_table(
    table: Any, *, categories: Categories = None, raters: Sequence[Hashable] | None = None
) -> RatingTable:
    """Code a units × raters table once, to pass to several coefficients."""
    return encode(table, categories, raters)


def percent_agreement(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> AgreementResult:
    """Observed agreement p_o = (1/n) Σ_u Σ_k r_uk (r_uk − 1) / (m_u (m_u − 1)).

    The share of agreeing pairs of ratings within a unit, averaged over pairable units
    (Fleiss 1971, P̄; for two raters, the share of units where they agree). Exact match:
    for a multi-label facet two sets agree only when equal.
    """
    coded, pair = _prepare(table, categories)
    model = MultiRaterModel(pair, len(coded.values), coded.q, "percent")
    reason = _too_few(pair, minimum=1)
    return _result("percent_agreement", coded, pair, model, reason, bootstrap, seed)


def fleiss_kappa(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> AgreementResult:
    """Fleiss' κ = (p_a − p_e) / (1 − p_e), p_e = Σ_k π_k², π_k = (1/n) Σ_u r_uk / m_u.

    Fleiss (1971) "Measuring nominal scale agreement among many raters", Psychol. Bull. 76(5);
    unequal m_u per Gwet (2014) Handbook of Inter-Rater Reliability, 4th ed., ch. 2. Analytic SE:
    Gwet (2014) §5.3 (as R/Python irrCAC `fleiss`). Raters need not be the same per unit.
    """
    return _multi_rater("fleiss_kappa", "fleiss", table, categories, bootstrap, seed)


def gwet_ac1(
    table: Any,
    *,
    categories: Categories = None,
    q: int | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Gwet's AC1 = (p_a − p_e) / (1 − p_e), p_e = Σ_k π_k (1 − π_k) / (q − 1).

    q, the number of categories a rating can take (the result's `q` and `extra["q_rule"]`):
    - a single-label facet: the DECLARED categories (`categories=`; else the observed count);
    - a multi-label facet: the distinct label SETS among the pairable ratings — the values
      compared, since π_k runs over sets; the declared labels count something else and the
      2^K possible sets are mostly never chosen (irrCAC, given set-valued ratings as strings,
      takes the distinct values observed);
    - `q=` overrides both (a hierarchy's leaves: `hierarchy_q`); it may not be below the
      number of distinct values observed.
    Gwet (2008) "Computing inter-rater reliability and its variance in the presence of high
    agreement", Br. J. Math. Stat. Psychol. 61(1); SE per Gwet (2014) §5.3 (irrCAC `gwet`).
    """
    return _multi_rater("gwet_ac1", "ac1", table, categories, bootstrap, seed, q)


def scott_pi(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> AgreementResult:
    """Scott's π for two raters: p_o as percent agreement, p_e = Σ_k ((p_k· + p_·k)/2)².

    Scott (1955) "Reliability of content analysis", Public Opinion Quarterly 19(3). On the units
    both raters rated it equals Fleiss' κ, which generalises it to more raters.
    """
    _two_columns(encode(table, categories), "scott_pi")
    return _multi_rater("scott_pi", "fleiss", table, categories, bootstrap, seed)


def cohen_kappa(
    table: Any,
    *,
    categories: Categories = None,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) for two fixed raters (the table's two columns).

    p_o = Σ_kl w_kl p_kl, p_e = Σ_kl w_kl p_k· p_·l. `weights`: None (w = identity), "linear"
    (1 − |k − l|/(q − 1)) or "quadratic" (1 − (k − l)²/(q − 1)²), with k, l positions on the
    DECLARED scale (`categories=` order), not ranks of the labels present (sklearn's default).
    Cohen (1960) Educ. Psychol. Meas. 20(1); weighted: Cohen (1968) Psychol. Bull. 70(4).
    """
    coded = encode(table, categories)
    _two_columns(coded, "cohen_kappa")
    both = (coded.codes >= 0).all(axis=1)
    a, b = coded.codes[both, 0], coded.codes[both, 1]
    model = CohenModel(a, b, len(coded.values), agreement_weights(len(coded.values), weights))
    pair = Pairable(coded.codes[both], np.full(int(both.sum()), 2), coded.n_units, len(a))
    reason = _too_few(pair) or _no_variation(coded, pair)
    result = _result("cohen_kappa", coded, pair, model, reason, bootstrap, seed)
    if len(a):
        p_o, p_e = model.p_o_p_e(np.ones(len(a)))
        result = _replace(result, p_o=p_o, p_e=p_e, weights=weights)
    return result


def krippendorff_alpha(
    table: Any,
    *,
    categories: Categories = None,
    level: str | None = None,
    distance: str | Distance | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Krippendorff's α = 1 − D_o/D_e = 1 − (n − 1) Σ_ck o_ck δ_ck / Σ_ck n_c n_k δ_ck.

    o_ck: coincidences (pairs of values within a unit, each weighted 1/(m_u − 1)); n_c their
    marginals; n the number of pairable values. `level`: "nominal" (default), "ordinal"
    (δ_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², on the declared order), "interval"
    ((c − k)²) or "ratio" (((c − k)/(c + k))²); or `distance=`: "masi", "jaccard" (label
    sets; encoded as indicator rows, so δ over distinct sets is one matrix product), a
    `tree_distance(parent_map)`, or any callable δ(a, b) evaluated on distinct values.
    Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability"; Krippendorff (2004)
    Content Analysis, ch. 11. Unit jackknife, not the pair bootstrap of Hayes & K. (2007).
    """
    coded, pair = _prepare(table, categories)
    return alpha_on(coded, pair, level, distance, bootstrap, seed)


def alpha_on(
    coded: RatingTable,
    pair: Pairable,
    level: str | None = None,
    distance: str | Distance | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """krippendorff_alpha on an already coded table and its pairable units (diagnostics)."""
    level_name, distance_label = distance_name(level, distance)
    delta = distance_operator(coded, level_name, distance)
    model = AlphaModel(pair, len(coded.values), delta, level_name == "ordinal")
    reason = _too_few(pair) or _no_variation(coded, pair)
    d_o, d_e, _ = model.disagreements(np.ones(pair.n_pairable))
    if reason is None and d_e == 0:
        reason = "no expected disagreement: every pair of observed values is at distance 0"
    result = _result("krippendorff_alpha", coded, pair, model, reason, bootstrap, seed)
    p_o, p_e = model.observed_agreement()
    return _replace(
        result,
        p_o=_finite(p_o),
        p_e=_finite(p_e),
        d_o=_finite(d_o),
        d_e=_finite(d_e),
        level=level_name,
        distance=distance_label,
    )


# -- shared plumbing ---------------------------------------------------------------------------


def _prepare(table: Any, categories: Categories) -> tuple[RatingTable, Pairable]:
    coded = encode(table, categories)
    return coded, pairable(coded)


def _multi_rater(
    name: str,
    kind: str,
    table: Any,
    categories: Categories,
    bootstrap: int,
    seed: int | None,
    q: int | None = None,
) -> AgreementResult:
    coded, pair = _prepare(table, categories)
    q_used, rule = _ac1_q(coded, pair, q) if kind == "ac1" else (coded.q, None)
    model = MultiRaterModel(pair, len(coded.values), q_used, kind)
    reason = _too_few(pair) or _no_variation(coded, pair)
    if reason is None and kind == "ac1" and q_used < 2:
        reason = "AC1 needs at least 2 categories"
    result = _result(name, coded, pair, model, reason, bootstrap, seed)
    if rule is not None:
        result = _replace(result, q=q_used, extra={**result.extra, "q_rule": rule})
    if reason is None and kind != "percent":
        se = model.gwet_se()
        assert result.value is not None
        result = _replace(result, analytic_se=se, analytic_ci=normal_ci(result.value, se))
    return result


def _result(
    name: str,
    coded: RatingTable,
    pair: Pairable,
    model: _Model,
    reason: str | None,
    bootstrap: int,
    seed: int | None,
) -> AgreementResult:
    ones = np.ones(pair.n_pairable)
    value = None if reason else model.value(ones)
    se, ci, note = None, None, None
    if value is not None:
        replicates = model.leave_one_out() if pair.n_pairable >= 2 else np.zeros(0)
        se, ci, note = jackknife(value, replicates)
    boot = None
    if value is not None and bootstrap > 0:
        boot = unit_bootstrap(model.value, pair.n_pairable, bootstrap, seed)
    p_o = p_e = None
    if isinstance(model, MultiRaterModel) and pair.n_pairable:
        p_a, p_e_raw = model.p_a_p_e(ones)
        p_o, p_e = p_a, (None if name == "percent_agreement" else _finite(float(p_e_raw)))
    return AgreementResult(
        coefficient=name,
        value=value,
        se=se,
        ci=ci,
        p_o=p_o,
        p_e=p_e,
        n_units=coded.n_units,
        n_pairable_units=pair.n_pairable,
        n_units_left_out=coded.n_units - pair.n_pairable,
        n_raters=coded.n_raters,
        n_pairable_ratings=int(pair.m.sum()),
        q=coded.q,
        categories_declared=coded.declared,
        observed_categories=_observed(pair),
        se_note=note,
        undefined_reason=reason,
        bootstrap=boot,
    )


def _ac1_q(coded: RatingTable, pair: Pairable, q: int | None) -> tuple[int, str]:
    """AC1's q and the rule that chose it (see `gwet_ac1`)."""
    observed = _observed(pair)
    if q is not None:
        if q < observed:
            raise ValueError(f"q={q} is below the {observed} distinct values observed")
        return q, "given"
    if coded.multilabel:
        return observed, "distinct label sets among the pairable ratings"
    return coded.q, "declared categories" if coded.declared else "observed categories"


def _observed(pair: Pairable) -> int:
    return len(np.unique(pair.values[pair.values >= 0]))


def _too_few(pair: Pairable, minimum: int = 2) -> str | None:
    if pair.n_pairable >= minimum:
        return None
    return (
        f"fewer than {minimum} pairable unit{'s' if minimum > 1 else ''} "
        f"(units with at least 2 ratings): {pair.n_pairable} of {pair.n_rows}"
    )


def _no_variation(coded: RatingTable, pair: Pairable) -> str | None:
    present = np.unique(pair.values[pair.values >= 0])
    if len(present) >= 2:
        return None
    return f"no variation: every pairable rating is {coded.values[int(present[0])]!r}"


def _two_columns(coded: RatingTable, name: str) -> None:
    if coded.n_raters != 2:
        raise ValueError(
            f"{name} compares two fixed raters: the table has {coded.n_raters} columns "
            "(use fleiss_kappa, gwet_ac1 or krippendorff_alpha for more raters)"
        )


def _finite(x: float) -> float | None:
    return x if np.isfinite(x) else None


def _replace(result: AgreementResult, **changes: Any) -> AgreementResult:
    return replace(result, **changes)
