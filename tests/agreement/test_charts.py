# ruff: noqa: RUF001, RUF003 -- κ and × are the report's notation.
"""The report's charts tell their series and values apart without colour: each facet's trend
line has its own marker shape, and each square of the κ heatmap carries its value as text
(white on every colour the scale uses, at ≥ 4.5:1) and in the picture's text alternative."""

from __future__ import annotations

import re

from annotator.agreement import charts


def contrast(a: str, b: str) -> float:
    def luminance(colour: str) -> float:
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        rgb = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_each_facets_trend_line_has_a_marker_shape_of_its_own() -> None:
    facets = ["screening", "symptom", "root", "fix", "stage", "distributed"]
    points = [(1, dict.fromkeys(facets, 0.5)), (2, dict.fromkeys(facets, 0.7))]
    lines = charts.trend(points, facets, 0.8)["lines"]
    assert len({line["shape"] for line in lines}) == len(facets)
    assert len({line["key"] for line in lines}) == len(facets)  # and so does the legend
    for line in lines:
        for mark in line["marks"]:
            # the marker is drawn at its point: its path starts within its half-width
            start_x, start_y = (
                float(n) for n in re.match(r"M(-?[\d.]+),(-?[\d.]+)", mark["d"]).groups()
            )
            assert abs(start_x - mark["x"]) <= 6 and abs(start_y - mark["y"]) <= 6


def test_heatmap_squares_carry_their_value_where_white_text_reads() -> None:
    chart = charts.heatmap(
        ["ann-a", "ann-b", "ann-c"], [[1, 0.2, None], [0.2, 1, -0.4], [None, -0.4, 1]]
    )
    for square in chart["squares"]:
        assert square["x"] < square["cx"] < square["x"] + chart["cell"]
        assert square["y"] < square["cy"] < square["y"] + chart["cell"]
    assert chart["summary"] == (
        "ann-a × ann-b: κ = 0.200; ann-a × ann-c: undefined; ann-b × ann-c: κ = -0.400"
    )
    worst = min(contrast(charts._color(t / 100), "#ffffff") for t in range(-50, 101))
    assert worst >= 4.5
