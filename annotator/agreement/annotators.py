# ruff: noqa: RUF001, RUF002, RUF003 -- formulas are written in their own notation (α, χ², −).
"""Per-annotator reliability diagnostics for one round (pure; no Django).

For each facet and annotator: nominal α with and without the annotator (`rater_vs_others`),
agreement with the final decision, the category-usage profile beside the pooled one, the other
and unsure rates and a learning curve; for each annotator pair the marginal-homogeneity tests of
Stuart–Maxwell and Bhapkar. `annotators_service.py` builds the inputs from the database.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import numpy as np
import numpy.typing as npt

from ._diagnostics import rater_vs_others
from ._result import _jsonable
from ._table import RatingTable

WINDOW = 5  # items per learning-curve window (a shorter remainder joins the last window)
SIGNIFICANCE = 0.05
MH_NOTE = (
    "Stuart–Maxwell and Bhapkar test whether two annotators use the categories equally often "
    "(marginal homogeneity) on the items both labelled; χ² with K − 1 degrees of freedom, K the "
    "categories either of them used (categories neither used are dropped: they make the "
    "covariance singular)."
)


@dataclass(frozen=True)
class FacetInput:
    """One facet of the round: the units × raters table and, aligned with its rows, the
    decided value of each unit (a code, a frozenset of codes for a multi-choice facet, None
    where the item has no decided label in the facet), each rating's position among its
    annotator's submissions (1-based; 0 where missing) and whether it was marked unsure."""

    key: str
    name: str
    kind: str
    table: RatingTable
    decided: Sequence[Hashable | None]
    position: npt.NDArray[np.int64]
    unsure: npt.NDArray[np.bool_]
    other_labels: frozenset[Hashable] = frozenset()


@dataclass(frozen=True)
class Activity:
    """What one annotator did in the round, from the assignments."""

    rater: Hashable
    name: str
    assigned: int = 0  # assignments of the round in any state
    submitted: int = 0
    skipped: int = 0
    seconds: Sequence[float] = field(default_factory=list)  # handout → submit, per item

    def to_dict(self) -> dict[str, Any]:
        finished = self.submitted + self.skipped
        return {
            "rater": _jsonable(self.rater),
            "name": self.name,
            "assigned": self.assigned,
            "submitted": self.submitted,
            "skipped": self.skipped,
            "skip_rate": self.skipped / finished if finished else None,
            "median_seconds": float(median(self.seconds)) if self.seconds else None,
        }


def round_diagnostics(
    facets: Sequence[FacetInput], activity: Sequence[Activity], *, window: int = WINDOW
) -> dict[str, Any]:
    """The whole report: annotators' activity and, per facet, the per-annotator rows and the
    pairwise marginal-homogeneity tests."""
    names = {a.rater: a.name for a in activity}
    return {
        "annotators": [a.to_dict() for a in activity],
        "facets": [facet_diagnostics(f, names, window=window) for f in facets],
        "window": window,
        "significance": SIGNIFICANCE,
        "notes": {"marginal_homogeneity": MH_NOTE},
    }


def facet_diagnostics(
    facet: FacetInput, names: Mapping[Hashable, str], *, window: int = WINDOW
) -> dict[str, Any]:
    """One facet: α with all, a row per annotator, the pooled profile and the pair tests."""
    table = facet.table
    raters = list(table.raters)
    against = rater_vs_others(table)
    decided = decided_codes(table, facet.decided)
    rows = []
    for j, rater in enumerate(raters):
        row = {**against[j], "name": names.get(rater, str(rater))}
        row |= _rater_rates(facet, j)
        row |= decision_agreement(table.codes[:, j], decided)
        row["profile"] = usage_profile(table, [j])
        row["learning_curve"] = learning_curve(
            table.codes[:, j], decided, facet.position[:, j], window=window
        )
        rows.append(row)
    return {
        "key": facet.key,
        "name": facet.name,
        "kind": facet.kind,
        "labels": _jsonable(list(table.labels)),
        "units": table.n_units,
        "decided_units": int((decided != MISSING_DECISION).sum()),
        "alpha_all": against[0]["alpha_all"] if against else None,
        "pooled_profile": usage_profile(table, range(len(raters))),
        "annotators": rows,
        "pairs": pair_tests(table, [names.get(r, str(r)) for r in raters]),
    }


