"""The recall curve of a screening simulation as SVG or PNG (pure: Pillow, no Django).

Issues screened on x (0 to N), relevant issues found on y (0 to R); the prioritised order as a
solid line, the random order as a dashed one (told apart without colour, WCAG 1.4.1, as the
agreement charts do with markers), a dotted line at 95% recall. Colours are the product's chart
palette (annotator.agreement.charts.PALETTE). The SVG uses presentation attributes only (no
inline style, so a strict Content-Security-Policy holds), escapes every text, and says what it
shows in its `aria-label`. The PNG draws the same geometry at twice the size with the font
Pillow ships, as the paper charts do (annotator.exports.paper), so it needs no system font.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from PIL import Image, ImageDraw, ImageFont

from annotator.agreement.charts import PALETTE

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 40, 56
MAX_POINTS = 600  # a curve of 10,000 steps is drawn through at most this many points
PNG_SCALE = 2
TEXT_SIZE, TITLE_SIZE = 11, 13
GRID, AXIS, TEXT, TARGET = "#d0d7de", "#57606a", "#1f2328", "#6e7781"
DASH = (6, 4)


@dataclass(frozen=True)
class Line:
    name: str
    colour: str
    dashed: bool
    points: list[tuple[float, float]]


@dataclass(frozen=True)
class RecallChart:
    title: str
    summary: str
    lines: list[Line]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    target_y: float | None  # the 95% recall line; None draws none (a curve of found so far)


def recall_chart(
    curves: Sequence[tuple[str, Sequence[float]]],
    *,
    relevant: int,
    title: str,
    summary: str,
    target: bool = True,
) -> RecallChart:
    """The geometry: each (name, found(k) for k = 0 … N) curve as a line, first solid, then
    dashed; ticks at quarters of N and of R."""
    n = max(len(found) - 1 for _, found in curves)
    lines = [
        Line(
            name=name,
            colour=PALETTE[i % len(PALETTE)],
            dashed=i > 0,
            points=[(_x(k, n), _y(found[k], relevant)) for k in _sampled(len(found))],
        )
        for i, (name, found) in enumerate(curves)
    ]
    quarters = (0.0, 0.25, 0.5, 0.75, 1.0)
    return RecallChart(
        title=title,
        summary=summary,
        lines=lines,
        x_ticks=[(_x(q * n, n), f"{round(q * n):,}") for q in quarters],
        y_ticks=[(_y(q * relevant, relevant), f"{q:.0%}") for q in quarters],
        target_y=_y(0.95 * relevant, relevant) if target else None,
    )


def _sampled(length: int) -> list[int]:
    if length <= MAX_POINTS:
        return list(range(length))
    step = (length - 1) / (MAX_POINTS - 1)
    return sorted({round(i * step) for i in range(MAX_POINTS)})


def _x(k: float, n: int) -> float:
    return round(LEFT + (k / n if n else 0.0) * (WIDTH - LEFT - RIGHT), 1)


def _y(found: float, relevant: int) -> float:
    share = found / relevant if relevant else 0.0
    return round(HEIGHT - BOTTOM - share * (HEIGHT - TOP - BOTTOM), 1)


# --- SVG --------------------------------------------------------------------------------------
def recall_svg(chart: RecallChart) -> bytes:
    """The chart as a standalone SVG document."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" role="img" '
        f'aria-label="{escape(chart.summary)}">',
        f"<title>{escape(chart.title)}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="{TOP - 18}" font-size="{TITLE_SIZE}" font-weight="bold" '
        f'fill="{TEXT}">{escape(chart.title)}</text>',
        *_svg_axes(chart),
    ]
    if chart.target_y is not None:
        parts += [
            f'<line x1="{LEFT}" y1="{chart.target_y}" x2="{WIDTH - RIGHT}" '
            f'y2="{chart.target_y}" stroke="{TARGET}" stroke-dasharray="2 3"/>',
            f'<text x="{LEFT + 6}" y="{chart.target_y - 4}" font-size="{TEXT_SIZE}" '
            f'fill="{TEXT}">95% recall</text>',
        ]
    for line in chart.lines:
        path = " ".join(f"{x:g},{y:g}" for x, y in line.points)
        dash = f' stroke-dasharray="{DASH[0]} {DASH[1]}"' if line.dashed else ""
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{line.colour}" stroke-width="2"'
            f"{dash}><title>{escape(line.name)}</title></polyline>"
        )
    parts += [*_svg_legend(chart), "</svg>"]
    return "".join(parts).encode("utf-8")


def _svg_axes(chart: RecallChart) -> list[str]:
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts = []
    for y, label in chart.y_ticks:
        parts.append(
            f'<line x1="{LEFT}" y1="{y}" x2="{right}" y2="{y}" stroke="{GRID}"/>'
            f'<text x="{LEFT - 6}" y="{y + 4}" font-size="{TEXT_SIZE}" text-anchor="end" '
            f'fill="{TEXT}">{label}</text>'
        )
    for x, label in chart.x_ticks:
        parts.append(
            f'<line x1="{x}" y1="{bottom}" x2="{x}" y2="{bottom + 5}" stroke="{AXIS}"/>'
            f'<text x="{x}" y="{bottom + 18}" font-size="{TEXT_SIZE}" text-anchor="middle" '
            f'fill="{TEXT}">{label}</text>'
        )
    parts.append(
        f'<path d="M{LEFT},{TOP} V{bottom} H{right}" fill="none" stroke="{AXIS}"/>'
        f'<text x="{(LEFT + right) / 2}" y="{HEIGHT - 12}" font-size="{TEXT_SIZE}" '
        f'text-anchor="middle" fill="{TEXT}">issues screened</text>'
        f'<text x="16" y="{(TOP + bottom) / 2}" font-size="{TEXT_SIZE}" text-anchor="middle" '
        f'fill="{TEXT}" transform="rotate(-90 16 {(TOP + bottom) / 2})">'
        "relevant issues found (recall)</text>"
    )
    return parts


