# ruff: noqa: RUF001, RUF002 -- the notation of the sources in messages.
"""Time and memory of annotator.agreement.stats at study scale, beside the krippendorff package.

    .venv/bin/python benchmarks/agreement_stats.py [--units 100000] [--raters 3] [--categories 34]
        [--missing 0.1] [--seed 0] [--kripp-max-mib 8000] [--repeat 3]

Prints, per coefficient, the best wall time of --repeat runs (point estimate, jackknife SE and,
for Fleiss/AC1, Gwet's SE included) and the tracemalloc peak of one run. The krippendorff
package is run on the same data at each size from 10,000 units up to --units while its
units × V × V array (estimated before running) fits under --kripp-max-mib; its memory is
measured the same way. Writes benchmarks/results/agreement_stats.json (not committed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from annotator.agreement import stats


def make_table(units: int, raters: int, q: int, missing: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, q, units)
    noise = rng.integers(0, q, (units, raters))
    table = np.where(rng.random((units, raters)) < 0.7, truth[:, None], noise).astype(float)
    table[rng.random(table.shape) < missing] = np.nan
    return table


def make_sets(units: int, raters: int, q: int, seed: int) -> list[list[frozenset[int]]]:
    """Label sets as annotators give them: mostly 1 label, sometimes 2 or 3 (a few hundred
    distinct sets), each rater copying the unit's set 70% of the time."""
    rng = np.random.default_rng(seed)

    def draw(n: int) -> list[frozenset[int]]:
        sizes = rng.choice([1, 2, 3], size=n, p=[0.6, 0.3, 0.1])
        return [frozenset(rng.choice(q, size=k, replace=False).tolist()) for k in sizes]

    truth = draw(units)
    other = draw(units * raters)
    keep = rng.random((units, raters)) < 0.7
    return [
        [truth[u] if keep[u, r] else other[u * raters + r] for r in range(raters)]
        for u in range(units)
    ]


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, out


def ours(table: np.ndarray, q: int, sets: Any, repeat: int) -> list[dict[str, Any]]:
    cats = range(q)
    coded = stats.encode_table(table, categories=cats)
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("encode_table (numeric array)", lambda: stats.encode_table(table, categories=cats)),
        ("percent_agreement", lambda: stats.percent_agreement(coded)),
        ("fleiss_kappa (+ Gwet SE)", lambda: stats.fleiss_kappa(coded)),
        ("gwet_ac1 (+ Gwet SE)", lambda: stats.gwet_ac1(coded)),
        (
            "cohen_kappa quadratic (cols 0,1)",
            lambda: stats.cohen_kappa(coded.columns([0, 1]), weights="quadratic"),
        ),
        ("scott_pi (cols 0,1)", lambda: stats.scott_pi(coded.columns([0, 1]))),
    ]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        runs.append((f"krippendorff_alpha {level}", _alpha(coded, level)))
    runs.append(("per_category_alpha (34 binary α)", lambda: stats.per_category_alpha(coded)))
    runs.append(
        (
            "encode + alpha MASI (label sets)",
            lambda: stats.krippendorff_alpha(sets, distance="masi"),
        )
    )
    rows = []
    for name, fn in runs:
        seconds, peak, out = measure(fn, repeat)
        value = getattr(out, "value", None)
        rows.append({"what": name, "seconds": seconds, "peak_mib": peak, "value": value})
    return rows


def _alpha(coded: stats.RatingTable, level: str) -> Callable[[], Any]:
    return lambda: stats.krippendorff_alpha(coded, level=level)


def theirs(table: np.ndarray, q: int, max_mib: float) -> list[dict[str, Any]]:
    try:
        import krippendorff
    except ImportError:
        return [{"what": "krippendorff package not installed"}]
    rows = []
    for size in sorted({s for s in (10_000, 100_000, len(table)) if s <= len(table)}):
        estimate = size * q * q * 8 / 2**20 * 1.5
        what = f"krippendorff.alpha nominal, {size:,} units"
        if estimate > max_mib:
            rows.append({"what": what, "skipped": f"needs ~{estimate:,.0f} MiB"})
            continue
        part = table[:size]
        seconds, peak, value = measure(
            lambda part=part: krippendorff.alpha(
                reliability_data=part.T, level_of_measurement="nominal"
            ),
            1,
        )
        ours_value = stats.krippendorff_alpha(part).value
        rows.append(
            {"what": what, "seconds": seconds, "peak_mib": peak, "value": value, "ours": ours_value}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--categories", type=int, default=34)
    parser.add_argument("--missing", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kripp-max-mib", type=float, default=8000)
    args = parser.parse_args()
    table = make_table(args.units, args.raters, args.categories, args.missing, args.seed)
    sets = make_sets(args.units, args.raters, args.categories, args.seed)
    print(
        f"{args.units:,} units × {args.raters} raters × {args.categories} categories, "
        f"{args.missing:.0%} missing; best of {args.repeat}"
    )
    rows = ours(table, args.categories, sets, args.repeat) + theirs(
        table, args.categories, args.kripp_max_mib
    )
    for row in rows:
        if "seconds" in row:
            value = "" if row.get("value") is None else f"  value {row['value']:.6f}"
            print(f"{row['what']:<44} {row['seconds']:8.3f} s  {row['peak_mib']:9.1f} MiB{value}")
        else:
            print(f"{row['what']:<44} {row.get('skipped', '')}")
    out = Path(__file__).parent / "results" / "agreement_stats.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=float))


if __name__ == "__main__":
    main()