MISSING_DECISION = -1
UNKNOWN_DECISION = -2  # a decided value no annotator gave: never equal to a rating


def decided_codes(table: RatingTable, decided: Sequence[Hashable | None]) -> npt.NDArray[np.int64]:
    """The decided value of each unit as a code of the table's values."""
    index = {v: i for i, v in enumerate(table.values)}
    return np.array(
        [MISSING_DECISION if v is None else index.get(v, UNKNOWN_DECISION) for v in decided],
        dtype=np.int64,
    ).reshape(-1)


def decision_agreement(
    codes: npt.NDArray[np.int64], decided: npt.NDArray[np.int64]
) -> dict[str, Any]:
    """Share of the annotator's rated units with a decision where the rating equals it (the
    whole label set, for a multi-choice facet)."""
    both = (codes >= 0) & (decided != MISSING_DECISION)
    n = int(both.sum())
    agree = int((codes[both] == decided[both]).sum())
    return {"decided": n, "agree_decided": agree, "decision_agreement": agree / n if n else None}


def _rater_rates(facet: FacetInput, j: int) -> dict[str, Any]:
    table = facet.table
    rated = table.codes[:, j] >= 0
    n = int(rated.sum())
    if not n:
        return {"ratings": 0, "other_rate": None, "unsure_rate": None}
    # whether each distinct value holds an other-like label, then counted over the ratings
    other = np.array(
        [bool(_labels_of(value) & facet.other_labels) for value in table.values], dtype=bool
    )
    return {
        "ratings": n,
        "other_rate": int(other[table.codes[rated, j]].sum()) / n,
        "unsure_rate": float(facet.unsure[rated, j].mean()),
    }


def _labels_of(value: Any) -> frozenset[Hashable]:
    return frozenset(value) if isinstance(value, frozenset) else frozenset([value])


def usage_profile(table: RatingTable, columns: Sequence[int] | range) -> dict[str, float | None]:
    """label → share of the columns' ratings carrying it (for a multi-choice facet a rating
    can carry several, so the shares may sum past 1)."""
    codes = table.codes[:, list(columns)]
    codes = codes[codes >= 0]
    has = table.label_indicator().astype(np.float64)
    counts = np.bincount(codes, minlength=len(table.values)) @ has if len(codes) else None
    return {
        str(label): (float(counts[k]) / len(codes) if counts is not None else None)
        for k, label in enumerate(table.labels)
    }


def learning_curve(
    codes: npt.NDArray[np.int64],
    decided: npt.NDArray[np.int64],
    position: npt.NDArray[np.int64],
    *,
    window: int = WINDOW,
) -> list[dict[str, Any]]:
    """Agreement with the decision in consecutive windows of `window` compared items, in the
    order the annotator submitted them; a remainder shorter than a window joins the last one.
    `first`/`last` are the positions among all the annotator's submissions of the round."""
    both = (codes >= 0) & (decided != MISSING_DECISION) & (position > 0)
    order = np.argsort(position[both], kind="stable")
    hits = (codes[both] == decided[both])[order]
    places = position[both][order]
    count = len(hits) // window
    if not count:
        return []
    starts = np.arange(count) * window
    stops = np.append(starts[1:], len(hits))
    sizes = stops - starts
    agreed = np.add.reduceat(hits.astype(np.int64), starts)
    return [
        {"first": first, "last": last, "n": size, "agreement": agree / size}
        for first, last, size, agree in zip(
            places[starts].tolist(),
            places[stops - 1].tolist(),
            sizes.tolist(),
            agreed.tolist(),
            strict=True,
        )
    ]


def pair_tests(table: RatingTable, names: Sequence[str]) -> list[dict[str, Any]]:
    """Stuart–Maxwell and Bhapkar for each annotator pair with a unit in common."""
    out = []
    k = table.n_raters
    for i in range(k):
        for j in range(i + 1, k):
            cross = crosstab(table.codes[:, i], table.codes[:, j], len(table.values))
            n = int(cross.sum())
            if n == 0:
                continue
            out.append(
                {
                    "i": i,
                    "j": j,
                    "raters": [names[i], names[j]],
                    "n": n,
                    "stuart_maxwell": marginal_homogeneity(cross, method="stuart_maxwell"),
                    "bhapkar": marginal_homogeneity(cross, method="bhapkar"),
                }
            )
    return out


