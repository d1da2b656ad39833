"""Disagreement analytics of a study (or one round): decisions by source, adjudication reasons
by the facets the annotators disagreed on, the most-confused category pairs, time to resolution.

Read-only, and a fixed number of aggregate queries whatever the number of items (the confused
pairs and the resolution times read one row per label or per decision in one query each and
are counted here). No annotator is named: the figures are counts, codes and item ids, so the
page is safe under blind adjudication.

Confused pairs: per item and facet the annotators differ in, each annotator's label *set* in
that facet (one category for a single-choice facet, the set of chosen categories for a
multi-choice one); every unordered pair of different non-empty sets chosen by two annotators
counts once for the item. An annotator who chose nothing in the facet adds no pair.

Time to resolution: for adjudicated decisions, from the item's last submitted annotation
(`submitted_at`) to the decision's `created_at`; median, p90 by the nearest-rank method, max.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import Counter, defaultdict
from itertools import combinations
from typing import Any

from django.db import connection
from django.db.models import Count, F, Max, Q

from annotator.figures import Figures, study_figures
from annotator.params import BadParameter
from annotator.studies.models import Annotation, AnnotationLabel, Item, Round, Study
from annotator.studies.rounds import asked_round

from . import sql
from .models import Decision

SOURCES = [s.value for s in Decision.Source]
TOP_PAIRS = 10
ITEM_LINKS = 5
SLOWEST = 5
# Figures are kept under their fingerprint, which changes with any write they depend on: the
# timeout only bounds how long an unread entry stays.
CACHE_SECONDS = 24 * 3600


def round_of(study: Study, value: object) -> tuple[Round | None, list[Round]]:
    """The study's rounds and the one `?round=` names (None: every round); BadParameter
    (a 400 naming `round`) for a value that is no round number of the study."""
    asked = asked_round(study, value)
    if asked.number is not None and asked.round is None:
        raise BadParameter("round", f"the study has no round {asked.number}")
    return asked.round, asked.rounds


def disagreement_analytics(*, study: Study, round: Round | None = None) -> dict[str, Any]:
    """The figures of the page and the API, as plain data (JSON-ready): computed once per state
    of the study's decisions and agreements (`disagreement_analytics_as_of`), then read from the
    cache. On a large study (annotator/figures.py) the last ones computed, None before the
    first."""
    report: dict[str, Any] = disagreement_analytics_as_of(study=study, round=round).value
    return report


def disagreement_analytics_as_of(*, study: Study, round: Round | None = None) -> Figures:
    """`disagreement_analytics` with when they were computed: in the request for a study (or
    round) of up to FIGURES_INLINE_MAX_ITEMS items, by a job above.

    Kept under a fingerprint that every write the figures depend on changes
    (sql.adjudication_fingerprint): how many items the study (or round) has, how many agreement
    rows and decisions there are, and the newest agreement computation and decision change. A
    submit that completes an item (or re-submits one) recomputes its agreement row; the rules
    and a person deciding write the decision with its `updated_at`; an item, agreement or
    decision deleted changes a count. The labels behind an item's agreement do not change
    without it (after release a re-submit is a revision, which the figures do not read)."""
    round_id = round.pk if round is not None else None
    state = sql.adjudication_fingerprint(study.pk, round_id)
    return study_figures(
        f"adjudication-analytics:{study.pk}:{round_id or ''}",
        fingerprint=":".join(v.isoformat() if hasattr(v, "isoformat") else str(v) for v in state),
        items=state[0],
        compute="annotator.adjudication.analytics.analytics_of",
        params={"study_id": study.pk, "round_id": round_id},
        timeout=CACHE_SECONDS,
    )


def analytics_of(study_id: int, round_id: int | None) -> dict[str, Any]:
    """The figures of a study (or one of its rounds), computed (in the request or by a job)."""
    study = Study.objects.get(pk=study_id)
    round = Round.objects.get(pk=round_id, study=study) if round_id is not None else None
    items = Item.objects.filter(study=study)
    if round is not None:
        items = items.filter(round=round)
    return compute_analytics(study=study, round=round, items=items)


def compute_analytics(*, study: Study, round: Round | None, items: Any) -> dict[str, Any]:
    """The figures, computed (a fixed number of aggregate queries)."""
    return {
        "study": study.pk,
        "round": round.number if round is not None else None,
        "sources": _sources(items),
        "reasons_by_facet": _reasons_by_facet(items),
        "confused_pairs": confused_pairs(study=study, round=round, items=items),
        "time_to_resolution": _time_to_resolution(items),
    }


def _sources(items: Any) -> dict[str, Any]:
    """Decisions by source and undecided complete items, per round and in total."""
    rows = (
        items.filter(Q(decision__isnull=False) | Q(agreement__isnull=False))
        .values("round__number", "decision__source")
        .annotate(n=Count("pk"))
        .order_by("round__number")
    )
    per_round: dict[int, Counter[str]] = defaultdict(Counter)
    for row in rows:
        per_round[row["round__number"]][row["decision__source"] or "undecided"] += row["n"]
    keys = [*SOURCES, "undecided"]

    def line(counts: Counter[str]) -> dict[str, int]:
        out = {key: counts[key] for key in keys}
        return {**out, "total": sum(out.values())}

    total: Counter[str] = Counter()
    for counts in per_round.values():
        total.update(counts)
    return {
        "rounds": [{"round": n, **line(c)} for n, c in sorted(per_round.items())],
        "total": line(total),
    }


def _reasons_by_facet(items: Any) -> dict[str, Any]:
    """Adjudicated decisions by reason, for each facet the item's annotators disagreed on (a
    decision counts under each of its facets; `total` counts each decision once, and
    `no_facet` those whose item had no differing facet, e.g. waiting for an unsure mark)."""
    adjudicated = Decision.objects.filter(item__in=items, source=Decision.Source.ADJUDICATED)
    cells = (
        adjudicated.filter(item__agreement__disagreeing_facets__isnull=False)
        .values(
            "reason",
            "item__agreement__disagreeing_facets__key",
            "item__agreement__disagreeing_facets__name",
            "item__agreement__disagreeing_facets__order",
        )
        .annotate(n=Count("pk", distinct=True))
    )
    totals = {
        row["reason"]: row
        for row in adjudicated.values("reason").annotate(
            n=Count("pk", distinct=True),
            no_facet=Count("pk", filter=Q(item__agreement__disagreeing_facets__isnull=True)),
        )
    }
    facets: dict[str, tuple[int, str]] = {}
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for cell in cells:
        key = cell["item__agreement__disagreeing_facets__key"]
        facets[key] = (
            cell["item__agreement__disagreeing_facets__order"],
            cell["item__agreement__disagreeing_facets__name"],
        )
        counts[cell["reason"]][key] += cell["n"]
    ordered = sorted(facets, key=lambda k: (facets[k][0], k))
    labels = dict(Decision.Reason.choices)
    rows = [
        {
            "reason": reason,
            "label": labels.get(reason, reason),
            "counts": {key: counts[reason][key] for key in ordered},
            "no_facet": totals[reason]["no_facet"],
            "total": totals[reason]["n"],
        }
        for reason in sorted(totals, key=lambda r: (-totals[r]["n"], r))
    ]
    return {"facets": [{"key": k, "name": facets[k][1]} for k in ordered], "rows": rows}


def confused_pairs(*, study: Study, round: Round | None, items: Any) -> list[dict[str, Any]]:
    """Per round and facet, the TOP_PAIRS most frequent pairs of differing label sets, each
    with the first ITEM_LINKS items (by id) it occurs in: counted by PostgreSQL
    (sql.confused_pairs), elsewhere (SQLite) from the labels here."""
    if connection.vendor != "postgresql":
        return confused_pairs_from_labels(items)
    rows = sql.confused_pairs(study.pk, round.pk if round else None, TOP_PAIRS, ITEM_LINKS)
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    for row in rows:
        group = groups.setdefault(
            (row.round, row.facet),
            {
                "round": row.round,
                "facet": row.facet,
                "facet_name": row.facet_name,
                "kind": row.kind,
                "order": row.facet_order,
                "pairs": [],
            },
        )
        pair = {"a": list(row.a), "b": list(row.b), "count": row.items_with, "items": row.items}
        group["pairs"].append(pair)
    ordered = sorted(groups.values(), key=lambda g: (g["round"], g["order"], g["facet"]))
    return [{k: v for k, v in g.items() if k != "order"} for g in ordered]


def confused_pairs_from_labels(items: Any) -> list[dict[str, Any]]:
    """confused_pairs counted in Python from one row per label (the path off PostgreSQL, and the
    oracle of the SQL in tests)."""
    labels = (
        AnnotationLabel.objects.filter(
            annotation__status=Annotation.Status.SUBMITTED,
            annotation__assignment__item__in=items,
            annotation__assignment__item__agreement__disagreeing_facets=F("facet"),
        )
        .values_list(
            "annotation__assignment__item_id",
            "annotation__assignment__item__round__number",
            "annotation_id",
            "facet__key",
            "facet__name",
            "facet__kind",
            "facet__order",
            "category__code",
        )
        .order_by()
    )
    sets: dict[tuple[int, int, str], dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    facets: dict[str, tuple[int, str, str]] = {}
    for item_id, number, annotation_id, key, name, kind, order, code in labels:
        sets[(number, item_id, key)][annotation_id].add(code)
        facets[key] = (order, name, kind)
    pairs: dict[tuple[int, str], Counter[tuple[tuple[str, ...], ...]]] = defaultdict(Counter)
    where: dict[tuple[int, str], dict[tuple[tuple[str, ...], ...], list[int]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (number, item_id, key), by_annotation in sets.items():
        chosen = {tuple(sorted(codes)) for codes in by_annotation.values()}
        for pair in combinations(sorted(chosen), 2):
            pairs[(number, key)][pair] += 1
            where[(number, key)][pair].append(item_id)
    out = []
    for number, key in sorted(pairs, key=lambda nk: (nk[0], facets[nk[1]][0], nk[1])):
        counted = pairs[(number, key)]
        top = sorted(counted.items(), key=lambda pc: (-pc[1], pc[0]))[:TOP_PAIRS]
        out.append(
            {
                "round": number,
                "facet": key,
                "facet_name": facets[key][1],
                "kind": facets[key][2],
                "pairs": [
                    {
                        "a": list(a),
                        "b": list(b),
                        "count": n,
                        "items": sorted(where[(number, key)][(a, b)])[:ITEM_LINKS],
                    }
                    for (a, b), n in top
                ],
            }
        )
    return out


def _time_to_resolution(items: Any) -> dict[str, Any]:
    """Adjudicated items: seconds from the last submitted annotation to the decision."""
    rows = (
        Decision.objects.filter(item__in=items, source=Decision.Source.ADJUDICATED)
        .annotate(
            complete_at=Max(
                "item__assignments__annotation__submitted_at",
                filter=Q(item__assignments__annotation__status=Annotation.Status.SUBMITTED),
            )
        )
        .filter(complete_at__isnull=False)
        .values_list("item_id", "item__round__number", "created_at", "complete_at")
        .order_by()
    )
    times = sorted(
        (
            {"item": item_id, "round": number, "seconds": (at - done).total_seconds()}
            for item_id, number, at, done in rows
        ),
        key=lambda t: (-t["seconds"], t["item"]),
    )
    seconds = sorted(t["seconds"] for t in times)
    if not seconds:
        return {"count": 0, "median": None, "p90": None, "max": None, "slowest": []}
    return {
        "count": len(seconds),
        "median": statistics.median(seconds),
        "p90": seconds[math.ceil(0.9 * len(seconds)) - 1],
        "max": seconds[-1],
        "slowest": times[:SLOWEST],
    }


def reasons_csv(report: dict[str, Any]) -> str:
    table = report["reasons_by_facet"]
    keys = [f["key"] for f in table["facets"]]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["reason", *keys, "no_facet", "total"])
    for row in table["rows"]:
        writer.writerow(
            [row["reason"], *(row["counts"][k] for k in keys), row["no_facet"], row["total"]]
        )
    return out.getvalue()


def pairs_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["round", "facet", "a", "b", "count", "items"])
    for group in report["confused_pairs"]:
        for pair in group["pairs"]:
            writer.writerow(
                [
                    group["round"],
                    group["facet"],
                    "+".join(pair["a"]),
                    "+".join(pair["b"]),
                    pair["count"],
                    " ".join(map(str, pair["items"])),
                ]
            )
    return out.getvalue()
