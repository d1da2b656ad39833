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

from collections.abc import Sequence
from typing import NamedTuple

from django.db import connection

from annotator.sql import Table, insert, lock_clause, replace_rows
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, Study

from .models import AdjudicationSettings, Change, Decision, DecisionLabel, ItemAgreement


class ItemState(NamedTuple):
    submitted: int
    quota: int
    codebook_version_id: int
    majority_rule: bool


_i, _t, _s = Table(Item, "i"), Table(Study, "t"), Table(AdjudicationSettings, "s")
_ITEM_STATE = (
    f"SELECT {_i.submitted_count}, {_i.quota}, {_t.codebook_version}, {_s.majority_rule}"
    f" FROM {_i} JOIN {_t} ON {_t.id} = {_i.study}"
    f" LEFT JOIN {_s} ON {_s.study} = {_i.study} WHERE {_i.id} = %s"
)


def lock_item(item_id: int) -> ItemState | None:
    """Lock the item's row (FOR NO KEY UPDATE: rows that merely refer to it, assignments and
    history, are not held up) and return its submitted count and quota, its study's codebook
    version and whether the study decides by majority; None when there is no such item."""
    with connection.cursor() as cursor:
        cursor.execute(_ITEM_STATE + lock_clause("i", no_key=True), [item_id])
        row = cursor.fetchone()
    return None if row is None else ItemState(row[0], row[1], row[2], bool(row[3]))


_n, _a, _l = Table(Annotation, "n"), Table(Assignment, "a"), Table(AnnotationLabel, "l")
_LABEL_SETS = (
    f"SELECT {_n.id}, {_l.facet}, {_l.category} FROM {_n}"
    f" JOIN {_a} ON {_a.id} = {_n.assignment} LEFT JOIN {_l} ON {_l.annotation} = {_n.id}"
    f" WHERE {_a.item} = %s AND {_n.status} = %s ORDER BY {_n.id}"
)


def submitted_label_sets(item_id: int) -> list[dict[int, frozenset[int]]]:
    """facet id → category ids, per submitted annotation of the item in annotation order (an
    annotation with no label at all still counts, as an empty mapping)."""
    with connection.cursor() as cursor:
        cursor.execute(_LABEL_SETS, [item_id, Annotation.Status.SUBMITTED])
        rows = cursor.fetchall()
    found: dict[int, dict[int, set[int]]] = {}
    for annotation_id, facet, category in rows:
        sets = found.setdefault(annotation_id, {})
        if facet is not None:
            sets.setdefault(facet, set()).add(category)
    return [{f: frozenset(c) for f, c in sets.items()} for sets in found.values()]


def store_item_agreement(item_id: int, value: float, disagreeing: Sequence[int]) -> ItemAgreement:
    """Insert or update the item's agreement row (INSERT … ON CONFLICT … DO UPDATE), then
    replace its disagreeing facets, without the ORM's compilation of either."""
    row = insert(
        ItemAgreement(item_id=item_id, value=value),
        on_conflict=["item"],
        update=["value", "computed_at"],
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