def crosstab(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], size: int
) -> npt.NDArray[np.int64]:
    """size × size counts of (a's value, b's value) over the units both rated."""
    both = (a >= 0) & (b >= 0)
    out = np.zeros((size, size), dtype=np.int64)
    np.add.at(out, (a[both], b[both]), 1)
    return out


def marginal_homogeneity(table: Any, *, method: str = "stuart_maxwell") -> dict[str, Any]:
    """Stuart–Maxwell (Stuart 1955; Maxwell 1970) or Bhapkar (1966) χ² on a K × K table.

    With p = table / n, d = column margins − row margins and both without the last category,
    Stuart–Maxwell's V has V_ii = p_i. + p_.i − 2 p_ii and V_ij = −(p_ij + p_ji); Bhapkar's
    subtracts d dᵀ from it. χ² = n dᵀ V⁻¹ d on K − 1 df (statsmodels' SquareTable.homogeneity).
    Categories neither rater used are dropped first (their row and column make V singular);
    `dropped` counts them. V still singular: statistic and p are None, with the reason."""
    counts = np.asarray(table, dtype=np.float64)
    used = (counts.sum(axis=0) + counts.sum(axis=1)) > 0
    counts = counts[np.ix_(used, used)]
    base = {"method": method, "dropped": int((~used).sum()), "categories": int(used.sum())}
    n = counts.sum()
    if len(counts) < 2:
        return {**base, "statistic": 0.0, "df": 0, "p_value": 1.0, "note": "one category"}
    p = counts / n
    row, col = p.sum(axis=1)[:-1], p.sum(axis=0)[:-1]
    inner = p[:-1, :-1]
    d = col - row
    v = -(inner + inner.T)
    np.fill_diagonal(v, row + col - 2 * np.diag(inner))
    if method == "bhapkar":
        v = v - np.outer(d, d)
    elif method != "stuart_maxwell":
        raise ValueError(f"unknown marginal-homogeneity method {method!r}")
    df = len(d)
    if not np.any(d):
        return {**base, "statistic": 0.0, "df": df, "p_value": 1.0, "note": "equal margins"}
    if np.linalg.matrix_rank(v) < df:
        note = "covariance singular even without unused categories: not defined"
        return {**base, "statistic": None, "df": df, "p_value": None, "note": note}
    from scipy.stats import chi2  # here: the pages that read stored diagnostics never need it

    statistic = float(n * d @ np.linalg.solve(v, d))
    return {
        **base,
        "statistic": statistic,
        "df": df,
        "p_value": float(chi2.sf(statistic, df)),
        "note": "",
    }


def page_facets(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's facets shaped for the page: profile rows aligned with the labels (the
    pooled row last), whether α rises without an annotator, and each pair's tests in order."""
    out = []
    for facet in report["facets"]:
        labels = [str(label) for label in facet["labels"]]
        rows = [
            {"name": row["name"], "pooled": False, "shares": [row["profile"][k] for k in labels]}
            for row in facet["annotators"]
        ]
        rows.append(
            {"name": "", "pooled": True, "shares": [facet["pooled_profile"][k] for k in labels]}
        )
        # the same shares with a row per category (a facet has up to dozens, annotators few)
        by_category = [
            {"label": label, "shares": [row["shares"][i] for row in rows]}
            for i, label in enumerate(labels)
        ]
        annotators = [{**row, "raises_alpha": _raises(row)} for row in facet["annotators"]]
        pairs = [_page_pair(pair, report["significance"]) for pair in facet["pairs"]]
        out.append(
            {
                **facet,
                "profile_rows": rows,
                "profile_by_category": by_category,
                "annotators": annotators,
                "pairs": pairs,
            }
        )
    return out


def _raises(row: Mapping[str, Any]) -> bool:
    all_, without = row["alpha_all"], row["alpha_without"]
    return all_ is not None and without is not None and without > all_


def _page_pair(pair: Mapping[str, Any], level: float) -> dict[str, Any]:
    tests = [pair["stuart_maxwell"], pair["bhapkar"]]
    flagged = any(t["p_value"] is not None and t["p_value"] < level for t in tests)
    return {**pair, "tests": tests, "flagged": flagged}
