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

Further coefficients (README "More coefficients"): Brennan–Prediger / Bennett's S / Randolph's
κ (p_e = 1/q), Conger's and Light's κ, Gwet's AC2 (weights), PABAK with the prevalence and bias
indices, and specific (positive/negative) agreement; their models are in _extra.py. Specific
agreement, like p_o, is not chance-corrected: it needs 1 pairable unit, not 2 nor variation.

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
from ._extra import (
    AC2Model,
    CongerModel,
    LightModel,
    UnitSums,
    free_marginal,
    ordered_weights,
    ratio,
    unit_p_a,
)
from ._kappa import CohenModel, MultiRaterModel, agreement_weights
from ._result import POPULATION_RULE, AgreementResult, Bootstrap
from ._table import (
    MISSING,
    FloatArray,
    Pairable,
    RatingTable,
    encode,
    pairable,
)
from ._uncertainty import jackknife, normal_ci, unit_bootstrap

__all__ = [
    "POPULATION_RULE",
    "AgreementResult",
    "Bootstrap",
    "LabelledMatrix",
    "RatingTable",
    "TreeDistance",
    "bennett_s",
    "brennan_prediger",
    "category_prevalence",
    "cohen_kappa",
    "coincidence_matrix",
    "confusion_matrix",
    "conger_kappa",
    "encode_table",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "hierarchy_ac1",
    "hierarchy_alpha",
    "hierarchy_leaves",
    "hierarchy_levels",
    "hierarchy_q",
    "jaccard_distance",
    "krippendorff_alpha",
    "light_kappa",
    "masi_distance",
    "pabak",
    "pabak_by_category",
    "pairwise_cohen",
    "per_category_alpha",
    "percent_agreement",
    "positive_negative_agreement",
    "randolph_kappa",
    "rater_vs_others",
    "scott_pi",
    "specific_agreement",
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


# -- more coefficients: free-marginal, rater-specific marginals, weighted AC2, binary ------------


def brennan_prediger(
    table: Any,
    *,
    categories: Categories = None,
    q: int | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Brennan–Prediger κ_n = (p_a − 1/q) / (1 − 1/q): chance agreement from a uniform guess.

    p_a as Fleiss' (the share of agreeing pairs within a unit, averaged over pairable units);
    q as AC1's (`gwet_ac1`: declared categories, label sets for a multi-label facet, or `q=`).
    No marginals enter p_e, so a skewed prevalence does not pull it down as it does κ.
    Brennan & Prediger (1981) Educ. Psychol. Meas. 41(3); multirater form Gwet (2014) §2.4.
    For two raters it is Bennett's S (`bennett_s`); with any number, Randolph's free-marginal
    κ (`randolph_kappa`): one formula, three names.
    """
    return _free_marginal("brennan_prediger", table, categories, q, bootstrap, seed)


def bennett_s(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> AgreementResult:
    """Bennett, Alpert & Goldstein's S = (q p_o − 1) / (q − 1) for two raters.

    Bennett et al. (1954) Public Opinion Quarterly 18(3). The same formula as Brennan–Prediger
    on the units both raters rated (q: the declared categories); kept as its own name because
    reviewers ask for it by that name. For binary data (q = 2) it is PABAK (`pabak`).
    """
    _two_columns(encode(table, categories), "bennett_s")
    return _free_marginal("bennett_s", table, categories, None, bootstrap, seed)


def randolph_kappa(
    table: Any,
    *,
    categories: Categories = None,
    q: int | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Randolph's free-marginal multirater κ = (P̄ − 1/q) / (1 − 1/q), P̄ Fleiss' p_a.

    Randolph (2005) "Free-marginal multirater kappa", Joensuu Learning and Instruction
    Symposium; statsmodels `fleiss_kappa(method="randolph")` (complete tables only). The same
    number as `brennan_prediger`, for raters who were not told how many units go in each
    category (free marginals); q should then be the categories they could choose (declare them).
    """
    return _free_marginal("randolph_kappa", table, categories, q, bootstrap, seed)


def conger_kappa(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> AgreementResult:
    """Conger's κ: Cohen's κ for more raters, each rater with his own marginals.

    κ_C = (p_a − p_e) / (1 − p_e); p_a as Fleiss'; p_e = mean over rater pairs r ≠ s of
    Σ_k p_rk p_sk, p_rk the share of rater r's pairable ratings in category k (Conger 1980,
    Psychol. Bull. 88(2); Gwet 2014 §2.4 for missing ratings). Columns are raters, as for
    Cohen's κ (a rater with no pairable rating is left out); for two raters it is Cohen's κ.
    """
    coded, pair = _prepare(table, categories)
    codes = coded.codes[(coded.codes >= 0).sum(axis=1) >= 2]
    model = CongerModel(codes, unit_p_a(pair), len(coded.values))
    reason = _too_few(pair) or _no_variation(coded, pair)
    result = _result("conger_kappa", coded, pair, model, reason, bootstrap, seed)
    if pair.n_pairable:
        p_o, p_e = model.p_o_p_e(np.ones(pair.n_pairable))
        result = _replace(result, p_o=p_o, p_e=_finite(p_e))
    return result


def light_kappa(
    table: Any,
    *,
    categories: Categories = None,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Light's κ: the mean of Cohen's κ over every pair of raters (columns).

    Light (1971) Psychol. Bull. 76(5). Each pair's κ is on the units both rated
    (`cohen_kappa`, `weights` likewise); a pair sharing fewer than 2 units, or whose shared
    ratings show no variation, has no κ and is left out of the mean (`extra["pairs_used"]`,
    `extra["pairs_left_out"]`). The jackknife leaves a unit out of every pair that shares it.
    `p_o` and `p_e` are None: a mean of κ's has neither.
    """
    coded, pair = _prepare(table, categories)
    codes = coded.codes[(coded.codes >= 0).sum(axis=1) >= 2]
    w = agreement_weights(len(coded.values), weights)
    pairs, left_out = [], 0
    for i in range(coded.n_raters):
        for j in range(i + 1, coded.n_raters):
            units = np.flatnonzero((codes[:, i] >= 0) & (codes[:, j] >= 0))
            a, b = codes[units, i], codes[units, j]
            if len(units) >= 2 and len(np.unique(np.concatenate([a, b]))) >= 2:
                pairs.append((units, CohenModel(a, b, len(coded.values), w)))
            elif len(units):
                left_out += 1
    model = LightModel(pair.n_pairable, pairs)
    reason = _too_few(pair) or _no_variation(coded, pair)
    if reason is None and not pairs:
        reason = "no pair of raters shares 2 units with variation between them"
    result = _result("light_kappa", coded, pair, model, reason, bootstrap, seed)
    extra = {**result.extra, "pairs_used": len(pairs), "pairs_left_out": left_out}
    return _replace(result, weights=weights, extra=extra)


def gwet_ac2(
    table: Any,
    *,
    categories: Categories = None,
    weights: str,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """Gwet's AC2, AC1 with agreement weights for ordinal or interval categories.

    p_a = (1/n) Σ_u Σ_k r_uk (r*_uk − 1) / (m_u (m_u − 1)), r*_uk = Σ_l w_kl r_ul;
    p_e = T_w / (q (q − 1)) Σ_k π_k (1 − π_k), T_w = Σ_kl w_kl; AC2 = (p_a − p_e)/(1 − p_e).
    `weights`: "identity" (AC2 = AC1), "linear", "quadratic" (Cohen's, `agreement_weights`) or
    "ordinal" (Gwet's); positions on the DECLARED scale (`categories=` order), so declare the
    scale — irrCAC's linear/quadratic weights use numeric category values instead, the same
    when the values are equally spaced. q: the declared categories (as AC1's).
    Gwet (2014) Handbook of Inter-Rater Reliability, 4th ed., ch. 3. Jackknife SE only.
    """
    coded, pair = _prepare(table, categories)
    if coded.multilabel and weights != "identity":
        raise ValueError("AC2's ordered weights need single-label categories on a scale")
    q, rule = _ac1_q(coded, pair, None)
    matrix = ordered_weights(len(coded.values), weights)
    model = AC2Model(pair, len(coded.values), q, None if weights == "identity" else matrix)
    reason = _too_few(pair) or _no_variation(coded, pair)
    if reason is None and q < 2:
        reason = "AC2 needs at least 2 categories"
    result = _result("gwet_ac2", coded, pair, model, reason, bootstrap, seed)
    extra = {**result.extra, "q_rule": rule}
    result = _replace(result, q=q, weights=weights, extra=extra)
    if pair.n_pairable:
        p_o, p_e = model.p_a_p_e(np.ones(pair.n_pairable))
        result = _replace(result, p_o=p_o, p_e=_finite(p_e))
    return result


def pabak(
    table: Any,
    *,
    categories: Categories = None,
    positive: Hashable | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """PABAK = 2 p_o − 1 for two raters and a binary facet, with the prevalence and bias index.

    Byrt, Bishop & Carlin (1993) "Bias, prevalence and kappa", J. Clin. Epidemiol. 46(5). With
    a = both positive, d = both negative, b = only the first rater positive, c = only the
    second, n = a + b + c + d (the units both rated):
        PABAK = 2 (a + d)/n − 1,  PI = (a − d)/n,  BI = (b − c)/n,
        Cohen's κ = (PABAK − PI² + BI²) / (1 − PI² + BI²).
    PI and BI are signed (Byrt et al.; Sim & Wright 2005 report |a − d|/n, |b − c|/n) and sit
    in `extra` with their jackknife SE, beside `extra["cohen_kappa"]` from that identity.
    `positive`: the category counted as positive (default: the second in scale order, e.g. 1
    of 0/1, "yes" of no/yes). PABAK is Bennett's S with q = 2.
    """
    coded = encode(table, categories)
    _two_columns(coded, "pabak")
    if coded.multilabel or len(coded.values) != 2:
        raise ValueError(
            f"PABAK is for binary data: {len(coded.values)} categories "
            "(declare the two with categories=, or use pabak_by_category)"
        )
    if positive is not None and positive not in coded.values:
        raise ValueError(f"positive={positive!r} is not one of {list(coded.values)}")
    pos = coded.values.index(positive) if positive is not None else 1
    return _pabak_on(coded, pos, None, bootstrap, seed)


def pabak_by_category(
    table: Any, *, categories: Categories = None
) -> dict[Hashable, AgreementResult]:
    """PABAK, PI and BI for each category against the rest (a label present or not, for a
    multi-label facet), two raters: where in a nominal facet prevalence or bias lies."""
    coded = encode(table, categories)
    _two_columns(coded, "pabak_by_category")
    has = coded.label_indicator().astype(np.int64)
    out: dict[Hashable, AgreementResult] = {}
    for j, label in enumerate(coded.labels):
        codes = np.where(coded.codes >= 0, has[np.maximum(coded.codes, 0), j], MISSING)
        out[label] = _pabak_on(coded.with_codes(codes, (0, 1)), 1, label)
    return out


def specific_agreement(
    table: Any, *, categories: Categories = None, bootstrap: int = 0, seed: int | None = None
) -> dict[Hashable, AgreementResult]:
    """Specific agreement for each category: p_s(k) = Σ_u r_uk (r_uk − 1) / Σ_u r_uk (m_u − 1).

    Of the pairs of ratings with at least one in category k, the share with both in k
    (Uebersax 1982, "A design-independent method for measuring the reliability of psychiatric
    diagnosis", J. Psychiatr. Res. 17(4); his "specific agreement"). For two raters p_s(k) =
    2 n_kk / (n_k· + n_·k); for a binary facet the two categories give Cicchetti & Feinstein's
    (1990) positive and negative agreement (`positive_negative_agreement`). A multi-label
    facet gives each label's positive agreement (label present in the rating or not).
    Like p_o it is not chance-corrected, so it is defined on 1 pairable unit and without
    variation; a category no pairable rating holds is undefined. Interval: jackknife over
    units (and `bootstrap=`, over units).
    """
    coded, pair = _prepare(table, categories)
    units, values = pair.flat()
    has = coded.label_indicator()
    out: dict[Hashable, AgreementResult] = {}
    for j, label in enumerate(coded.labels):
        r = np.bincount(units, has[values, j], pair.n_pairable).astype(np.float64)
        out[label] = _specific_on(coded, pair, r, label, bootstrap, seed)
    return out


def positive_negative_agreement(
    table: Any,
    *,
    categories: Categories = None,
    positive: Hashable | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> dict[str, AgreementResult]:
    """Cicchetti & Feinstein's (1990) p_pos = 2a/(2a + b + c) and p_neg = 2d/(2d + b + c).

    Cicchetti & Feinstein (1990) "High agreement but low kappa: II. Resolving the paradoxes",
    J. Clin. Epidemiol. 43(6). Any number of raters (Uebersax's specific agreement of
    `positive` and of "anything else"); `positive` defaults to the second category in scale
    order. Returns {"positive": …, "negative": …}, each with its jackknife interval.
    """
    coded, pair = _prepare(table, categories)
    if coded.multilabel:
        raise ValueError("a multi-label facet: use specific_agreement (per label)")
    if positive is not None and positive not in coded.values:
        raise ValueError(f"positive={positive!r} is not one of {list(coded.values)}")
    if positive is None and len(coded.values) < 2:
        raise ValueError("positive/negative agreement needs two categories: declare them")
    pos = coded.values.index(positive) if positive is not None else 1
    units, values = pair.flat()
    r = np.bincount(units, values == pos, pair.n_pairable).astype(np.float64)
    label = coded.values[pos]
    return {
        "positive": _specific_on(coded, pair, r, label, bootstrap, seed),
        "negative": _specific_on(coded, pair, pair.m - r, f"not {label!r}", bootstrap, seed),
    }


def _free_marginal(
    name: str,
    table: Any,
    categories: Categories,
    q: int | None,
    bootstrap: int,
    seed: int | None,
) -> AgreementResult:
    coded, pair = _prepare(table, categories)
    q_used, rule = _ac1_q(coded, pair, q)
    model = free_marginal(pair, q_used)
    reason = _too_few(pair) or _no_variation(coded, pair)
    if reason is None and q_used < 2:
        reason = f"{name} needs at least 2 categories"
    result = _result(name, coded, pair, model, reason, bootstrap, seed)
    p_o = float(model.parts[:, 1].mean()) if pair.n_pairable else None
    p_e = 1.0 / q_used if q_used else None
    return _replace(result, p_o=p_o, p_e=p_e, q=q_used, extra={**result.extra, "q_rule": rule})


def _pabak_on(
    coded: RatingTable,
    pos: int,
    category: Hashable | None = None,
    bootstrap: int = 0,
    seed: int | None = None,
) -> AgreementResult:
    """PABAK, PI and BI on a two-column, two-value table; `pos` the positive value's code."""
    both = (coded.codes >= 0).all(axis=1)
    a, b = coded.codes[both, 0] == pos, coded.codes[both, 1] == pos
    pair = Pairable(coded.codes[both], np.full(int(both.sum()), 2), coded.n_units, len(a))
    ones = np.ones(len(a))
    parts = np.column_stack([ones, a == b, a & b, ~a & ~b, a & ~b, ~a & b]).astype(np.float64)
    model = UnitSums(parts, lambda t: 2.0 * t[..., 1] / t[..., 0] - 1.0)
    reason = _too_few(pair) or _no_variation(coded, pair)
    result = _result("pabak", coded, pair, model, reason, bootstrap, seed)
    extra: dict[str, Any] = {"positive": coded.values[pos]}
    if category is not None:
        extra["category"] = category
    if len(a):
        t = parts.sum(axis=0)
        n, agree, yy, nn, yn, ny = (float(x) for x in t)
        pi, bi = (yy - nn) / n, (yn - ny) / n
        denominator = 1.0 - pi**2 + bi**2
        kappa = (2.0 * agree / n - 1.0 - pi**2 + bi**2) / denominator if denominator else None
        pi_se = _linear_se(parts, lambda t: (t[..., 2] - t[..., 3]) / t[..., 0])
        bi_se = _linear_se(parts, lambda t: (t[..., 4] - t[..., 5]) / t[..., 0])
        extra.update(
            prevalence_index=pi,
            prevalence_index_se=pi_se,
            bias_index=bi,
            bias_index_se=bi_se,
            cohen_kappa=kappa if reason is None else None,
            counts={"a": int(yy), "b": int(yn), "c": int(ny), "d": int(nn)},
        )
        result = _replace(result, p_o=agree / n, p_e=0.5)
    return _replace(result, q=2, extra={**result.extra, **extra})


def _linear_se(parts: FloatArray, statistic: Any) -> float | None:
    model = UnitSums(parts, statistic)
    if len(parts) < 2:
        return None
    se, _, _ = jackknife(model.value(np.ones(len(parts))), model.leave_one_out())
    return se


def _specific_on(
    coded: RatingTable,
    pair: Pairable,
    r: FloatArray,
    category: Hashable,
    bootstrap: int,
    seed: int | None,
) -> AgreementResult:
    """Σ r(r − 1) / Σ r(m − 1) over pairable units, r the unit's ratings in the category."""
    m = pair.m.astype(np.float64)
    model = UnitSums(np.column_stack([r * (r - 1.0), r * (m - 1.0)]), ratio)
    reason = _too_few(pair, minimum=1)
    if reason is None and not r.any():
        reason = f"no pairable rating is {category!r}: its specific agreement is 0/0"
    result = _result("specific_agreement", coded, pair, model, reason, bootstrap, seed)
    return _replace(result, extra={**result.extra, "category": category})


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
    return len(pair.observed)


def _too_few(pair: Pairable, minimum: int = 2) -> str | None:
    if pair.n_pairable >= minimum:
        return None
    return (
        f"fewer than {minimum} pairable unit{'s' if minimum > 1 else ''} "
        f"(units with at least 2 ratings): {pair.n_pairable} of {pair.n_rows}"
    )


def _no_variation(coded: RatingTable, pair: Pairable) -> str | None:
    present = pair.observed
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
