"""A flow (Sankey/alluvial) chart as server-rendered SVG (pure: no Django, no script).

Columns are facets (symptom → root cause → fix pattern); a node's height is the issues through
it; a link's width the issues with both labels. Every node is a link to its issues (the `href`
the caller gives). Text is escaped; only presentation attributes are used, no inline style, so
a strict Content-Security-Policy holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

WIDTH, HEIGHT, NODE_W, GAP, PAD = 900, 520, 14, 6, 24
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


def flow_svg(
    columns: Sequence[str],
    links: Sequence[tuple[int, str, str, int]],
    *,
    href: Callable[[str, str], str],
    names: Callable[[str, str], str] = lambda facet, code: code,
) -> str:
    """`links`: (column index of the source, source code, target code, weight)."""
    if not links:
        return '<p class="empty">No decided issue has labels in these facets yet.</p>'
    totals = _totals(len(columns), links)
    scale = _scale(totals)
    nodes = _layout(totals, scale, len(columns))
    parts = [
        f'<svg class="flow" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(" → ".join(columns))} flow" xmlns="http://www.w3.org/2000/svg">'
    ]
    parts += _links(links, nodes, scale)
    parts += _nodes(columns, nodes, href, names)
    parts.append("</svg>")
    return "".join(parts)


def _totals(n: int, links: Sequence[tuple[int, str, str, int]]) -> list[dict[str, int]]:
    totals: list[dict[str, int]] = [{} for _ in range(n)]
    for i, a, b, w in links:
        totals[i][a] = totals[i].get(a, 0) + w
        totals[i + 1][b] = totals[i + 1].get(b, 0) + w
    return totals


def _scale(totals: list[dict[str, int]]) -> float:
    worst = max((sum(t.values()), len(t)) for t in totals if t)  # the column needing the most room
    return (HEIGHT - 2 * PAD - GAP * max(worst[1] - 1, 0)) / max(worst[0], 1)


def _layout(totals: list[dict[str, int]], scale: float, n: int) -> list[dict[str, list[float]]]:
    """Per column, code → [x, y, height, out offset, in offset]; largest nodes first."""
    step = (WIDTH - 2 * PAD - NODE_W - 160) / max(n - 1, 1)
    out = []
    for i, column in enumerate(totals):
        y, placed = float(PAD), {}
        for code, total in sorted(column.items(), key=lambda kv: (-kv[1], kv[0])):
            height = max(total * scale, 1.0)
            placed[code] = [PAD + i * step, y, height, 0.0, 0.0]
            y += height + GAP
        out.append(placed)
    return out


def _links(
    links: Sequence[tuple[int, str, str, int]], nodes: list[dict[str, list[float]]], scale: float
) -> list[str]:
    parts = []
    order = sorted(
        links,
        key=lambda link: (link[0], nodes[link[0]][link[1]][1], nodes[link[0] + 1][link[2]][1]),
    )
    for i, a, b, w in order:
        source, target = nodes[i][a], nodes[i + 1][b]
        width = max(w * scale, 1.0)
        y0 = source[1] + source[3] + width / 2
        y1 = target[1] + target[4] + width / 2
        source[3] += width
        target[4] += width
        x0, x1 = source[0] + NODE_W, target[0]
        mid = (x0 + x1) / 2
        colour = PALETTE[sorted(nodes[0]).index(a) % len(PALETTE)] if i == 0 else "#999999"
        parts.append(
            f'<path d="M{x0:.1f},{y0:.1f} C{mid:.1f},{y0:.1f} {mid:.1f},{y1:.1f} {x1:.1f},{y1:.1f}"'
            f' fill="none" stroke="{colour}" stroke-opacity="0.35" stroke-width="{width:.1f}">'
            f"<title>{escape(a)} → {escape(b)}: {w}</title></path>"
        )
    return parts


def _nodes(
    columns: Sequence[str],
    nodes: list[dict[str, list[float]]],
    href: Callable[[str, str], str],
    names: Callable[[str, str], str],
) -> list[str]:
    parts = []
    for i, placed in enumerate(nodes):
        for code, (x, y, height, _, _) in placed.items():
            label = escape(names(columns[i], code))
            parts.append(
                f'<a href="{escape(href(columns[i], code))}">'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{height:.1f}" '
                f'fill="#3b4a5a"><title>{label}</title></rect>'
                f'<text x="{x + NODE_W + 4:.1f}" y="{y + height / 2 + 4:.1f}" font-size="11">'
                f"{label}</text></a>"
            )
    return parts
