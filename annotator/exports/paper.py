"""Tables and charts for papers (pure: no Django): DataFrame → CSV or LaTeX bytes, chart data →
SVG or PNG bytes.

Tables: `table_frame` turns an analysis `Table` into a DataFrame; `csv_bytes` writes it as
UTF-8 CSV (one header row, no index); `latex_bytes` as a booktabs `table` environment
(`\\toprule`, `\\midrule`, `\\bottomrule`; the preamble needs `\\usepackage{booktabs}`), text
escaped for LaTeX, numbers right-aligned, a tree's names indented with `\\quad` per level; a
table of more than WIDE_COLUMNS columns is scaled to the line width (`\\resizebox`, from
`\\usepackage{graphicx}`).

Charts: `bar_svg`/`bar_png` draw horizontal bars (a share per category); `flow_png` draws the
shapes of `flow.flow_layout` that `flow.flow_svg` draws as SVG. PNGs are drawn at twice the
SVG's size with the font Pillow ships, so they need no system font.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd
from PIL import Image, ImageDraw, ImageFont

from .analysis import Table
from .flow import NODE_FILL, NODE_W, TEXT_SIZE, FlowLayout, flow_layout, label_position

LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
PNG_SCALE = 2
WIDE_COLUMNS = 10


def table_frame(table: Table) -> pd.DataFrame:
    """The table's values under its header (numbers stay numbers; a missing share is NaN)."""
    return pd.DataFrame(table.values(), columns=table.header)


def table_indent(table: Table) -> list[int]:
    """Per row, the indent of its indented cell (0 when none is)."""
    return [max((c.indent for c in row), default=0) for row in table.rows]


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in text)


def _latex_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.1f}"
    return latex_escape(str(value))


def latex_bytes(
    frame: pd.DataFrame,
    *,
    caption: str,
    label: str,
    indent: Sequence[int] = (),
    indent_column: str | None = None,
) -> bytes:
    """A booktabs table; row i's `indent_column` cell is indented `indent[i]` quads."""
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{re.sub(r'[^A-Za-z0-9:.-]', '-', label)}}}",
        *([r"\resizebox{\linewidth}{!}{%"] if len(frame.columns) > WIDE_COLUMNS else []),
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(str(c)) for c in frame.columns) + r" \\",
        r"\midrule",
    ]
    for i, row in enumerate(frame.itertuples(index=False)):
        cells = [_latex_cell(v) for v in row]
        if indent_column is not None and i < len(indent) and indent[i]:
            j = list(frame.columns).index(indent_column)
            cells[j] = r"\quad" * indent[i] + " " + cells[j]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += ["}"] if len(frame.columns) > WIDE_COLUMNS else []
    lines += [r"\end{table}", ""]
    return "\n".join(lines).encode("utf-8")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float  # a share in percent
    indent: int = 0


BAR_ROW, BAR_LABEL, BAR_MAX, BAR_PAD, BAR_WIDTH = 20, 300, 480, 24, 900
BAR_FILL = "#4e79a7"


def _bar_geometry(bars: Sequence[Bar]) -> tuple[int, float]:
    height = 2 * BAR_PAD + BAR_ROW * (len(bars) + 1)
    top = max((b.value for b in bars), default=0.0)
    return height, (BAR_MAX / top if top else 0.0)


def bar_svg(title: str, bars: Sequence[Bar]) -> bytes:
    """Horizontal bars, one row per category, each labelled with its share."""
    height, scale = _bar_geometry(bars)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {BAR_WIDTH} {height}" '
        f'width="{BAR_WIDTH}" height="{height}" font-family="sans-serif" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{BAR_PAD}" y="{BAR_PAD}" font-size="13" font-weight="bold">{escape(title)}'
        "</text>",
    ]
    for i, bar in enumerate(bars):
        y = BAR_PAD + BAR_ROW * (i + 1)
        x = BAR_PAD + BAR_LABEL
        w = bar.value * scale
        parts.append(
            f'<text x="{BAR_PAD + 12 * bar.indent}" y="{y + 14}" font-size="{TEXT_SIZE}">'
            f"{escape(bar.label)}</text>"
            f'<rect x="{x}" y="{y + 3}" width="{w:.1f}" height="{BAR_ROW - 6}" fill="{BAR_FILL}"/>'
            f'<text x="{x + w + 4:.1f}" y="{y + 14}" font-size="{TEXT_SIZE}">{bar.value:.1f}%'
            "</text>"
        )
    parts.append("</svg>")
    return "".join(parts).encode("utf-8")


