"""The adjudication app's hand-written SQL: what the last submit of an item writes and reads.

Why not the ORM: these run inside every submit that completes an item (its agreement, its
automatic decision, its history entry), on the labeling loop that `benchmarks/labeling_load.py`
measures, and composing them with the ORM — a three-table join for the item's state, a
four-table join for the label sets, the inserts' compilation — cost more CPU than PostgreSQL
took to run them.

Table and column names come from the models (`Table`): the statements are built when this module
is imported, so a renamed field fails every test, not a request. `tests/adjudication/test_sql.py`
holds each result equal to the ORM query it replaces, on PostgreSQL and on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db import connection

from annotator.sql import Table, insert, lock_clause, replace_rows
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, Study

from .models import AdjudicationSettings, Change, Decision, DecisionLabel, ItemAgreement


class ItemState(NamedTuple):
    submitted: int
    quota: int
    codebook_version_id: int
    majority_rule: bool
    route_unsure: bool = True  # Study.route_unsure_to_adjudication


_i, _t, _s = Table(Item, "i"), Table(Study, "t"), Table(AdjudicationSettings, "s")
_ITEM_STATE = (
    f"SELECT {_i.submitted_count}, {_i.quota}, {_t.codebook_version}, {_s.majority_rule},"
    f" {_t.route_unsure_to_adjudication}"
    f" FROM {_i} JOIN {_t} ON {_t.id} = {_i.study}"
    f" LEFT JOIN {_s} ON {_s.study} = {_i.study} WHERE {_i.id} = %s"
)


def lock_item(item_id: int) -> ItemState | None:
    """Lock the item's row (FOR NO KEY UPDATE: rows that merely refer to it, assignments and
    history, are not held up) and return its submitted count and quota, its study's codebook
    version, whether the study decides by majority and whether it sends unsure labels to
    adjudication; None when there is no such item."""
    with connection.cursor() as cursor:
        cursor.execute(_ITEM_STATE + lock_clause("i", no_key=True), [item_id])
        row = cursor.fetchone()
    if row is None:
        return None
    return ItemState(row[0], row[1], row[2], bool(row[3]), bool(row[4]))


class Submitted(NamedTuple):
    """One submitted annotation of an item, as the decision rules read it."""

    labels: dict[int, frozenset[int]]  # facet id → category ids
    unsure: tuple[str, ...]  # keys of the facets marked unsure


_n, _a, _l = Table(Annotation, "n"), Table(Assignment, "a"), Table(AnnotationLabel, "l")
_LABEL_SETS = (
    f"SELECT {_n.id}, {_l.facet}, {_l.category}, {_n.unsure} FROM {_n}"
    f" JOIN {_a} ON {_a.id} = {_n.assignment} LEFT JOIN {_l} ON {_l.annotation} = {_n.id}"
    f" WHERE {_a.item} = %s AND {_n.status} = %s ORDER BY {_n.id}"
)


def submitted_annotations(item_id: int) -> list[Submitted]:
    """The item's submitted annotations in annotation order: facet id → category ids (an
    annotation with no label at all still counts, as an empty mapping) and the facets marked
    unsure, in one statement (the unsure list rides on each label row of its annotation)."""
    with connection.cursor() as cursor:
        cursor.execute(_LABEL_SETS, [item_id, Annotation.Status.SUBMITTED])
        rows = cursor.fetchall()
    found: dict[int, tuple[dict[int, set[int]], tuple[str, ...]]] = {}
    for annotation_id, facet, category, unsure in rows:
        if annotation_id not in found:
            found[annotation_id] = ({}, tuple(_json_list(unsure)))
        if facet is not None:
            found[annotation_id][0].setdefault(facet, set()).add(category)
    return [
        Submitted({f: frozenset(c) for f, c in sets.items()}, unsure)
        for sets, unsure in found.values()
    ]


def _json_list(value: Any) -> list[str]:
    """A JSON list column as read by a raw cursor: text on SQLite and, through Django's loader,
    on PostgreSQL; already a list where a driver decodes it."""
    if isinstance(value, (bytes, str)):
        value = json.loads(value)
    return [str(v) for v in value or ()]


def submitted_label_sets(item_id: int) -> list[dict[int, frozenset[int]]]:
    """facet id → category ids, per submitted annotation of the item in annotation order (an
    annotation with no label at all still counts, as an empty mapping)."""
    return [annotation.labels for annotation in submitted_annotations(item_id)]


def store_item_agreement(
    item_id: int, value: float, disagreeing: Sequence[int], unsure: Sequence[str] = ()
) -> ItemAgreement:
    """Insert or update the item's agreement row (INSERT … ON CONFLICT … DO UPDATE) with the
    keys of the facets marked unsure, then replace its disagreeing facets, without the ORM's
    compilation of either."""
    row = insert(
        ItemAgreement(item_id=item_id, value=value, unsure_facets=list(unsure)),
        on_conflict=["item"],
        update=["value", "unsure_facets", "computed_at"],
    )
    through = ItemAgreement.disagreeing_facets.through
    facets = [(facet,) for facet in disagreeing]
    replace_rows(through, "itemagreement", row.pk, ["facet"], facets)
    return row


def insert_decision(decision: Decision) -> Decision:
    """Store a new automatic decision in one INSERT … RETURNING, as save() would."""
    return insert(decision)


def replace_decision_labels(
    decision_id: int, rows: Sequence[tuple[int, int]], *, new: bool = False
) -> None:
    """Replace the decision's (facet id, category id) rows: a DELETE (none when the decision is
    `new`) and one multi-row INSERT."""
    replace_rows(DecisionLabel, "decision", decision_id, ["facet", "category"], rows, new=new)


def insert_change(change: Change) -> Change:
    """Store a history entry in one INSERT … RETURNING, as save() would: one follows every
    submit."""
    return insert(change)
