# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""Krippendorff's α from the coincidence matrix, with leave-one-unit-out algebra (pure).

α = 1 − (n − 1) · Σ_ck o_ck δ_ck / Σ_ck n_c n_k δ_ck     (Krippendorff 2011, eq. for D_o/D_e)

where o_ck counts ordered pairs of values (c, k) by different raters in the same unit, each
weighted 1/(m_u − 1); n_c = Σ_k o_ck and n = Σ_c n_c. Only the per-unit sums
a_u = Σ_{i≠j} δ(v_i, v_j) / (m_u − 1) and the marginals are needed, so no units × V × V array
is ever built. Leaving unit u out subtracts a_u from the observed sum and n_u from the
marginals, which changes Σ n_c n_k δ_ck by −2 (δn)·n_u + n_u δ n_u: every replicate comes
from O(units × raters²) vectorised work.

The ordinal metric δ_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² equals (h_c − h_k)² with
h_g = Σ_{g'≤g} n_g' − n_g/2, so it moves with the marginals; its replicates are computed
exactly in chunks of units (a V-vector h per left-out unit).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._distance import DenseDelta, SetDelta
from ._table import FloatArray, IntArray, Pairable

_CHUNK_CELLS = 1 << 18


class AlphaModel:
    """α on one table's pairable units, for a fixed δ matrix, nominal (None) or ordinal."""

    def __init__(
        self, pair: Pairable, n_values: int, delta: DenseDelta | SetDelta | None, ordinal: bool
    ):
        self.pair, self.v, self.delta, self.ordinal = pair, n_values, delta, ordinal
        self.units, self.values = pair.flat()
        self.m = pair.m.astype(np.float64)
        pairs = list(pair.column_pairs())
        self.pu = np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, np.int64)
        self.pa = np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0, np.int64)
        self.pb = np.concatenate([p[2] for p in pairs]) if pairs else np.zeros(0, np.int64)
        self.n_c = self._marginals(np.ones(pair.n_pairable))
        self._dn: FloatArray | None = None
        disagree = np.bincount(self.pu, (self.pa != self.pb) * 2.0, pair.n_pairable)
        self.a_nominal = disagree / (self.m - 1.0)
        self.a_u = self._per_unit_observed()

    # -- point estimate and bootstrap -------------------------------------------------------
    def value(self, w: FloatArray) -> float:
        """α with unit weights w (1 = the data; multinomial counts = a bootstrap replicate)."""
        d_o, d_e, n = self.disagreements(w)
        return float("nan") if d_e == 0 or n < 2 else 1.0 - d_o / d_e

    def disagreements(self, w: FloatArray) -> tuple[float, float, float]:
        """(D_o, D_e, n) with D_o = Σ o δ / n and D_e = Σ n_c n_k δ / (n (n − 1))."""
        n_c = self._marginals(w)
        n = float(n_c.sum())
        if n < 2:
            return 0.0, 0.0, n
        if self.ordinal:
            h = _midranks(n_c)
            o = self._coincidences(w)
            observed = 2.0 * float(n_c @ h**2 - h @ o @ h)
            expected = 2.0 * float(n * (n_c @ h**2) - (n_c @ h) ** 2)
        else:
            observed = float(w @ self.a_u)
            expected = self._expected(n_c)
        return observed / n, expected / (n * (n - 1.0)), n

    def observed_agreement(self) -> tuple[float, float]:
        """(p_o, p_e) for exact matches: Σ o_cc / n and Σ n_c (n_c − 1) / (n (n − 1))."""
        n = float(self.n_c.sum())
        if n < 2:
            return float("nan"), float("nan")
        p_o = 1.0 - float(self.a_nominal.sum()) / n
        return p_o, float((self.n_c * (self.n_c - 1.0)).sum() / (n * (n - 1.0)))

    def coincidences(self) -> FloatArray:
        """The values × values coincidence matrix o_ck."""
        return self._coincidences(np.ones(self.pair.n_pairable))

    # -- leave one unit out -----------------------------------------------------------------
    def leave_one_out(self) -> FloatArray:
        """α with each pairable unit left out in turn (exact, vectorised)."""
        if self.ordinal:
            return np.concatenate(list(self._ordinal_loo()))
        a_u = self.a_u
        n = float(self.n_c.sum())
        observed = a_u.sum() - a_u
        expected = self._expected(self.n_c) - self._expected_drop(a_u)
        n_left = n - self.m
        return _alpha_replicates(n_left, observed, expected)

    def _expected_drop(self, a_u: FloatArray) -> FloatArray:
        """Σ n n δ − Σ (n − n_u)(n − n_u) δ for each unit u."""
        if self.delta is None:
            # nominal: Σ n_c n_k δ = n² − Σ n_c², and n_u δ n_u = Σ_{i≠j} [v_i ≠ v_j].
            cross = np.bincount(self.units, (self.n_c.sum() - self.n_c)[self.values], len(a_u))
            return np.asarray(2.0 * cross - a_u * (self.m - 1.0), dtype=np.float64)
        d = self.delta
        cross = np.bincount(self.units, self._delta_times(self.n_c)[self.values], len(a_u))
        own = a_u * (self.m - 1.0) + np.bincount(self.units, d.diagonal()[self.values], len(a_u))
        return np.asarray(cross - own, dtype=np.float64)

    def _ordinal_loo(self) -> Iterator[FloatArray]:
        n_units = self.pair.n_pairable
        o = self.coincidences()
        n_total = float(self.n_c.sum())
        order = np.argsort(self.pu, kind="stable")
        pu, pa, pb = self.pu[order], self.pa[order], self.pb[order]
        step = max(1, _CHUNK_CELLS // max(self.v, 1))
        for start in range(0, n_units, step):
            stop = min(start + step, n_units)
            yield self._ordinal_chunk(start, stop, o, n_total, (pu, pa, pb))

    def _ordinal_chunk(
        self,
        start: int,
        stop: int,
        o: FloatArray,
        n_total: float,
        pairs: tuple[IntArray, IntArray, IntArray],
    ) -> FloatArray:
        size = stop - start
        lo, hi = np.searchsorted(self.units, [start, stop])
        local = self.units[lo:hi] - start
        n_u = np.bincount(local * self.v + self.values[lo:hi], minlength=size * self.v)
        n_left = self.n_c[None, :] - n_u.reshape(size, self.v)
        h = np.cumsum(n_left, axis=1) - n_left / 2.0
        everything = 2.0 * ((h**2) @ self.n_c - np.einsum("bc,bc->b", h @ o, h))
        pu, pa, pb = pairs
        plo, phi = np.searchsorted(pu, [start, stop])
        rows = pu[plo:phi] - start
        diff2 = (h[rows, pa[plo:phi]] - h[rows, pb[plo:phi]]) ** 2
        own = np.bincount(rows, diff2, size) * 2.0 / (self.m[start:stop] - 1.0)
        total_left = n_total - self.m[start:stop]
        expected = 2.0 * (total_left * np.einsum("bc,bc->b", n_left, h**2))
        expected -= 2.0 * np.einsum("bc,bc->b", n_left, h) ** 2
        return _alpha_replicates(total_left, everything - own, expected)

    # -- pieces ------------------------------------------------------------------------------
    def _marginals(self, w: FloatArray) -> FloatArray:
        return np.bincount(self.values, w[self.units], self.v).astype(np.float64)

    def _per_unit_observed(self) -> FloatArray:
        if self.delta is None:
            return np.asarray(self.a_nominal, dtype=np.float64)
        both = self.delta.pairs(self.pa, self.pb)
        return np.bincount(self.pu, both, self.pair.n_pairable) / (self.m - 1.0)

    def _expected(self, n_c: FloatArray) -> float:
        if self.delta is None:
            return float(n_c.sum() ** 2 - (n_c**2).sum())
        return float(n_c @ self._delta_times(n_c)) / 2.0

    def _delta_times(self, n_c: FloatArray) -> FloatArray:
        """(δ + δᵀ) n_c, kept for the data's own marginals (the K × K product is the cost)."""
        assert self.delta is not None
        if not np.array_equal(n_c, self.n_c):
            return self.delta.times(n_c)
        if self._dn is None:
            self._dn = self.delta.times(n_c)
        return self._dn

    def _coincidences(self, w: FloatArray) -> FloatArray:
        weight = (w / (self.m - 1.0))[self.pu]
        index = np.concatenate([self.pa * self.v + self.pb, self.pb * self.v + self.pa])
        flat = np.bincount(index, np.concatenate([weight, weight]), self.v * self.v)
        return flat.reshape(self.v, self.v).astype(np.float64)


def _midranks(n_c: FloatArray) -> FloatArray:
    return np.asarray(np.cumsum(n_c) - n_c / 2.0, dtype=np.float64)


def _alpha_replicates(n_left: FloatArray, observed: FloatArray, expected: FloatArray) -> FloatArray:
    """1 − (n − 1)·D_o/D_e per left-out unit; NaN where D_e vanishes (no variation left),
    which the leave-one-out algebra may compute as a rounding residue instead of 0."""
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1.0 - (n_left - 1.0) * observed / expected
    return np.asarray(np.where(np.abs(expected) > 1e-12 * scale, value, np.nan), dtype=np.float64)
