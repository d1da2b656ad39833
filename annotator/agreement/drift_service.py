"""Drift within a round, read from the database (the pure part is `drift.py`).

Queries do not depend on the number of items: one query for the round's submitted annotations
(item, submitted_at, codebook version), one for the versions' numbers, one for the threshold,
and the label tables (`labels.load_label_table`, the bridge agreement runs use: only
annotations on the study's current codebook version count) — read only when the round has a
window (five pairable items or more): at 100,000 items they are most of the page's time (about
a second), and a round without a window shows no figure from them.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import numpy as np

from annotator.studies.codebook import FacetNode, codebook_schema
from annotator.studies.models import Annotation, Round, Study
from taxonomy_app.models import CodebookVersion

from .drift import DEFAULT_WINDOW, FacetRows, drift, timeline, window_bounds
from .labels import load_label_table
from .services import study_threshold
from .stats import RatingTable


def round_drift(*, study: Study, round: Round, size: int = DEFAULT_WINDOW) -> dict[str, Any]:
    """Headline alpha per window of `size` pairable items of the round (see `drift.drift`)."""
    version = study.codebook_version
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
        labels = load_label_table(study_id=study.pk, version=version, round_id=round.pk)
        facets = [
            FacetRows(f.key, f.name, f.kind, f.table, [int(i) for i in f.items])
            for f in labels.facets
        ]
    else:
        facets = [_no_rows(f) for f in codebook_schema(version).facets]
    result = drift(
        entries,
        facets,
        size=size,
        threshold=study_threshold(study),
        version_names=names,
        current_version=version.pk,
    )
    return {"study": study.pk, "round": round.number, **result}


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
