# ruff: noqa: RUF002, RUF003 -- α, κ and × are the notation of the statistics.
"""Geometry of the report's server-rendered SVG charts (pure; no Django).

The templates draw what these return, so the page needs no chart library and no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT, PAD = 600.0, 240.0, 36.0
Y_LOW = -0.2  # α below this is drawn on the floor
PALETTE = ["#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e"]


def trend(
    points: Sequence[tuple[int, dict[str, float | None]]], facets: Sequence[str], threshold: float
) -> dict[str, Any]:
    """Headline α per facet over rounds: [(round number, {facet: α})] → lines and axis."""
    rounds = [number for number, _ in points]
    step = (WIDTH - 2 * PAD) / max(len(rounds) - 1, 1)

    def x(i: int) -> float:
        return round(PAD + i * step if len(rounds) > 1 else WIDTH / 2, 1)

    lines = []
    for k, facet in enumerate(facets):
        marks = [
            {"x": x(i), "y": _y(values[facet]), "value": values[facet], "round": number}
            for i, (number, values) in enumerate(points)
            if values.get(facet) is not None
        ]
        path = " ".join(f"{m['x']},{m['y']}" for m in marks)
        lines.append(
            {"facet": facet, "color": PALETTE[k % len(PALETTE)], "marks": marks, "path": path}
        )
    ticks = [{"value": v, "y": _y(v)} for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    axis = [{"x": x(i), "round": number} for i, number in enumerate(rounds)]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": PAD,
        "right": WIDTH - PAD,
        "tick_x": PAD - 6,
        "round_y": HEIGHT - PAD + 16,
        "lines": lines,
        "ticks": ticks,
        "rounds": axis,
        "threshold": {"value": threshold, "y": _y(threshold)},
    }


def _y(value: float | None) -> float:
    v = max(Y_LOW, min(1.0, value if value is not None else Y_LOW))
    return round(PAD / 2 + (1.0 - v) / (1.0 - Y_LOW) * (HEIGHT - 1.5 * PAD), 1)


def heatmap(labels: Sequence[str], cells: Sequence[Sequence[float | None]]) -> dict[str, Any]:
    """Pairwise κ as coloured squares: red (κ ≤ 0) to green (κ = 1); grey where undefined."""
    size = 36.0
    left = 8.0 * max((len(name) for name in labels), default=4) + 10
    squares = [
        {
            "x": left + j * size,
            "y": 20 + i * size,
            "value": value,
            "fill": _color(value),
            "row": labels[i],
            "column": labels[j],
        }
        for i, row in enumerate(cells)
        for j, value in enumerate(row)
    ]
    return {
        "size": size,
        "cell": size - 2,
        "label_x": left - 6,
        "width": left + size * len(labels) + 10,
        "height": 30 + size * len(labels),
        "squares": squares,
        "rows": [{"name": n, "y": 20 + i * size + size / 2} for i, n in enumerate(labels)],
    }


def _color(value: float | None) -> str:
    if value is None:
        return "#eaeef2"
    t = max(0.0, min(1.0, value))
    red, green = int(207 - t * (207 - 26)), int(34 + t * (127 - 34))
    return f"#{red:02x}{green:02x}{int(46 + t * 9):02x}"


def shade(count: int, largest: int) -> int:
    """0-5: how dark a confusion-matrix cell is, relative to the largest off-diagonal count."""
    if count <= 0 or largest <= 0:
        return 0
    return max(1, min(5, round(5 * count / largest)))
