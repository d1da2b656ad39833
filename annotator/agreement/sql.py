"""The agreement app's hand-written SQL: a run's label columns, read as packed binary
(PostgreSQL), and the probe after each submit of whether it completed its round. Each function's
docstring says why it is not the ORM; table and column names come from the models
(`annotator.sql.Table`), built once at import."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import connection

from annotator.sql import Table
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item

IntArray = npt.NDArray[np.int64]

# --- a run's label columns (PostgreSQL) ----------------------------------------------------------
_n = Table(Annotation, "n")
_a = Table(Assignment, "a")
_i = Table(Item, "i")
_label = Table(AnnotationLabel)


def _packed(column: str) -> str:
    return f"string_agg(int8send({column}), '')"


def _scope_statement(round_filter: str) -> str:
    return (
        f"SELECT {_packed(_n.id)}, {_packed(_n.codebook_version)}, {_packed(_a.item)},"
        f" {_packed(_a.annotator)}"
        f" FROM {_n} JOIN {_a} ON {_a.id} = {_n.assignment} JOIN {_i} ON {_i.id} = {_a.item}"
        f" WHERE {_i.study} = %s{round_filter} AND {_n.status} = %s"
    )


_SCOPE = _scope_statement("")
_SCOPE_OF_ROUND = _scope_statement(f" AND {_i.round} = %s")
_LABELS = (
    f"SELECT {_packed(_label.annotation)}, {_packed(_label.facet)}, {_packed(_label.category)}"
    f" FROM {_label} WHERE {_label.facet} = ANY(%s) AND {_label.annotation} BETWEEN %s AND %s"
)


def submitted_annotation_columns(*, study_id: int, round_id: int | None) -> list[IntArray]:
    """The study's (or one round's) submitted annotations as four aligned columns: annotation
    id, codebook version id, item id, annotator id, in no particular order. PostgreSQL only.

    Not the ORM: `values_list` would build a Python tuple per row (a few hundred thousand at
    100,000 items); each `string_agg(int8send(…))` packs a column into one `bytea` that numpy
    reads with `frombuffer`, and every aggregate of one query sees the rows in the same order,
    so the columns stay aligned (benchmarks/agreement_run.py). The ORM has no form for
    `int8send`; labels.py's SQLite fallback is the `values_list` this replaces, and
    tests/agreement/test_sql.py holds the two equal."""
    if round_id is None:
        return _columns(_SCOPE, [study_id, Annotation.Status.SUBMITTED])
    return _columns(_SCOPE_OF_ROUND, [study_id, round_id, Annotation.Status.SUBMITTED])


def label_columns(*, facet_ids: list[int], low: int, high: int) -> list[IntArray]:
    """The labels of `facet_ids` on annotations with ids from `low` to `high` (the caller
    matches them to its annotations) as three aligned columns: annotation id, facet id,
    category id. PostgreSQL only; not the ORM for the reason `submitted_annotation_columns`
    gives (1.2 million label rows at 100,000 items, 3 annotators and 4 facets)."""
    return _columns(_LABELS, [facet_ids, low, high])


def _columns(sql: str, params: list[Any]) -> list[IntArray]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return [_ints(buffer) for buffer in row]


def _ints(buffer: Any) -> IntArray:
    if buffer is None:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(bytes(buffer), dtype=">i8").astype(np.int64)


# --- the round-complete probe --------------------------------------------------------------------
_o = Table(Item, "o")
_COMPLETED_ROUND = (
    f"SELECT {_i.round} FROM {_i} WHERE {_i.id} = %s AND {_i.submitted_count} >= {_i.quota}"
    f" AND NOT EXISTS (SELECT 1 FROM {_o}"
    f" WHERE {_o.round} = {_i.round} AND {_o.submitted_count} < {_o.quota})"
)


def completed_round(item_id: int) -> int | None:
    """The round of the item if the item is complete (at its quota) and so is every other item
    of its round; else None.

    Not the ORM: it follows every submit that completes an item, on the labeling loop, where
    composing the ORM's queries cost more than running them (HOUSE_STYLE 11); the statement is
    written once, and is one query whose NOT EXISTS PostgreSQL answers with one probe of the
    partial index `item_incomplete` (items below their quota). tests/agreement/test_sql.py
    holds it equal to the ORM's Exists query it replaces."""
    with connection.cursor() as cursor:
        cursor.execute(_COMPLETED_ROUND, [item_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])
