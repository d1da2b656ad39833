# ruff: noqa: RUF001, RUF002, RUF003 -- α and × are the notation of the statistics.
"""Drift within a round: headline α over consecutive windows of pairable items (pure; no
Django; the database reads are `drift_service.py`).

- An item enters the timeline when it becomes pairable: at its second submitted annotation.
  Items are ordered by that time (then by id).
- The timeline is cut into consecutive windows of `size` items (default 10, at least 5); a
  last remainder shorter than `size` joins the previous window, so every window holds at least
  `size` items — except a round with fewer than `size` (but at least 5) pairable items, which
  is one window. Fewer than 5 pairable items: no window.
- Per window and facet: the facet's headline (nominal α; MASI α for a multi-choice facet, as
  `summary.facet_coefficients`), its delete-one-unit jackknife 95% CI and pairable n.
- Each window lists the codebook versions its items' submitted annotations were made under
  (`Annotation.codebook_version`); it is marked changed when that set differs from the previous
  window's or holds more than one version.
- The prompt: a facet whose latest window falls below the study's threshold on the LOWER BOUND
  of its 95% CI (the rule calibration uses, `threshold.py`); a window whose α has no interval
  is judged on its point estimate; an undefined α is not judged.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from . import charts, stats
from .stats import RatingTable
from .threshold import bound_text, judge

DEFAULT_WINDOW = 10
MIN_WINDOW = 5
CHART_MARKS = 60  # windows drawn with a mark each; beyond, the line alone
CHART_TICKS = 10  # windows named on the axis beyond CHART_MARKS
RULE = (
    "a facet falls below the threshold in a window when the lower bound of its headline's 95% "
    "interval is below it (the point estimate when the interval is undefined); an undefined α "
    "is not judged"
)


@dataclass(frozen=True)
class Entry:
    """One pairable item on the timeline."""

    item: int
    at: datetime  # its second submitted annotation
    versions: frozenset[int]  # codebook versions of its submitted annotations


@dataclass(frozen=True)
class FacetRows:
    """What drift needs of one facet's units × raters table (`labels.FacetTable`)."""

    key: str
    name: str
    kind: str
    table: RatingTable
    items: Sequence[int]  # item id of each row


def timeline(submissions: Mapping[int, Sequence[tuple[datetime, int]]]) -> list[Entry]:
    """item → [(submitted_at, codebook version id)] of its submitted annotations → the
    pairable items in the order they became pairable."""
    out = []
    for item, rows in submissions.items():
        if len(rows) < 2:
            continue
        times = sorted(at for at, _ in rows)
        out.append(Entry(item=item, at=times[1], versions=frozenset(v for _, v in rows)))
    out.sort(key=lambda e: (e.at, e.item))
    return out