def _font(size: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size * PNG_SCALE)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def bar_png(title: str, bars: Sequence[Bar]) -> bytes:
    """The bars of `bar_svg`, as a PNG at twice its size."""
    height, scale = _bar_geometry(bars)
    s = PNG_SCALE
    image = Image.new("RGB", (BAR_WIDTH * s, height * s), "white")
    draw = ImageDraw.Draw(image)
    draw.text((BAR_PAD * s, (BAR_PAD - 12) * s), title, fill="black", font=_font(13))
    font = _font(TEXT_SIZE)
    for i, bar in enumerate(bars):
        y = BAR_PAD + BAR_ROW * (i + 1)
        x = BAR_PAD + BAR_LABEL
        w = bar.value * scale
        draw.text(
            ((BAR_PAD + 12 * bar.indent) * s, (y + 4) * s), bar.label, fill="black", font=font
        )
        if w >= 0.5:
            draw.rectangle([x * s, (y + 3) * s, (x + w) * s, (y + BAR_ROW - 3) * s], fill=BAR_FILL)
        draw.text(((x + w + 4) * s, (y + 4) * s), f"{bar.value:.1f}%", fill="black", font=font)
    return _png(image)


def _curve(
    x0: float, y0: float, x1: float, y1: float, steps: int = 24
) -> list[tuple[float, float]]:
    """Points of the cubic (x0,y0) → (x1,y1) with both control points at the middle x."""
    mid, out = (x0 + x1) / 2, []
    for k in range(steps + 1):
        t = k / steps
        u = 1 - t
        x = u**3 * x0 + 3 * u * u * t * mid + 3 * u * t * t * mid + t**3 * x1
        y = u**3 * y0 + 3 * u * u * t * y0 + 3 * u * t * t * y1 + t**3 * y1
        out.append((x, y))
    return out


def _rgba(colour: str, alpha: int) -> tuple[int, int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16), alpha)


def flow_png(
    columns: Sequence[str],
    links: Sequence[tuple[int, str, str, int]],
    *,
    names: Callable[[str, str], str] = lambda facet, code: code,
) -> bytes:
    """The flow chart of `flow.flow_svg` as a PNG at twice its size."""
    layout: FlowLayout = flow_layout(len(columns), links)
    s = PNG_SCALE
    image = Image.new("RGB", (layout.width * s, layout.height * s), "white")
    draw = ImageDraw.Draw(image, "RGBA")
    for b in layout.bands:
        centre = _curve(b.x0 * s, b.y0 * s, b.x1 * s, b.y1 * s)
        half = b.width * s / 2
        top = [(x, y - half) for x, y in centre]
        bottom = [(x, y + half) for x, y in reversed(centre)]
        draw.polygon(top + bottom, fill=_rgba(b.colour, 90))
    font = _font(TEXT_SIZE)
    for n in layout.nodes:
        draw.rectangle([n.x * s, n.y * s, (n.x + NODE_W) * s, (n.y + n.height) * s], fill=NODE_FILL)
        label = names(columns[n.column], n.code)
        x, anchor = label_position(n)
        y = (n.y + n.height / 2) * s
        draw.text(
            (x * s, y),
            label,
            fill="black",
            font=font,
            anchor="rm" if anchor == "end" else "lm",
            stroke_width=PNG_SCALE,
            stroke_fill="white",
        )
    return _png(image)
