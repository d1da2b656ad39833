"""Per-annotator diagnostics of one round, read from the database (the pure part is
`annotators.py`).

Queries do not depend on the number of items: the label tables (`labels.load_label_table`, the
same bridge agreement runs use), one query for the round's assignments with their annotations,
one for the decisions' labels.

Time per item is the annotation's `seconds_spent`: the seconds the annotate page measured the
item open (what the adjudicate page shows beside each annotator), not the wall time from
handout to submit, which counts breaks and the night. The "other" rate counts ratings holding
the facet's other-like category (code "other" or ending in "-other", `FacetNode.other_id`);
proposals (taxonomy_app.Proposal) are not tied to an item or a round, so they are not counted.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotator.adjudication.models import DecisionLabel
from annotator.jobs import Job
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Assignment, Round, Study
from taxonomy_app.models import CodebookVersion

from .annotators import Activity, FacetInput, round_diagnostics
from .labels import FacetTable, LabelTable, load_label_table
from .models import AgreementRun, AnnotatorDiagnostics

Status = Assignment.Status


def round_annotator_diagnostics(
    *,
    study: Study,
    round: Round,
    version: CodebookVersion | None = None,
    labels: LabelTable | None = None,
) -> dict[str, Any]:
    """Every annotator of the round, per facet (see `annotators.round_diagnostics`), on the
    study's codebook version (or `version`). `labels`: the round's label table over every
    facet on that version when the caller has read it already (an agreement run of the round)."""
    version = version or study.codebook_version
    if labels is None:
        labels = load_label_table(study_id=study.pk, version=version, round_id=round.pk)
    assignments = _assignments(round)
    decided = _decided(round, version)
    places = _positions(assignments)
    unsure = {
        (r["item_id"], r["annotator_id"]): set(r["annotation__unsure"] or []) for r in assignments
    }
    facets = [_facet_input(f, places, unsure, decided) for f in labels.facets]
    result = round_diagnostics(facets, _activity(assignments))
    return {"study": study.pk, "round": round.number, **result}


@dataclass(frozen=True)
class StoredRoundFigures:
    """Figures a round's latest agreement run over every facet stored (`report` None: never
    computed), with the run that computed them, and a newer run of the round still queued or
    running (the recompute). The per-annotator diagnostics here, the drift in drift_service."""

    report: dict[str, Any] | None
    run: AgreementRun | None
    pending: AgreementRun | None


def latest_stored(
    model: Any, round: Round, *, defer: tuple[str, ...] = (), **filters: Any
) -> tuple[Any, AgreementRun | None, AgreementRun | None]:
    """The row of `model` (a table of figures an agreement run stores, with a `run`) that the
    round's latest run stored, read with its run in one query (`defer`: its own large columns
    left unread), its run, and the recompute under way (one more query)."""
    stored = (
        model.objects.filter(run__study_id=round.study_id, run__round=round, **filters)
        .select_related("run")
        .defer(*defer, "run__result", "run__inputs")
        .order_by("-run__created_at", "-run_id")
        .first()
    )
    run = stored.run if stored else None
    return stored, run, pending_round_run(round, run)


def stored_round_diagnostics(round: Round) -> StoredRoundFigures:
    """What the diagnostics page and API show: the figures the round's latest agreement run
    over every facet stored (`services.run_agreement_run`), read in one query, with the run's
    id and finish time in the report (`run`, `computed_at`); one more query for a recompute
    under way. Nothing is recomputed here."""
    stored, run, pending = latest_stored(AnnotatorDiagnostics, round)
    if stored is None or run is None:
        return StoredRoundFigures(report=None, run=None, pending=pending)
    finished = run.finished_at.isoformat() if run.finished_at else None
    report = {**stored.report, "run": run.pk, "computed_at": finished}
    return StoredRoundFigures(report=report, run=run, pending=pending)


def pending_round_run(round: Round, after: AgreementRun | None) -> AgreementRun | None:
    """The newest run of the round over every facet still queued or running, created after
    `after` (the run whose stored figures a page shows): the recompute under way."""
    pending = AgreementRun.objects.filter(
        study_id=round.study_id,
        round=round,
        facets=[],
        status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
    )
    if after is not None:
        pending = pending.filter(created_at__gt=after.created_at)
    return pending.defer("result", "inputs").order_by("-created_at", "-pk").first()


def _assignments(round: Round) -> list[dict[str, Any]]:
    rows = Assignment.objects.filter(item__round=round).order_by("annotator_id", "pk")
    fields = (
        "item_id",
        "annotator_id",
        "annotator__username",
        "status",
        "annotation__status",
        "annotation__submitted_at",
        "annotation__unsure",
        "annotation__seconds_spent",
    )
    return [dict(zip(fields, row, strict=True)) for row in rows.values_list(*fields)]


def _activity(assignments: list[dict[str, Any]]) -> list[Activity]:
    by_rater: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in assignments:
        by_rater[row["annotator_id"]].append(row)
    out = []
    for rater, rows in sorted(by_rater.items()):
        submitted = [r for r in rows if _submitted(r)]
        seconds = [r["annotation__seconds_spent"] for r in submitted]
        out.append(
            Activity(
                rater=rater,
                name=rows[0]["annotator__username"],
                assigned=len(rows),
                submitted=len(submitted),
                skipped=sum(r["status"] == Status.SKIPPED for r in rows),
                seconds=[max(0.0, s) for s in seconds],
            )
        )
    return out


def _submitted(row: dict[str, Any]) -> bool:
    return row["annotation__status"] == "submitted" and row["annotation__submitted_at"] is not None


def _positions(assignments: list[dict[str, Any]]) -> dict[tuple[int, int], int]:
    """(item, annotator) → the item's place (1-based) in the annotator's submissions."""
    by_rater: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in assignments:
        if _submitted(row):
            by_rater[row["annotator_id"]].append(row)
    out: dict[tuple[int, int], int] = {}
    for rater, rows in by_rater.items():
        rows.sort(key=lambda r: (r["annotation__submitted_at"], r["item_id"]))
        out |= {(r["item_id"], rater): n for n, r in enumerate(rows, start=1)}
    return out


def _decided(round: Round, version: Any) -> dict[tuple[int, str], set[str]]:
    """(item, facet key) → the decided category codes."""
    schema = codebook_schema(version)
    keys = {f.id: f.key for f in schema.facets}
    codes = {c.id: c.code for f in schema.facets for c in f.categories}
    rows = DecisionLabel.objects.filter(decision__item__round=round).values_list(
        "decision__item_id", "facet_id", "category_id"
    )
    out: dict[tuple[int, str], set[str]] = defaultdict(set)
    for item, facet, category in rows:
        if facet in keys:
            out[(item, keys[facet])].add(codes.get(category, f"#{category}"))
    return out


def _facet_input(
    facet: FacetTable,
    places: dict[tuple[int, int], int],
    unsure: dict[tuple[int, int], set[str]],
    decided: dict[tuple[int, str], set[str]],
) -> FacetInput:
    items = [int(i) for i in facet.items]
    raters = [int(str(r)) for r in facet.table.raters]  # user ids (labels.load_label_table)
    shape = (len(items), len(raters))
    position = np.zeros(shape, dtype=np.int64)
    marked = np.zeros(shape, dtype=bool)
    for u, item in enumerate(items):
        for j, rater in enumerate(raters):
            position[u, j] = places.get((item, rater), 0)
            marked[u, j] = facet.key in unsure.get((item, rater), ())
    return FacetInput(
        key=facet.key,
        name=facet.name,
        kind=facet.kind,
        table=facet.table,
        decided=[_decided_value(facet, decided.get((item, facet.key))) for item in items],
        position=position,
        unsure=marked,
        other_labels=_other_labels(facet),
    )


def _decided_value(facet: FacetTable, codes: set[str] | None) -> Hashable | None:
    if not codes:
        return None
    if facet.multilabel:
        return frozenset(codes)
    return next(iter(codes)) if len(codes) == 1 else frozenset(codes)


def _other_labels(facet: FacetTable) -> frozenset[Hashable]:
    return frozenset(
        c["code"] for c in facet.categories if c["code"] == "other" or c["code"].endswith("-other")
    )


CSV_COLUMNS = (
    "facet",
    "annotator",
    "ratings",
    "alpha_all",
    "alpha_without",
    "p_o_with_others",
    "decided",
    "decision_agreement",
    "other_rate",
    "unsure_rate",
    "submitted",
    "skipped",
    "skip_rate",
    "median_seconds",
)


def diagnostics_csv(report: dict[str, Any]) -> str:
    """The per-annotator table, one row per facet and annotator (columns `CSV_COLUMNS`)."""
    activity = {a["rater"]: a for a in report["annotators"]}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for facet in report["facets"]:
        for row in facet["annotators"]:
            done = activity.get(row["rater"], {})
            values = {**done, **row, "facet": facet["key"], "annotator": row["name"]}
            values["p_o_with_others"] = row["p_o"]
            writer.writerow(["" if values.get(c) is None else values[c] for c in CSV_COLUMNS])
    return out.getvalue()
