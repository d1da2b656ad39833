"""A flow (Sankey/alluvial) chart: its geometry, and that geometry as SVG (pure: no Django).

Columns are facets (symptom → root cause → fix pattern); a node's height is the issues through
it; a link's width the issues with both labels. `flow_layout` computes the shapes once;
`flow_svg` draws them for the page (every node a link to its issues, the `href` the caller
gives) and for papers, and `paper.flow_png` draws the same shapes as a PNG. Text is escaped;
only presentation attributes are used, no inline style, so a strict Content-Security-Policy
holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, MIN_HEIGHT, NODE_W, GAP, PAD, ROW = 900, 520, 14, 6, 24, 18
LABEL_ROOM = 190  # the first column's labels, left of its nodes, and the last's, right of them
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
NODE_FILL, LINK_GREY, TEXT_SIZE = "#3b4a5a", "#999999", 11

Link = tuple[int, str, str, int]  # (column index of the source, source code, target code, weight)


@dataclass(frozen=True)
class FlowNode:
    column: int
    code: str
    x: float
    y: float
    height: float
    total: int


@dataclass(frozen=True)
class FlowBand:
    """A link as a band: a cubic curve from (x0, y0) to (x1, y1), `width` thick."""

    source: str
    target: str
    weight: int
    x0: float
    y0: float
    x1: float
    y1: float
    width: float
    colour: str


@dataclass(frozen=True)
class FlowLayout:
    width: int
    height: int
    nodes: list[FlowNode]
    bands: list[FlowBand]


def flow_layout(n_columns: int, links: Sequence[Link]) -> FlowLayout:
    """Nodes stacked per column, largest first; bands ordered so they cross least."""
    totals = _totals(n_columns, links)
    most = max((len(t) for t in totals), default=0)
    height = max(MIN_HEIGHT, 2 * PAD + most * ROW)
    scale = _scale(totals, height)
    placed = _place(totals, scale, n_columns)
    bands = _bands(links, placed, scale)
    nodes = [
        FlowNode(i, code, x, y, h, totals[i][code])
        for i, column in enumerate(placed)
        for code, (x, y, h, _, _) in column.items()
    ]
    return FlowLayout(WIDTH, height, nodes, bands)


def flow_svg(
    columns: Sequence[str],
    links: Sequence[Link],
    *,
    href: Callable[[str, str], str] | None = None,
    names: Callable[[str, str], str] = lambda facet, code: code,
) -> str:
    """The chart as an SVG element; `href` makes each node a link (none in a paper's file)."""
    if not links:
        return '<p class="empty">No decided issue has labels in these facets yet.</p>'
    layout = flow_layout(len(columns), links)
    parts = [
        f'<svg class="flow" viewBox="0 0 {layout.width} {layout.height}" role="img" '
        f'aria-label="{escape(" → ".join(columns))} flow" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="sans-serif">'
    ]
    parts += [_band_svg(b) for b in layout.bands]
    parts += [_node_svg(n, columns, href, names) for n in layout.nodes]
    parts.append("</svg>")
    return "".join(parts)


def _band_svg(b: FlowBand) -> str:
    mid = (b.x0 + b.x1) / 2
    return (
        f'<path d="M{b.x0:.1f},{b.y0:.1f} C{mid:.1f},{b.y0:.1f} {mid:.1f},{b.y1:.1f} '
        f'{b.x1:.1f},{b.y1:.1f}" fill="none" stroke="{b.colour}" stroke-opacity="0.35" '
        f'stroke-width="{b.width:.1f}"><title>{escape(b.source)} → {escape(b.target)}: '
        f"{b.weight}</title></path>"
    )


def _node_svg(
    n: FlowNode,
    columns: Sequence[str],
    href: Callable[[str, str], str] | None,
    names: Callable[[str, str], str],
) -> str:
    label = escape(names(columns[n.column], n.code))
    x, anchor = label_position(n)
    shape = (
        f'<rect x="{n.x:.1f}" y="{n.y:.1f}" width="{NODE_W}" height="{n.height:.1f}" '
        f'fill="{NODE_FILL}"><title>{label}: {n.total}</title></rect>'
        f'<text x="{x:.1f}" y="{n.y + n.height / 2 + 4:.1f}" text-anchor="{anchor}" '
        f'font-size="{TEXT_SIZE}" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
        f"{label}</text>"
    )
    if href is None:
        return shape
    return f'<a href="{escape(href(columns[n.column], n.code))}">{shape}</a>'


def label_position(n: FlowNode) -> tuple[float, str]:
    """Where a node's label goes: left of the first column's nodes, right of the others'."""
    if n.column == 0:
        return n.x - 4, "end"
    return n.x + NODE_W + 4, "start"


def _totals(n: int, links: Sequence[Link]) -> list[dict[str, int]]:
    """Per column, code → the larger of the weights into and out of the node (a middle node
    carries its issues once, not once per side)."""
    into: list[dict[str, int]] = [{} for _ in range(n)]
    out: list[dict[str, int]] = [{} for _ in range(n)]
    for i, a, b, w in links:
        out[i][a] = out[i].get(a, 0) + w
        into[i + 1][b] = into[i + 1].get(b, 0) + w
    return [
        {c: max(into[i].get(c, 0), out[i].get(c, 0)) for c in {*into[i], *out[i]}} for i in range(n)
    ]


def _scale(totals: list[dict[str, int]], height: int) -> float:
    worst = max((sum(t.values()), len(t)) for t in totals if t)  # the column needing the most room
    return (height - 2 * PAD - GAP * max(worst[1] - 1, 0)) / max(worst[0], 1)


def _place(totals: list[dict[str, int]], scale: float, n: int) -> list[dict[str, list[float]]]:
    """Per column, code → [x, y, height, out offset, in offset]; largest nodes first."""
    step = (WIDTH - 2 * PAD - NODE_W - 2 * LABEL_ROOM) / max(n - 1, 1)
    out = []
    for i, column in enumerate(totals):
        y, placed = float(PAD), {}
        for code, total in sorted(column.items(), key=lambda kv: (-kv[1], kv[0])):
            height = max(total * scale, 1.0)
            placed[code] = [PAD + LABEL_ROOM + i * step, y, height, 0.0, 0.0]
            y += height + GAP
        out.append(placed)
    return out


def _bands(
    links: Sequence[Link], nodes: list[dict[str, list[float]]], scale: float
) -> list[FlowBand]:
    out = []
    order = sorted(
        links,
        key=lambda link: (link[0], nodes[link[0]][link[1]][1], nodes[link[0] + 1][link[2]][1]),
    )
    first = sorted(nodes[0]) if nodes else []
    for i, a, b, w in order:
        source, target = nodes[i][a], nodes[i + 1][b]
        width = max(w * scale, 1.0)
        y0 = source[1] + source[3] + width / 2
        y1 = target[1] + target[4] + width / 2
        source[3] += width
        target[4] += width
        colour = PALETTE[first.index(a) % len(PALETTE)] if i == 0 else LINK_GREY
        out.append(FlowBand(a, b, w, source[0] + NODE_W, y0, target[0], y1, width, colour))
    return out
