# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""Models behind the further coefficients in stats.py, with leave-one-unit-out algebra (pure).

Each model offers `value(w)` (w: a weight per pairable unit — ones, or bootstrap counts) and
`leave_one_out()` (every delete-one-unit replicate at once), as the models in _kappa.py do.

- `UnitSums`: a statistic that is a function of a few sums over units (Brennan–Prediger,
  Bennett's S, Randolph's κ, PABAK and its indices, specific agreement). Leaving unit u out
  subtracts its row of parts, so the replicates are one n × d array, d ≤ 6.
- `AC2Model`: Gwet's AC2, the AC1 model with weighted within-unit agreement.
- `CongerModel`: Conger's κ, p_e from each rater's own marginals.
- `LightModel`: Light's κ, the mean of the pairwise Cohen's κ.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._kappa import CohenModel, MultiRaterModel, agreement_weights, chance_corrected_array
from ._table import FloatArray, IntArray, Pairable

Statistic = Callable[[FloatArray], FloatArray]


class UnitSums:
    """θ = f(Σ_u w_u x_u) for per-unit parts x_u (rows of `parts`, n × d)."""

    def __init__(self, parts: FloatArray, statistic: Statistic):
        self.parts, self.statistic = parts, statistic

    def value(self, w: FloatArray) -> float:
        return float(self.statistic(w @ self.parts))

    def leave_one_out(self) -> FloatArray:
        rest = self.parts.sum(axis=0) - self.parts
        return np.asarray(self.statistic(rest), dtype=np.float64)


