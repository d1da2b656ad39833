"""The exports app's hand-written SQL: the analysis's issue counts, aggregated in PostgreSQL over
the final labels (`aggregates.study_tally_as_of` calls it; SQLite, the demo, counts the records in
Python instead). Table and column names come from the models (`annotator.sql.Table`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Issue
from annotator.sql import Table
from annotator.studies.models import Item

_dl = Table(DecisionLabel, "dl")
_d = Table(Decision, "d")
_i = Table(Item, "i")
_s = Table(Issue, "s")


@dataclass(frozen=True)
class CountRequest:
    """What to count. `facets`: per facet of the codebook, the ids of the facets of that key (a
    label on another version's category keeps its facet key); `multi`: per facet, whether
    several categories may be chosen. `pairs`: (rows, columns) facet indexes of each
    cross-table. `distributed`: the category ids meaning "distributed-specific". `stage`: the
    category ids of a stage the items must carry, or None."""

    facets: Sequence[Sequence[int]]
    multi: Sequence[bool]
    pairs: Sequence[tuple[int, int]]
    distributed: Sequence[int]
    stage: Sequence[int] | None


def _chosen(k: int, multi: bool) -> str:
    """A decision's categories in facet k: one id (a single-choice facet), or the sorted ids."""
    value = (
        f"array_agg({_dl.category} ORDER BY {_dl.category})" if multi else f"min({_dl.category})"
    )
    return f"{value} FILTER (WHERE {_dl.facet} = ANY(%s)) AS f{k}"


def _statement(items_sql: str, request: CountRequest) -> str:
    n = len(request.facets)
    chosen = ", ".join(_chosen(k, multi) for k, multi in enumerate(request.multi))
    columns = ", ".join(f"f{k}" for k in range(n))
    sets = [f"(repository, yes, f{k})" for k in range(n)]
    sets += [f"(f{a}, f{b})" for a, b in request.pairs]
    where = " WHERE in_stage" if request.stage is not None else ""
    return f"""
WITH per AS MATERIALIZED (
  SELECT {_s.repository} AS repository, coalesce(bool_or({_dl.category} = ANY(%s)), false) AS yes,
    coalesce(bool_or({_dl.category} = ANY(%s)), false) AS in_stage, {chosen}
  FROM {_d} JOIN {_i} ON {_i.id} = {_d.item} JOIN {_s} ON {_s.id} = {_i.issue}
  LEFT JOIN {_dl} ON {_dl.decision} = {_d.id}
  WHERE {_d.item} IN ({items_sql})
  GROUP BY {_d.id}, {_s.repository}
)
SELECT GROUPING(repository, yes, {columns}), repository, yes, {columns}, count(*)
FROM per{where}
GROUP BY GROUPING SETS ({", ".join(sets)}, ())
"""


def analysis_counts(*, items: QuerySet[Item], request: CountRequest) -> list[tuple[Any, ...]]:
    """The decided items among `items` (those carrying a `stage` category, if given), counted
    by the categories they were decided, in one statement: rows `(grouping, repository id,
    distributed-specific, category ids of facet 0, …, of facet n-1, items)`, where `grouping`
    is PostgreSQL's GROUPING() bit mask of the columns left out (the first two columns and one
    bit per facet, the first column the highest bit): per facet, items by repository,
    distributed-specific or not and the set of categories chosen in the facet (unordered;
    null: none); per pair of `pairs`, items by the two facets' sets; and all of them.

    Not the ORM: the analysis read every item's labels into Python (a row per label, 9 s of a
    13 s page at 100,000 items); here each decision's labels become one row of per-facet
    arrays, grouped by GROUPING SETS into a few thousand rows that `aggregates.study_tally_as_of`
    expands into the tables' counts. The ORM has no GROUPING SETS nor aggregate FILTER over
    arrays. tests/exports/test_analysis_aggregates.py holds the counts equal to those of the
    records the export writes."""
    items_sql, items_params = items.values("pk").order_by().query.sql_with_params()
    params: list[Any] = [list(request.distributed), list(request.stage or [])]
    params += [list(ids) for ids in request.facets]
    params += items_params
    with transaction.atomic(), connection.cursor() as cursor:
        # The planner cannot estimate the grouped rows and expects millions: it would spend
        # seconds compiling the statement (JIT) and sort the groups on disk.
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute(_statement(items_sql, request), params)
        return list(cursor.fetchall())