def window_bounds(n: int, size: int) -> list[tuple[int, int]]:
    """[start, stop) of each window over `n` items."""
    if size < MIN_WINDOW:
        raise ValueError(f"a window holds at least {MIN_WINDOW} items")
    if n < MIN_WINDOW:
        return []
    bounds = [(start, min(start + size, n)) for start in range(0, n, size)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < size:
        last = bounds.pop()
        bounds[-1] = (bounds[-1][0], last[1])
    return bounds


def headline(table: RatingTable) -> tuple[str, stats.AgreementResult]:
    if table.multilabel:
        return "krippendorff_alpha_masi", stats.krippendorff_alpha(table, distance="masi")
    return "krippendorff_alpha", stats.krippendorff_alpha(table)


def rows_of(table: RatingTable, keep: Sequence[int]) -> RatingTable:
    return replace(table, codes=table.codes[np.asarray(keep, dtype=np.int64)])


def drift(
    entries: Sequence[Entry],
    facets: Sequence[FacetRows],
    *,
    size: int,
    threshold: float,
    version_names: Mapping[int, str],
    current_version: int,
) -> dict[str, Any]:
    """The windows, each facet's headline per window and the prompt (JSON-ready)."""
    figures = drift_figures(
        entries, facets, size=size, version_names=version_names, current_version=current_version
    )
    return judged(figures, threshold)


def drift_figures(
    entries: Sequence[Entry],
    facets: Sequence[FacetRows],
    *,
    size: int,
    version_names: Mapping[int, str],
    current_version: int,
) -> dict[str, Any]:
    """The windows and each facet's headline per window, not yet judged against a threshold
    (`judged` does that): what an agreement run stores, since the threshold may change after."""
    bounds = window_bounds(len(entries), size)
    windows: list[dict[str, Any]] = []
    previous: frozenset[int] | None = None
    for number, (start, stop) in enumerate(bounds, start=1):
        chunk = entries[start:stop]
        versions = frozenset().union(*(e.versions for e in chunk))
        changed = len(versions) > 1 or (previous is not None and versions != previous)
        windows.append(
            {
                "number": number,
                "first": start + 1,
                "last": stop,
                "items": stop - start,
                "start": chunk[0].at.isoformat(),
                "end": chunk[-1].at.isoformat(),
                "versions": [_name(v, version_names) for v in sorted(versions)],
                "version_changed": changed,
                "other_version": [
                    _name(v, version_names) for v in sorted(versions - {current_version})
                ],
            }
        )
        previous = versions
    return {
        "window": size,
        "min_window": MIN_WINDOW,
        "version": _name(current_version, version_names),
        "pairable_items": len(entries),
        "windows": windows,
        "facets": [_facet(f, entries, bounds) for f in facets],
    }


def judged(figures: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    """`drift_figures` judged against the threshold: each window below it or not, in words,
    and the prompt."""
    # Windows of a few items repeat the same figures (a thousand windows hold a few hundred
    # distinct ones): each is judged once.
    said: dict[tuple[Any, ...], tuple[bool | None, str]] = {}
    facets = [
        {
            **{k: v for k, v in facet.items() if k != "windows"},
            "windows": [_judged_window(w, threshold, said) for w in facet["windows"]],
        }
        for facet in figures["facets"]
    ]
    return {
        "window": figures["window"],
        "min_window": figures["min_window"],
        "threshold": threshold,
        "rule": RULE,
        "version": figures["version"],
        "pairable_items": figures["pairable_items"],
        "windows": figures["windows"],
        "facets": facets,
        "prompt": _prompt(facets, threshold),
    }


def _facet(
    facet: FacetRows, entries: Sequence[Entry], bounds: Sequence[tuple[int, int]]
) -> dict[str, Any]:
    row_of: dict[Hashable, int] = {int(item): r for r, item in enumerate(facet.items)}
    name = "krippendorff_alpha_masi" if facet.table.multilabel else "krippendorff_alpha"
    out = []
    for number, (start, stop) in enumerate(bounds, start=1):
        keep = [row_of[e.item] for e in entries[start:stop] if e.item in row_of]
        _, result = headline(rows_of(facet.table, keep))
        # The fields `result.to_dict()` would give (JSON-ready: non-finite floats None), read
        # alone: converting the whole result costs more than computing it on a few items.
        out.append(
            {
                "number": number,
                "value": _finite(result.value),
                "ci": [_finite(x) for x in result.ci] if result.ci is not None else None,
                "n": int(result.n_pairable_units),
                "undefined_reason": result.undefined_reason,
                "se_note": result.se_note,  # why no interval, for the judgement
            }
        )
    return {
        "key": facet.key,
        "name": facet.name,
        "kind": facet.kind,
        "headline": name,
        "windows": out,
    }


def _judged_window(
    window: Mapping[str, Any],
    threshold: float,
    said: dict[tuple[Any, ...], tuple[bool | None, str]],
) -> dict[str, Any]:
    ci = window["ci"]
    key = (window["value"], *(ci or ()), window["undefined_reason"], window.get("se_note"))
    found = said.get(key)
    if found is None:
        coefficient = {
            "value": window["value"],
            "ci": ci,
            "undefined_reason": window["undefined_reason"],
            "se_note": window.get("se_note"),
        }
        found = said[key] = (_below(coefficient, threshold), judge(coefficient, threshold).text)
    return {
        "number": window["number"],
        "value": window["value"],
        "ci": ci,
        "n": window["n"],
        "undefined_reason": window["undefined_reason"],
        "below": found[0],
        "judgement": found[1],
    }


def _finite(x: Any) -> Any:
    if hasattr(x, "item"):  # a numpy scalar
        x = x.item()
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _below(coefficient: Mapping[str, Any], threshold: float) -> bool | None:
    value, ci = coefficient["value"], coefficient["ci"]
    if value is None:
        return None
    return bool((ci[0] if ci else value) < threshold)


def _prompt(facets: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any] | None:
    below = []
    for facet in facets:
        if not facet["windows"] or not facet["windows"][-1]["below"]:
            continue
        last = facet["windows"][-1]
        ci = last["ci"]
        figures = f"α = {last['value']:.3f}"
        if ci:
            figures += f", 95% CI {bound_text(ci[0], threshold)} to {ci[1]:.2f}"
        figures += f", n = {last['n']}"
        below.append(
            {
                "key": facet["key"],
                "name": facet["name"],
                "window": last["number"],
                "value": last["value"],
                "ci": ci,
                "n": last["n"],
                "figures": figures,
            }
        )
    if not below:
        return None
    names = ", ".join(f["name"] for f in below)
    text = (
        f"Agreement in the latest window fell below the threshold on {names}: "
        "consider a recalibration round"
    )
    return {"text": text, "threshold": threshold, "facets": below}


def _name(version: int, names: Mapping[int, str]) -> str:
    return names.get(version, f"#{version}")


def facet_chart(facet: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    """The headline per window as `charts.trend` geometry (one line; x = window number).
    Beyond CHART_MARKS windows the line is drawn without a mark per window (they would
    overlap: a round of 10,000 items has a thousand windows of 10 across 528 units) and about
    ten windows are named on the axis, the last among them."""
    points = [(w["number"], {facet["key"]: w["value"]}) for w in facet["windows"]]
    if len(points) <= CHART_MARKS:
        return charts.trend(points, [facet["key"]], threshold)
    chart = charts.trend(points, [facet["key"]], threshold, marks=False)
    axis = chart["rounds"]
    step = math.ceil(len(axis) / CHART_TICKS)
    named = list(range(0, len(axis), step))
    if len(axis) - 1 - named[-1] < step / 2:
        named.pop()
    chart["rounds"] = [axis[i] for i in [*named, len(axis) - 1]]
    return chart
