# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""κ-family coefficients on pairable units, with leave-one-unit-out algebra (pure).

Multi-rater form (Fleiss 1971; Gwet 2014 ch. 2 for missing ratings), over the n pairable units
with m_u ratings each and r_uk of them in category k:

    p_a = (1/n) Σ_u Σ_k r_uk (r_uk − 1) / (m_u (m_u − 1))
    π_k = (1/n) Σ_u r_uk / m_u
    Fleiss κ:  p_e = Σ_k π_k²                  κ = (p_a − p_e) / (1 − p_e)
    Gwet AC1:  p_e = Σ_k π_k (1 − π_k) / (q − 1),  q = declared categories

Two fixed raters (Cohen 1960, 1968), over the n units both rated, agreement weights w_kl:

    p_o = (1/n) Σ_u w(a_u, b_u),  p_e = Σ_kl w_kl p_k· p_·l,  κ = (p_o − p_e) / (1 − p_e)

Leaving unit u out changes each sum by that unit's own terms, so every replicate is closed-form.
"""

from __future__ import annotations

import numpy as np

from ._table import FloatArray, IntArray, Pairable


class MultiRaterModel:
    """p_a and π on pairable units: Fleiss' κ (= Scott's π for two raters), AC1, p_o."""

    def __init__(self, pair: Pairable, n_values: int, q: int, kind: str):
        self.pair, self.v, self.q, self.kind = pair, n_values, q, kind
        self.units, self.values = pair.flat()
        self.m = pair.m.astype(np.float64)
        agree = np.zeros(pair.n_pairable)
        for units, a, b in pair.column_pairs():
            agree += np.bincount(units, a == b, pair.n_pairable)
        self.agree = agree
        self.pa_u = 2.0 * agree / (self.m * (self.m - 1.0))
        self.share = 1.0 / self.m[self.units]
        self._unit: tuple[float, float] | None = None

    def p_a_p_e(self, w: FloatArray) -> tuple[float, float]:
        # The point estimate, its p_o / p_e and Gwet's SE all ask for unit weights: computed once.
        unit = len(w) == self.pair.n_pairable and bool((w == 1.0).all())
        if unit and self._unit is not None:
            return self._unit
        found = self._p_a_p_e(w)
        if unit:
            self._unit = found
        return found

    def _p_a_p_e(self, w: FloatArray) -> tuple[float, float]:
        total = float(w.sum())
        p_a = float(w @ self.pa_u) / total
        pi = np.bincount(self.values, w[self.units] * self.share, self.v) / total
        return p_a, float(self._p_e(float(pi @ pi)))

    def _p_e(self, sum_pi2: float | FloatArray) -> float | FloatArray:
        if self.kind == "percent":
            return 0.0 * sum_pi2
        if self.kind == "ac1":
            return (1.0 - sum_pi2) / (self.q - 1.0) if self.q > 1 else float("nan") * sum_pi2
        return sum_pi2

    def value(self, w: FloatArray) -> float:
        p_a, p_e = self.p_a_p_e(w)
        return p_a if self.kind == "percent" else _chance_corrected(p_a, p_e)

    def leave_one_out(self) -> FloatArray:
        n = float(self.pair.n_pairable)
        p_a = (self.pa_u.sum() - self.pa_u) / (n - 1.0)
        if self.kind == "percent":
            return np.asarray(p_a, dtype=np.float64)
        big_p = np.bincount(self.values, self.share, self.v)
        cross = np.bincount(self.units, big_p[self.values] * self.share, self.pair.n_pairable)
        own = (self.m + 2.0 * self.agree) / self.m**2
        sum_pi2 = (big_p @ big_p - 2.0 * cross + own) / (n - 1.0) ** 2
        p_e = np.asarray(self._p_e(sum_pi2), dtype=np.float64)
        return chance_corrected_array(p_a, p_e)

    def gwet_se(self) -> float:
        """Gwet's (2014, §5.3) linearised SE over units, finite-population factor 1 (N = ∞).

        var = 1/(n(n−1)) Σ_u (κ*_u − κ)² with κ*_u = κ_u − 2(1 − κ)(p_e|u − p_e)/(1 − p_e),
        κ_u = (p_a|u − p_e)/(1 − p_e), p_e|u = Σ_k (r_uk/m_u) π_k for Fleiss and
        Σ_k (r_uk/m_u)(1 − π_k)/(q − 1) for AC1 — as irrCAC's `fleiss()` and `gwet()`.
        """
        n = float(self.pair.n_pairable)
        p_a, p_e = self.p_a_p_e(np.ones(self.pair.n_pairable))
        kappa = _chance_corrected(p_a, p_e)
        pi = np.bincount(self.values, self.share, self.v) / n
        mean_pi = np.bincount(self.units, pi[self.values] * self.share, self.pair.n_pairable)
        pe_u = (1.0 - mean_pi) / (self.q - 1.0) if self.kind == "ac1" else mean_pi
        k_u = (self.pa_u - p_e) / (1.0 - p_e)
        k_star = k_u - 2.0 * (1.0 - kappa) * (pe_u - p_e) / (1.0 - p_e)
        return float(np.sqrt(((k_star - kappa) ** 2).sum() / (n * (n - 1.0))))


class CohenModel:
    """Cohen's κ for two fixed raters; `weights` is None or a values × values w_kl matrix."""

    def __init__(self, a: IntArray, b: IntArray, n_values: int, weights: FloatArray | None):
        self.a, self.b, self.v, self.w = a, b, n_values, weights
        self.x = (a == b).astype(np.float64) if weights is None else weights[a, b]
        self._unit: tuple[float, float] | None = None

    def p_o_p_e(self, w: FloatArray) -> tuple[float, float]:
        # The point estimate and the stored p_o / p_e both ask for unit weights: computed once.
        unit = len(w) == len(self.a) and bool((w == 1.0).all())
        if unit and self._unit is not None:
            return self._unit
        found = self._p_o_p_e(w)
        if unit:
            self._unit = found
        return found

    def _p_o_p_e(self, w: FloatArray) -> tuple[float, float]:
        total = float(w.sum())
        rows = np.bincount(self.a, w, self.v) / total
        cols = np.bincount(self.b, w, self.v) / total
        p_e = float(rows @ cols) if self.w is None else float(rows @ self.w @ cols)
        return float(w @ self.x) / total, p_e

    def value(self, w: FloatArray) -> float:
        return _chance_corrected(*self.p_o_p_e(w))

    def leave_one_out(self) -> FloatArray:
        n = float(len(self.a))
        p_o = (self.x.sum() - self.x) / (n - 1.0)
        rows = np.bincount(self.a, minlength=self.v).astype(np.float64)
        cols = np.bincount(self.b, minlength=self.v).astype(np.float64)
        if self.w is None:
            joint = rows @ cols - cols[self.a] - rows[self.b] + self.x
        else:
            wc, rw = self.w @ cols, rows @ self.w
            joint = rows @ self.w @ cols - wc[self.a] - rw[self.b] + self.x
        p_e = joint / (n - 1.0) ** 2
        return chance_corrected_array(p_o, p_e)


