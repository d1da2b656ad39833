"""The analysis's issue counts aggregated in the database (the fast path beside
`dataset.study_dataset`, which rebuilds every decided item's record in Python: 9 s at 100,000
items). The tables are then built from the counts by the same pure code (`analysis.Tally`)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from annotator.issues.models import Repository

from .analysis import (
    DISTRIBUTED,
    DISTRIBUTED_YES,
    STAGE,
    Scheme,
    Tally,
    at,
    table_pairs,
    tally_of,
)
from .rows import filtered_items
from .sql import DECIDED, PATHS, CountRequest, analysis_counts


def count_request(scheme: Scheme, levels: dict[str, int | None], stage: str) -> CountRequest:
    """What `sql.analysis_counts` needs of the codebook: each category's path and its unit at
    the chosen level, by (facet key, code) as the records name them."""
    above, units = [], []
    for facet in scheme.facets:
        level = at(levels, facet.key)
        for code, path in {n.code: n.path for n in facet.nodes}.items():
            above += [(facet.key, code, a) for a in path[:-1]]
            unit = facet.unit(code, level)
            if unit != code:
                units.append((facet.key, code, unit))
    keys = scheme.keys()
    return CountRequest(
        facets=keys,
        above=above,
        units=units,
        pairs=table_pairs(scheme),
        distributed=(DISTRIBUTED, DISTRIBUTED_YES) if DISTRIBUTED in keys else None,
        stage=(STAGE, stage) if stage else None,
    )


def study_tally(
    study: Any,
    filters: dict[str, str],
    scheme: Scheme,
    levels: dict[str, int | None],
    stage: str,
) -> Tally:
    """The counts of the study's decided items passing the export filters (within the stage if
    one is given): equal to `tally_of` the records `study_dataset` builds, which SQLite (the
    demo) still counts."""
    if connection.vendor != "postgresql":
        from .dataset import study_dataset

        data = study_dataset(study, filters)
        return tally_of(data.in_stage(stage) if stage else data, levels)
    rows = analysis_counts(
        items=filtered_items(study, filters), request=count_request(scheme, levels, stage)
    )
    repository_ids = {int(r[3]) for r in rows if r[0] == PATHS}
    names = {
        str(pk): f"{owner}/{name}"
        for pk, owner, name in Repository.objects.filter(pk__in=repository_ids).values_list(
            "pk", "owner", "name"
        )
    }
    tally = Tally(scheme, 0, dict(levels))
    for kind, a, b, c, d, n in rows:
        if kind == PATHS:
            tally.on_path[(a, b, names[c], d == "true")] += n
        elif kind == DECIDED:
            tally.decided = n
        else:
            tally.pairs[(a, b, c, d)] += n
    return tally
