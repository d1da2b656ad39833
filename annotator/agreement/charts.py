# ruff: noqa: RUF001, RUF002, RUF003 -- α, κ and × are the notation of the statistics.
"""Geometry of the report's server-rendered SVG charts (pure; no Django).

The templates draw what these return, so the page needs no chart library and no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT, PAD = 600.0, 240.0, 36.0
Y_LOW = -0.2  # α below this is drawn on the floor
PALETTE = ["#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e"]
# Each facet's line has its own marker as well as its own colour, so that the lines are told
# apart without seeing colour (WCAG 1.4.1); the legend shows both.
MARKERS = ["circle", "square", "diamond", "triangle-up", "triangle-down", "bar"]


def trend(
    points: Sequence[tuple[int, dict[str, float | None]]],
    facets: Sequence[str],
    threshold: float,
    *,
    marks: bool = True,
) -> dict[str, Any]:
    """Headline α per facet over rounds: [(round number, {facet: α})] → lines and axis.
    `marks=False`: the lines without a marker per point (`marks` empty; a drift chart of a
    thousand windows)."""
    rounds = [number for number, _ in points]
    step = (WIDTH - 2 * PAD) / max(len(rounds) - 1, 1)

    def x(i: int) -> float:
        return round(PAD + i * step if len(rounds) > 1 else WIDTH / 2, 1)

    lines = []
    for k, facet in enumerate(facets):
        shape = MARKERS[k % len(MARKERS)]
        drawn: list[dict[str, Any]] = []
        for i, (number, values) in enumerate(points):
            if values.get(facet) is None:
                continue
            mx, my = x(i), _y(values[facet])
            drawn.append(
                {
                    "x": mx,
                    "y": my,
                    "value": values[facet],
                    "round": number,
                    "d": marker(shape, mx, my) if marks else "",
                }
            )
        path = " ".join(f"{m['x']},{m['y']}" for m in drawn)
        lines.append(
            {
                "facet": facet,
                "color": PALETTE[k % len(PALETTE)],
                "shape": shape,
                "key": marker(shape, 6, 6),  # the legend's 12 × 12 swatch
                "marks": drawn if marks else [],
                "path": path,
            }
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


def marker(shape: str, x: float, y: float) -> str:
    """An SVG path of a marker about 9 units across, centred on (x, y)."""
    if shape == "circle":
        return f"M{x - 4.5:g},{y:g} a4.5,4.5 0 1,0 9,0 a4.5,4.5 0 1,0 -9,0 z"
    if shape == "square":
        return f"M{x - 4:g},{y - 4:g} h8 v8 h-8 z"
    if shape == "diamond":
        return f"M{x:g},{y - 5.5:g} l5.5,5.5 l-5.5,5.5 l-5.5,-5.5 z"
    if shape == "triangle-up":
        return f"M{x:g},{y - 5:g} l5.5,9.5 h-11 z"
    if shape == "triangle-down":
        return f"M{x:g},{y + 5:g} l5.5,-9.5 h-11 z"
    if shape == "bar":
        return f"M{x - 5.5:g},{y - 2.5:g} h11 v5 h-11 z"
    raise ValueError(f"no marker {shape!r}")


def _y(value: float | None) -> float:
    v = max(Y_LOW, min(1.0, value if value is not None else Y_LOW))
    return round(PAD / 2 + (1.0 - v) / (1.0 - Y_LOW) * (HEIGHT - 1.5 * PAD), 1)


def heatmap(labels: Sequence[str], cells: Sequence[Sequence[float | None]]) -> dict[str, Any]:
    """Pairwise κ as coloured squares: red (κ ≤ 0) to green (κ = 1); grey where undefined.
    Every colour but the grey holds white text at ≥ 5:1 (the value written on the square).
    Rows and columns are named (columns slanted above the squares); `legend` is the scale."""
    size = 36.0
    longest = max((len(name) for name in labels), default=4)
    left = 8.0 * longest + 10
    top = round(5.0 * longest + 14, 1)  # room for the slanted column names
    squares = [
        {
            "x": left + j * size,
            "y": top + i * size,
            # where its value is written: κ is read as a number, not only as a colour
            "cx": left + j * size + (size - 2) / 2,
            "cy": top + i * size + (size - 2) / 2,
            "value": value,
            "fill": _color(value),
            "row": labels[i],
            "column": labels[j],
            "diagonal": i == j,
        }
        for i, row in enumerate(cells)
        for j, value in enumerate(row)
    ]
    columns = [
        {"name": n, "x": left + j * size + size / 2, "y": top - 6} for j, n in enumerate(labels)
    ]
    return {
        "size": size,
        "cell": size - 2,
        "label_x": left - 6,
        "width": left + size * len(labels) + 6.0 * longest + 10,
        "height": top + 10 + size * len(labels),
        "squares": squares,
        "rows": [{"name": n, "y": top + i * size + size / 2} for i, n in enumerate(labels)],
        "columns": columns,
        "legend": scale_legend(),
        # what a screen reader reads for the picture: each pair once
        "summary": "; ".join(
            f"{labels[i]} × {labels[j]}: " + ("undefined" if v is None else f"κ = {v:.3f}")
            for i, row in enumerate(cells)
            for j, v in enumerate(row)
            if i < j
        ),
    }


def scale_legend() -> list[dict[str, str]]:
    """The heatmap's colour scale as labelled swatches: κ ≤ 0 to 1 in steps of 0.2, and grey."""
    steps = [("≤ 0", 0.0), ("0.2", 0.2), ("0.4", 0.4), ("0.6", 0.6), ("0.8", 0.8), ("1", 1.0)]
    out = [{"label": label, "fill": _color(value)} for label, value in steps]
    undefined = "— undefined (too few shared units, or no variation)"
    return [*out, {"label": undefined, "fill": _color(None)}]


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
