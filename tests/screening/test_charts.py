"""The recall chart's geometry and its SVG: long curves thinned, text escaped, lines told apart
without colour."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from annotator.screening.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    MAX_POINTS,
    RIGHT,
    TOP,
    WIDTH,
    recall_chart,
    recall_png,
    recall_svg,
)

SVG = "{http://www.w3.org/2000/svg}"


def test_a_long_curve_is_drawn_through_at_most_max_points_from_corner_to_corner() -> None:
    n = 10_000
    found = [min(k, 50) for k in range(n + 1)]
    chart = recall_chart([("prioritised", found)], relevant=50, title="t", summary="s")
    points = chart.lines[0].points
    assert len(points) <= MAX_POINTS
    assert points[0] == (LEFT, HEIGHT - BOTTOM)  # nothing screened, nothing found
    assert points[-1] == (WIDTH - RIGHT, TOP)  # everything screened, all found
    assert chart.x_ticks[-1][1] == "10,000"
    assert [label for _, label in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]


def test_the_svg_escapes_text_and_dashes_the_second_line() -> None:
    chart = recall_chart(
        [("model <b>", [0, 1, 2]), ("random & co", [0, 0, 2])],
        relevant=2,
        title='A "title" <script>',
        summary="x < y",
    )
    data = recall_svg(chart)
    assert b"<script>" not in data
    root = ET.fromstring(data)
    assert root.attrib["aria-label"] == "x < y"
    assert root.findtext(f"{SVG}title") == 'A "title" <script>'
    first, second = root.findall(f"{SVG}polyline")
    assert "stroke-dasharray" not in first.attrib
    assert second.attrib["stroke-dasharray"] == "6 4"
    assert "style" not in data.decode()  # presentation attributes only (CSP)


def test_the_png_is_twice_the_svg() -> None:
    chart = recall_chart([("a", [0, 1, 1]), ("b", [0, 0, 1])], relevant=1, title="t", summary="")
    assert recall_png(chart)[:8] == b"\x89PNG\r\n\x1a\n"