def ratio(t: FloatArray) -> FloatArray:
    """t[..., 0] / t[..., 1], NaN where the denominator is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = t[..., 0] / t[..., 1]
    return np.asarray(np.where(t[..., 1] > 0, out, np.nan), dtype=np.float64)


def pair_agreement(pair: Pairable, weights: FloatArray | None = None) -> FloatArray:
    """Per pairable unit: Σ over pairs of its ratings of w(a, b) (identity: agreeing pairs)."""
    total = np.zeros(pair.n_pairable)
    for units, a, b in pair.column_pairs():
        x = (a == b).astype(np.float64) if weights is None else weights[a, b]
        total += np.bincount(units, x, pair.n_pairable)
    return total


def unit_p_a(pair: Pairable, weights: FloatArray | None = None) -> FloatArray:
    """Per pairable unit: the share of its pairs of ratings that agree (weighted)."""
    m = pair.m.astype(np.float64)
    return np.asarray(2.0 * pair_agreement(pair, weights) / (m * (m - 1.0)), dtype=np.float64)


def free_marginal(pair: Pairable, q: int) -> UnitSums:
    """(p_a − 1/q) / (1 − 1/q): Brennan–Prediger, Bennett's S, Randolph's κ."""
    parts = np.column_stack([np.ones(pair.n_pairable), unit_p_a(pair)])

    def statistic(t: FloatArray) -> FloatArray:
        p_a = t[..., 1] / t[..., 0]
        return chance_corrected_array(p_a, np.full_like(p_a, 1.0 / q))

    return UnitSums(parts, statistic)


def ordered_weights(n_values: int, weights: str) -> FloatArray:
    """AC2's agreement weights on the declared scale, positions 0..q−1 (Gwet 2014, ch. 3).

    identity (AC2 = AC1); linear and quadratic as Cohen's (`agreement_weights`); ordinal
    w_kl = 1 − M_kl / max M with M_kl = C(|k − l| + 1, 2), as irrCAC's `ordinal.weights`.
    """
    if weights == "identity":
        return np.eye(n_values)
    if weights == "ordinal":
        gap = np.abs(np.subtract.outer(np.arange(n_values), np.arange(n_values)))
        m = (gap + 1.0) * gap / 2.0
        return np.asarray(1.0 - m / m.max() if m.max() > 0 else np.ones_like(m), np.float64)
    if weights in ("linear", "quadratic"):
        w = agreement_weights(n_values, weights)
        assert w is not None
        return w
    raise ValueError(
        f"weights must be 'identity', 'linear', 'quadratic' or 'ordinal', got {weights!r}"
    )


class AC2Model(MultiRaterModel):
    """Gwet's AC2: p_a with weighted agreement, p_e = T_w/(q(q − 1)) Σ_k π_k (1 − π_k).

    p_a = (1/n) Σ_u Σ_k r_uk (r*_uk − 1) / (m_u (m_u − 1)), r*_uk = Σ_l w_kl r_ul, which is
    the weighted share of agreeing pairs within the unit; T_w = Σ_kl w_kl (T_w = q for the
    identity, so AC2 = AC1). π_k as AC1's, so the leave-one-out algebra of p_e is AC1's.
    """

    def __init__(self, pair: Pairable, n_values: int, q: int, weights: FloatArray | None):
        super().__init__(pair, n_values, q, "ac1")
        if weights is not None:
            self.pa_u = unit_p_a(pair, weights)
        self.scale = 1.0 if weights is None else float(weights.sum()) / q

    def _p_e(self, sum_pi2: float | FloatArray) -> float | FloatArray:
        return self.scale * super()._p_e(sum_pi2)


class CongerModel:
    """Conger's κ: p_a as Fleiss', p_e the mean over rater pairs r ≠ s of Σ_k p_rk p_sk.

    p_rk: the share of rater r's pairable ratings in category k. With P = Σ_r p_r and
    S = Σ_r |p_r|², p_e = (|P|² − S) / (R (R − 1)) (Conger 1980; Gwet 2014 §2.4: p̄_k² − s²_k/R).
    Leaving unit u out changes only the p_r of the raters who rated it.
    """

    def __init__(self, codes: IntArray, pa_u: FloatArray, n_values: int):
        rated = codes >= 0
        self.codes, self.rated = codes[:, rated.any(axis=0)], rated[:, rated.any(axis=0)]
        self.pa_u, self.v = pa_u, n_values
        self.counts = np.array(
            [np.bincount(self.codes[self.rated[:, r], r], minlength=n_values) for r in self.raters]
        ).astype(np.float64)

    @property
    def raters(self) -> range:
        return range(self.codes.shape[1])

    def p_o_p_e(self, w: FloatArray) -> tuple[float, float]:
        counts = np.array(
            [
                np.bincount(self.codes[self.rated[:, r], r], w[self.rated[:, r]], self.v)
                for r in self.raters
            ]
        ).reshape(len(self.raters), self.v)
        n_r = counts.sum(axis=1)
        keep = n_r > 0
        p = counts[keep] / n_r[keep, None]
        big_r = float(keep.sum())
        big_p = p.sum(axis=0)
        p_e = (big_p @ big_p - (p * p).sum()) / (big_r * (big_r - 1.0)) if big_r > 1 else np.nan
        return float(w @ self.pa_u) / float(w.sum()), float(p_e)

    def value(self, w: FloatArray) -> float:
        return float(chance_corrected_array(*map(np.asarray, self.p_o_p_e(w))))

    def leave_one_out(self) -> FloatArray:
        n = float(len(self.pa_u))
        p_a = (self.pa_u.sum() - self.pa_u) / (n - 1.0)
        n_r = self.counts.sum(axis=1)
        p = self.counts / n_r[:, None]
        big_p = np.tile(p.sum(axis=0), (len(self.pa_u), 1))
        squares = np.full(len(self.pa_u), (p * p).sum())
        big_r = np.full(len(self.pa_u), float(len(self.raters)))
        for r in self.raters:
            units = np.flatnonzero(self.rated[:, r])
            own = self.codes[units, r]
            rest = n_r[r] - 1.0
            big_p[units] -= p[r]
            squares[units] -= p[r] @ p[r]
            if rest == 0:  # the rater's only pairable unit: without it the rater drops out
                big_r[units] -= 1.0
                continue
            big_p[units] += self.counts[r] / rest
            big_p[units, own] -= 1.0 / rest
            c = self.counts[r]
            squares[units] += (c @ c - 2.0 * c[own] + 1.0) / rest**2
        with np.errstate(invalid="ignore", divide="ignore"):
            p_e = ((big_p * big_p).sum(axis=1) - squares) / (big_r * (big_r - 1.0))
        p_e = np.where(big_r > 1, p_e, np.nan)
        return chance_corrected_array(p_a, p_e)


class LightModel:
    """Light's κ: the mean over rater pairs of Cohen's κ on the units both rated.

    `pairs`: (pairable-unit index of the pair's shared units, CohenModel) for each pair used.
    A unit left out changes only the κ of the pairs that share it.
    """

    def __init__(self, n_units: int, pairs: list[tuple[IntArray, CohenModel]]):
        self.n, self.pairs = n_units, pairs

    def value(self, w: FloatArray) -> float:
        kappas = [
            model.value(w[units]) if w[units].sum() > 0 else np.nan for units, model in self.pairs
        ]
        return float(np.mean(kappas))

    def leave_one_out(self) -> FloatArray:
        total = np.zeros(self.n)
        for units, model in self.pairs:
            replicate = np.full(self.n, model.value(np.ones(len(units))))
            replicate[units] = model.leave_one_out() if len(units) >= 2 else np.nan
            total += replicate
        return np.asarray(total / len(self.pairs), dtype=np.float64)
