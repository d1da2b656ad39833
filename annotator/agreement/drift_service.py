"""Drift within a round, read from the database (the pure part is `drift.py`).

The figures at the default window are computed by an agreement run of the round over every
facet and stored with it (`DriftReport`, like the per-annotator diagnostics): a round of 10,000
items has a thousand windows, each an alpha with its jackknife, seconds of work that no page view
repeats. `stored_round_drift` reads them (two queries, and the threshold to judge them by; one
more for the figures themselves the first time a process judges them);
another window size is computed on request by `round_drift`.

Queries of `round_drift` do not depend on the number of items: one query for the round's
submitted annotations (item, submitted_at, codebook version), one for the versions' numbers,
one for the threshold, and the label tables (`labels.load_label_table`, the bridge agreement
runs use: only annotations on the study's current codebook version count) — read only when the
round has a window (five pairable items or more): at 100,000 items they are most of the
reading time (about a second), and a round without a window shows no figure from them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from datetime import datetime
from typing import Any

import numpy as np

from annotator.studies.codebook import FacetNode, codebook_schema
from annotator.studies.models import Annotation, Round, Study
from taxonomy_app.models import CodebookVersion

from .annotators_service import StoredRoundFigures, latest_stored
from .drift import DEFAULT_WINDOW, FacetRows, drift_figures, judged, timeline, window_bounds
from .labels import LabelTable, load_label_table
from .models import DriftReport
from .services import study_threshold
from .stats import RatingTable


def round_drift(*, study: Study, round: Round, size: int = DEFAULT_WINDOW) -> dict[str, Any]:
    """Headline alpha per window of `size` pairable items of the round (see `drift.drift`),
    computed now."""
    figures = round_drift_figures(study=study, round=round, size=size)
    return {"study": study.pk, "round": round.number, **judged(figures, study_threshold(study))}


def round_drift_figures(
    *,
    study: Study,
    round: Round,
    size: int = DEFAULT_WINDOW,
    version: CodebookVersion | None = None,
    labels: LabelTable | None = None,
) -> dict[str, Any]:
    """The windows and their figures, not judged (`drift.drift_figures`), on the study's
    codebook version (or `version`). `labels`: the round's label table over every facet on that
    version when the caller has read it already (an agreement run of the round)."""
    version = version or study.codebook_version
    rows = Annotation.objects.filter(
        assignment__item__round=round,
        status=Annotation.Status.SUBMITTED,
        submitted_at__isnull=False,
    ).values_list("assignment__item_id", "submitted_at", "codebook_version_id")
    submissions: dict[int, list[tuple[datetime, int]]] = defaultdict(list)
    for item, at, version_id in rows:
        if at is not None:  # filtered out above; narrows the type
            submissions[item].append((at, version_id))
    entries = timeline(submissions)
    seen = {v for e in entries for v in e.versions} | {version.pk}
    names = {
        pk: f"v{number}"
        for pk, number in CodebookVersion.objects.filter(pk__in=seen).values_list("pk", "number")
    }
    if window_bounds(len(entries), size):
        if labels is None:
            labels = load_label_table(study_id=study.pk, version=version, round_id=round.pk)
        facets = [
            FacetRows(f.key, f.name, f.kind, f.table, [int(i) for i in f.items])
            for f in labels.facets
        ]
    else:
        facets = [_no_rows(f) for f in codebook_schema(version).facets]
    return drift_figures(
        entries, facets, size=size, version_names=names, current_version=version.pk
    )


def stored_round_drift(*, study: Study, round: Round) -> StoredRoundFigures:
    """What the drift page and API show at the default window: the figures the round's latest
    agreement run over every facet stored (`services.run_agreement_run`), with the run's id
    and finish time in the report (`run`, `computed_at`). Nothing is recomputed here; the
    judgement uses the threshold of the moment, as the report's does."""
    stored, run, pending = latest_stored(
        DriftReport, round, defer=("report",), window=DEFAULT_WINDOW
    )
    if stored is None or run is None:
        return StoredRoundFigures(report=None, run=None, pending=pending)
    report = {
        "study": study.pk,
        "round": round.number,
        **_judged_report(stored, study_threshold(study)),
        "run": run.pk,
        "computed_at": run.finished_at.isoformat() if run.finished_at else None,
    }
    return StoredRoundFigures(report=report, run=run, pending=pending)


# A run's stored drift is written once and never changed, so each process keeps the last few it
# judged, by run and threshold: a view of the same figures then reads the run's id, not the
# figures (660 KB for a round of 11,111 items) nor judges them again. Callers never change what
# they get (they build their own dicts around it).
_JUDGED: OrderedDict[tuple[int, float], dict[str, Any]] = OrderedDict()
_JUDGED_KEPT = 4
_JUDGED_LOCK = threading.Lock()


def _judged_report(stored: DriftReport, threshold: float) -> dict[str, Any]:
    key = (stored.pk, threshold)
    with _JUDGED_LOCK:
        found = _JUDGED.get(key)
        if found is not None:
            _JUDGED.move_to_end(key)
            return found
    found = judged(stored.report, threshold)  # reads the deferred figures: one query
    with _JUDGED_LOCK:
        _JUDGED[key] = found
        while len(_JUDGED) > _JUDGED_KEPT:
            _JUDGED.popitem(last=False)
    return found


def _no_rows(facet: FacetNode) -> FacetRows:
    """A facet of a round without a window: what `drift` names it by, and no rows."""
    codes = tuple(c.code for c in facet.categories)
    table = RatingTable(
        codes=np.zeros((0, 0), dtype=np.int64),
        values=(),
        labels=codes,
        declared=True,
        multilabel=facet.is_multi,
        raters=(),
    )
    return FacetRows(facet.key, facet.name, facet.kind, table, [])