def agreement_weights(n_values: int, weights: str | None) -> FloatArray | None:
    """Cohen's (1968) agreement weights on the declared scale: positions 0..q−1.

    linear w_kl = 1 − |k − l|/(q − 1); quadratic w_kl = 1 − (k − l)²/(q − 1)².
    """
    if weights is None:
        return None
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    if n_values < 2:
        return np.ones((n_values, n_values))
    gap = np.abs(np.subtract.outer(np.arange(n_values), np.arange(n_values))) / (n_values - 1.0)
    return np.asarray(1.0 - (gap if weights == "linear" else gap**2), dtype=np.float64)


# Leave-one-out algebra computes p_e = 1 (no variation left) as 1 − 1e-16 in some summation
# orders; below this gap a replicate is undefined, as the direct computation would say.
DEGENERATE_GAP = 1e-12


def chance_corrected_array(p_o: FloatArray, p_e: FloatArray) -> FloatArray:
    """(p_o − p_e)/(1 − p_e) per replicate; NaN where 1 − p_e vanishes (no variation left)."""
    gap = 1.0 - p_e
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (p_o - p_e) / gap
    return np.asarray(np.where(gap > DEGENERATE_GAP, value, np.nan), dtype=np.float64)


def _chance_corrected(p_o: float, p_e: float) -> float:
    return float("nan") if not p_e < 1.0 else (p_o - p_e) / (1.0 - p_e)