def _svg_legend(chart: RecallChart) -> list[str]:
    parts = []
    for i, line in enumerate(chart.lines):
        x, y = _legend_position(i, len(chart.lines))
        dash = f' stroke-dasharray="{DASH[0]} {DASH[1]}"' if line.dashed else ""
        parts.append(
            f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{line.colour}" '
            f'stroke-width="2"{dash}/>'
            f'<text x="{x + 30}" y="{y + 4}" font-size="{TEXT_SIZE}" fill="{TEXT}">'
            f"{escape(line.name)}</text>"
        )
    return parts


def _legend_position(i: int, count: int) -> tuple[float, float]:
    """Bottom right of the plot, where a recall curve leaves room (it rises to the top left)."""
    return WIDTH - RIGHT - 220, HEIGHT - BOTTOM - 20 - 16 * (count - 1 - i)


# --- PNG --------------------------------------------------------------------------------------
def recall_png(chart: RecallChart) -> bytes:
    """The chart of `recall_svg` as a PNG at twice its size."""
    s = PNG_SCALE
    image = Image.new("RGB", (WIDTH * s, HEIGHT * s), "white")
    draw = ImageDraw.Draw(image)
    font, bold = _font(TEXT_SIZE), _font(TITLE_SIZE)
    draw.text((LEFT * s, (TOP - 30) * s), chart.title, fill=TEXT, font=bold)
    _png_axes(image, draw, chart, font)
    if chart.target_y is not None:
        target = chart.target_y
        _dashed(draw, [(LEFT, target), (WIDTH - RIGHT, target)], TARGET, 1, (2, 3))
        target_label = ((LEFT + 6) * s, (target - 4) * s)
        draw.text(target_label, "95% recall", fill=TEXT, font=font, anchor="ls")
    for i, line in enumerate(chart.lines):
        if line.dashed:
            _dashed(draw, line.points, line.colour, 2, DASH)
        else:
            draw.line([(x * s, y * s) for x, y in line.points], fill=line.colour, width=2 * s)
        x, y = _legend_position(i, len(chart.lines))
        _dashed(draw, [(x, y), (x + 24, y)], line.colour, 2, DASH if line.dashed else None)
        draw.text(((x + 30) * s, y * s), line.name, fill=TEXT, font=font, anchor="lm")
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _png_axes(
    image: Image.Image, draw: ImageDraw.ImageDraw, chart: RecallChart, font: _Font
) -> None:
    s, bottom, right = PNG_SCALE, HEIGHT - BOTTOM, WIDTH - RIGHT
    for y, label in chart.y_ticks:
        draw.line([(LEFT * s, y * s), (right * s, y * s)], fill=GRID, width=s)
        draw.text(((LEFT - 6) * s, y * s), label, fill=TEXT, font=font, anchor="rm")
    for x, label in chart.x_ticks:
        draw.line([(x * s, bottom * s), (x * s, (bottom + 5) * s)], fill=AXIS, width=s)
        draw.text((x * s, (bottom + 8) * s), label, fill=TEXT, font=font, anchor="mt")
    corner = [(LEFT * s, TOP * s), (LEFT * s, bottom * s), (right * s, bottom * s)]
    draw.line(corner, fill=AXIS, width=s)
    middle = ((LEFT + right) / 2 * s, (HEIGHT - 12) * s)
    draw.text(middle, "issues screened", fill=TEXT, font=font, anchor="ms")
    _vertical_text(
        image, draw, (16 * s, (TOP + bottom) / 2 * s), "relevant issues found (recall)", font
    )


def _vertical_text(
    image: Image.Image,
    draw: ImageDraw.ImageDraw,
    centre: tuple[float, float],
    text: str,
    font: _Font,
) -> None:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    label = Image.new("RGBA", (int(right - left) + 4, int(bottom - top) + 4), (255, 255, 255, 0))
    ImageDraw.Draw(label).text((2 - left, 2 - top), text, fill=TEXT, font=font)
    rotated = label.rotate(90, expand=True)
    at = (int(centre[0] - rotated.width / 2), int(centre[1] - rotated.height / 2))
    image.paste(rotated, at, rotated)


def _dashed(
    draw: ImageDraw.ImageDraw,
    points: Sequence[tuple[float, float]],
    colour: str,
    width: int,
    dash: tuple[int, int] | None,
) -> None:
    """A polyline (in SVG units) drawn at PNG scale, dashed `dash` = (on, off) when given."""
    s = PNG_SCALE
    if dash is None:
        draw.line([(x * s, y * s) for x, y in points], fill=colour, width=width * s)
        return
    on, period, travelled = dash[0], dash[0] + dash[1], 0.0
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        start = 0.0
        while start < length:
            phase = (travelled + start) % period
            step = min((on - phase) if phase < on else (period - phase), length - start)
            if phase < on:
                a, b = start / length, (start + step) / length
                segment = [(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t) for t in (a, b)]
                draw.line([(x * s, y * s) for x, y in segment], fill=colour, width=width * s)
            start += step
        travelled += length


_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


def _font(size: float) -> _Font:
    return ImageFont.load_default(size=size * PNG_SCALE)
