# ruff: noqa: RUF002, RUF003 -- α is the notation of the statistics.
"""How many double-labelled items a target interval width for α needs, from a run's interval.

A jackknife standard error shrinks as 1/√n in the number of units, so a 95% interval of width
w on n pairable units becomes about w·√(n/m) on m units drawn the same way (the same annotators,
the same mix of categories). The items a target width t needs are then m = ⌈n·(w/t)²⌉. The
estimate is as good as the run is representative: plan from a calibration round, or a pilot of
the main round, labelled as the rest will be. tests/agreement/test_planning.py checks it on
simulated rounds: at the planned number of items the interval's width is close to the target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# The widths the agreement report plans for: ±0.1 and ±0.05 around α.
TARGET_WIDTHS = (0.2, 0.1)


def items_for_width(n: int, ci: Sequence[float] | None, target: float) -> int | None:
    """Pairable items for a 95% interval `target` wide, from an interval `ci` on `n` items;
    None when the run gives no interval to plan from (fewer than 2 units, undefined α, or an
    interval of width 0)."""
    if n < 2 or ci is None or target <= 0:
        return None
    width = float(ci[1]) - float(ci[0])
    if not math.isfinite(width) or width <= 0:
        return None
    return max(2, math.ceil(n * (width / target) ** 2))


def plan_rows(facets: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """Per facet of a stored result: its headline's n and interval width, and the items each of
    TARGET_WIDTHS needs."""
    rows = []
    for facet in facets:
        coefficients = facet["coefficients"]
        assert isinstance(coefficients, dict)
        headline = coefficients[facet["headline"]]
        n, ci = int(headline["n_pairable_units"] or 0), headline.get("ci")
        rows.append(
            {
                "key": facet["key"],
                "name": facet["name"],
                "n": n,
                "width": None if not ci else float(ci[1]) - float(ci[0]),
                "needed": [(t, items_for_width(n, ci, t)) for t in TARGET_WIDTHS],
            }
        )
    return rows
