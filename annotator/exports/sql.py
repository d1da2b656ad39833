"""The exports app's hand-written SQL: the analysis's issue counts, aggregated in PostgreSQL over
the final labels (`aggregates.study_tally` calls it; SQLite, the demo, counts the records in
Python instead). Table and column names come from the models (`annotator.sql.Table`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Issue
from annotator.sql import Table
from annotator.studies.models import Item
from taxonomy_app.models import Category, Facet

_dl = Table(DecisionLabel, "dl")
_d = Table(Decision, "d")
_c = Table(Category, "c")
_f = Table(Facet, "f")
_i = Table(Item, "i")
_s = Table(Issue, "s")

# The three answers of the one statement, told apart by its first column.
PATHS, PAIRS, DECIDED = 0, 1, 2


@dataclass(frozen=True)
class CountRequest:
    """What to count. `facets`: the facet keys the codebook has (labels of other facets are
    left out, as the export's columns leave them out). `above`: (facet, code, a category
    above it) for every category with a parent. `units`: (facet, code, the category it counts
    under at its facet's level) where that is not itself. `pairs`: (rows facet, columns facet)
    of each cross-table. `distributed`: (facet, code) of "distributed-specific", or None.
    `stage`: a stage's (facet, code) the issues must carry, or None."""

    facets: Sequence[str]
    above: Sequence[tuple[str, str, str]]
    units: Sequence[tuple[str, str, str]]
    pairs: Sequence[tuple[str, str]]
    distributed: tuple[str, str] | None
    stage: tuple[str, str] | None


def _columns(rows: Sequence[tuple[str, ...]], width: int) -> list[list[str]]:
    return [[row[k] for row in rows] for k in range(width)]


def _statement(items_sql: str, stage: bool) -> str:
    having = " HAVING bool_or(x.facet = %s AND x.code = %s)" if stage else ""
    return f"""
WITH chosen AS MATERIALIZED (
  SELECT {_d.item} AS item, {_f.key} AS facet, {_c.code} AS code
  FROM {_dl} JOIN {_d} ON {_d.id} = {_dl.decision} JOIN {_c} ON {_c.id} = {_dl.category}
  JOIN {_f} ON {_f.id} = {_c.facet}
  WHERE {_d.item} IN ({items_sql}) AND {_f.key} = ANY(%s)
), decided AS MATERIALIZED (
  SELECT {_i.id} AS item, {_s.repository} AS repository,
    coalesce(bool_or(x.facet = %s AND x.code = %s), false) AS yes
  FROM {_i} JOIN {_s} ON {_s.id} = {_i.issue} JOIN {_d} ON {_d.item} = {_i.id}
  LEFT JOIN chosen x ON x.item = {_i.id}
  WHERE {_i.id} IN ({items_sql})
  GROUP BY {_i.id}, {_s.repository}{having}
), paths AS (
  SELECT item, facet, code FROM chosen
  UNION SELECT item, facet, '' FROM chosen
  UNION SELECT x.item, x.facet, m.above FROM chosen x
    JOIN unnest(%s::text[], %s::text[], %s::text[]) m(facet, code, above)
    ON m.facet = x.facet AND m.code = x.code
), units AS (
  SELECT DISTINCT x.item, x.facet, coalesce(m.unit, x.code) AS unit FROM chosen x
    LEFT JOIN unnest(%s::text[], %s::text[], %s::text[]) m(facet, code, unit)
    ON m.facet = x.facet AND m.code = x.code
  WHERE x.facet = ANY(%s)
)
SELECT {PATHS}, p.facet, p.code, d.repository::text, d.yes::text, count(*)
  FROM paths p JOIN decided d ON d.item = p.item GROUP BY p.facet, p.code, d.repository, d.yes
UNION ALL
SELECT {PAIRS}, a.facet, a.unit, b.facet, b.unit, count(*)
  FROM units a JOIN units b ON b.item = a.item
  JOIN unnest(%s::text[], %s::text[]) q(a, b) ON q.a = a.facet AND q.b = b.facet
  JOIN decided d ON d.item = a.item
  GROUP BY a.facet, a.unit, b.facet, b.unit
UNION ALL
SELECT {DECIDED}, NULL, NULL, NULL, NULL, count(*) FROM decided
"""


def analysis_counts(*, items: QuerySet[Item], request: CountRequest) -> list[tuple[Any, ...]]:
    """The issue counts of the decided items among `items` (within the stage, if one is
    given), as rows `(kind, …, issues)`: PATHS `(facet, category or "" for "labelled in the
    facet", repository id, "true"/"false" distributed-specific)`, each issue once per category
    on its labels' paths; PAIRS `(facet a, unit a, facet b, unit b)`, each issue once per pair
    of its units; DECIDED the number of decided items.

    Not the ORM: it cannot join a mapping sent with the query (`unnest` of arrays) nor count
    distinct (item, category on the path) pairs without shipping a row per label to Python,
    which is what the analysis did before (9 s of a 13 s page at 100,000 items). One statement,
    so `chosen` (a row per final label of the items) is read once for every count.
    tests/exports/test_analysis_aggregates.py holds its answer equal to the counts of the
    records the export writes."""
    items_sql, items_params = items.values("pk").order_by().query.sql_with_params()
    params: list[Any] = [*items_params, list(request.facets)]
    yes = request.distributed or ("", "")
    params += [yes[0], yes[1], *items_params]
    if request.stage:
        params += list(request.stage)
    params += _columns(request.above, 3)
    params += _columns(request.units, 3)
    params.append(sorted({f for pair in request.pairs for f in pair}))
    params += _columns(request.pairs, 2)
    with connection.cursor() as cursor:
        cursor.execute(_statement(items_sql, request.stage is not None), params)
        return list(cursor.fetchall())
