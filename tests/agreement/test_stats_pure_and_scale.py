# ruff: noqa: RUF002, RUF003 -- the notation of the sources (α, κ, ×, −).
"""The statistics core stays pure (no Django) and fits in memory at the study's scale.

Timings are not asserted here: `benchmarks/agreement_stats.py` prints them.
"""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from annotator.agreement import stats

ROOT = Path(__file__).resolve().parents[2]
PEAK_MIB = 64  # the krippendorff package needs ~2,700 MiB for the same table


def test_importing_stats_loads_no_django():
    code = (
        "import sys, annotator.agreement.stats; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def big_table() -> np.ndarray:
    """100,000 units × 3 raters × 34 categories, 10% of ratings missing."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 34, 100_000)
    table = np.where(
        rng.random((100_000, 3)) < 0.7, truth[:, None], rng.integers(0, 34, (100_000, 3))
    )
    table = table.astype(float)
    table[rng.random(table.shape) < 0.1] = np.nan
    return table


@pytest.mark.parametrize(
    ("coefficient", "options"),
    [
        (stats.percent_agreement, {}),
        (stats.fleiss_kappa, {}),
        (stats.gwet_ac1, {}),
        (stats.krippendorff_alpha, {}),
        (stats.krippendorff_alpha, {"level": "ordinal"}),
        (stats.krippendorff_alpha, {"level": "interval"}),
        (stats.cohen_kappa, {"weights": "quadratic"}),
    ],
    ids=[
        "percent",
        "fleiss",
        "ac1",
        "alpha-nominal",
        "alpha-ordinal",
        "alpha-interval",
        "cohen-quadratic",
    ],
)
def test_100k_units_3_raters_34_categories_fits_in_memory(big_table, coefficient, options):  # type: ignore[no-untyped-def]
    table = big_table[:, :2] if coefficient is stats.cohen_kappa else big_table
    tracemalloc.start()
    try:
        result = coefficient(table, categories=range(34), **options)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert result.value is not None and result.se is not None
    assert result.n_pairable_units > 75_000
    assert peak < PEAK_MIB, f"peak {peak:.1f} MiB"


def test_multilabel_masi_at_scale_fits_in_memory():
    rng = np.random.default_rng(1)
    labels = np.arange(12)
    masks = rng.random((20_000, 3, 12)) < 0.15
    rows = [[frozenset(labels[m].tolist()) for m in unit] for unit in masks]
    tracemalloc.start()
    try:
        result = stats.krippendorff_alpha(rows, distance="masi", categories=range(12))
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert result.value is not None
    assert peak < PEAK_MIB, f"peak {peak:.1f} MiB"
