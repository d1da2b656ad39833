# ruff: noqa: RUF001, RUF002, RUF003 -- α is the notation of the statistics.
"""Whether a facet meets the study's α threshold, judged on the interval (pure; no Django).

A point estimate on a few units says little: α = 0.872 on 9 items has a 95% interval of
0.619–1.000, so "meets α ≥ 0.8" would claim what the data do not show. A facet meets the
threshold when the LOWER bound of its headline coefficient's 95% interval (the stored `ci`,
a delete-one-unit jackknife; `_uncertainty.jackknife`) reaches it. A facet whose headline is
defined but whose interval is not (a left-out unit leaves no variation) does not meet it; a
facet whose headline is undefined is not judged. The report page, `mark_calibration_passed`
and the calibration-pass API all decide through `judge` and `calibration_verdict`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RULE = (
    "a facet meets the threshold when the lower bound of its headline coefficient's 95% "
    "interval reaches it; a facet whose interval is undefined does not meet it"
)


@dataclass(frozen=True)
class Judgement:
    """One facet against the threshold. `meets` is None when the headline is undefined."""

    facet: str
    value: float | None
    low: float | None
    high: float | None
    threshold: float
    meets: bool | None
    text: str


def judge(coefficient: Mapping[str, Any], threshold: float, facet: str = "") -> Judgement:
    """Judge one stored coefficient (`value`, `ci`, `undefined_reason`, `se_note`)."""
    value, ci = coefficient.get("value"), coefficient.get("ci")
    low, high = (ci[0], ci[1]) if ci else (None, None)
    t = _number(threshold)
    if value is None:
        reason = coefficient.get("undefined_reason") or "no value"
        return Judgement(facet, None, None, None, threshold, None, f"not judged: {reason}")
    if low is None:
        why = coefficient.get("se_note") or "no interval"
        text = f"does not meet α ≥ {t}: no 95% CI to judge ({why})"
        return Judgement(facet, value, None, None, threshold, False, text)
    shown = bound_text(low, threshold)
    if low >= threshold:
        text = f"meets α ≥ {t}: lower bound {shown} of the 95% CI"
        return Judgement(facet, value, low, high, threshold, True, text)
    text = f"does not meet α ≥ {t}: lower bound {shown} < {t}"
    return Judgement(facet, value, low, high, threshold, False, text)


def bound_text(x: float, threshold: float) -> str:
    """`x` to 2 decimals, or more when 2 would hide which side of the threshold it is on."""
    for digits in range(2, 7):
        text = f"{x:.{digits}f}"
        if (float(text) >= threshold) == (x >= threshold):
            return text
    return repr(x)


@dataclass(frozen=True)
class Verdict:
    """Every facet's judgement, and whether the run's round can pass calibration."""

    threshold: float
    judgements: list[Judgement]
    passes: bool
    lowest_low: float | None  # the lowest lower bound among the judged facets
    lowest_value: float | None  # the lowest headline value among the judged facets
    undefined: list[str]  # facets not judged (headline undefined)
    reason: str  # why not, or what passed
    rule: str = RULE


def calibration_verdict(facets: Iterable[Mapping[str, Any]], threshold: float) -> Verdict:
    """A round passes when every facet with a defined headline meets the threshold on its
    interval's lower bound, and at least one facet is defined."""
    judgements = [
        judge(f["coefficients"][f["headline"]], threshold, facet=f["key"]) for f in facets
    ]
    judged = [j for j in judgements if j.meets is not None]
    undefined = [j.facet for j in judgements if j.meets is None]
    lows = [j.low for j in judged if j.low is not None]
    lowest_low = min(lows) if len(lows) == len(judged) and lows else None
    lowest_value = min((j.value for j in judged if j.value is not None), default=None)
    failing = [j for j in judged if not j.meets]
    if not judged:
        reason = f"α is undefined for every facet ({', '.join(undefined)})"
    elif failing:
        reason = "; ".join(f"{j.facet} {j.text}" for j in failing)
    else:
        reason = f"every facet meets α ≥ {_number(threshold)} on its 95% CI's lower bound"
    passes = bool(judged) and not failing
    return Verdict(threshold, judgements, passes, lowest_low, lowest_value, undefined, reason)


def _number(x: float) -> str:
    return f"{x:g}"
