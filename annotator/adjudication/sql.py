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
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, Round, Study
from taxonomy_app.models import Category, Facet

from .models import AdjudicationSettings, Change, Decision, DecisionLabel, ItemAgreement

_Differs = ItemAgreement.disagreeing_facets.through


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


# --- disagreement analytics (read-only; PostgreSQL, analytics.py keeps the ORM path elsewhere) ---
class ConfusedPair(NamedTuple):
    round: int  # the round's number
    facet: str  # the facet's key
    facet_order: int
    facet_name: str
    kind: str  # the facet's kind (single or multi)
    a: tuple[str, ...]  # one annotator's label set (category codes, sorted)
    b: tuple[str, ...]  # another's, a < b
    items_with: int  # items where both sets were chosen
    items: list[int]  # the first ITEM_LINKS of them, by id


_p_item, _p_round = Table(Item, "i"), Table(Round, "r")
_p_agreement, _p_differs = Table(ItemAgreement, "g"), Table(_Differs, "d")
_p_assignment, _p_annotation = Table(Assignment, "a"), Table(Annotation, "n")
_p_label, _p_facet, _p_category = (
    Table(AnnotationLabel, "l"),
    Table(Facet, "f"),
    Table(Category, "c"),
)
_C = 'COLLATE "C"'  # codes compare by code point, as Python compares str
# A label set travels as one string, its sorted codes joined by U+0001: lower than any character
# a code holds, so two joined sets compare (under "C") as their tuples of codes do, and a set of
# label sets is one array.
_SEP = "E'\\x01'"
_CONFUSED_PAIRS = f"""
WITH answer AS (
    SELECT {_p_item.id} AS item, {_p_round.number} AS round, {_p_facet.key} AS facet,
           max({_p_facet.order}) AS facet_order, max({_p_facet.name}) AS facet_name,
           max({_p_facet.kind}) AS kind,
           array_to_string(
               array_agg(DISTINCT {_p_category.code} {_C} ORDER BY {_p_category.code} {_C}),
               {_SEP}
           ) AS codes
    FROM {_p_item}
    JOIN {_p_round} ON {_p_round.id} = {_p_item.round}
    JOIN {_p_agreement} ON {_p_agreement.item} = {_p_item.id}
    JOIN {_p_differs} ON {_p_differs.itemagreement} = {_p_agreement.id}
    JOIN {_p_assignment} ON {_p_assignment.item} = {_p_item.id}
    JOIN {_p_annotation} ON {_p_annotation.assignment} = {_p_assignment.id}
    JOIN {_p_label} ON {_p_label.annotation} = {_p_annotation.id}
                   AND {_p_label.facet} = {_p_differs.facet}
    JOIN {_p_facet} ON {_p_facet.id} = {_p_label.facet}
    JOIN {_p_category} ON {_p_category.id} = {_p_label.category}
    WHERE {_p_item.study} = %(study)s AND {_p_annotation.status} = %(submitted)s
      AND (%(round)s::bigint IS NULL OR {_p_item.round} = %(round)s::bigint)
    GROUP BY {_p_item.id}, {_p_round.number}, {_p_facet.key}, {_p_annotation.id}
), chosen AS (
    SELECT item, round, facet, max(facet_order) AS facet_order,
           max(facet_name) AS facet_name, max(kind) AS kind,
           array_agg(DISTINCT codes {_C} ORDER BY codes {_C}) AS sets
    FROM answer GROUP BY item, round, facet
    HAVING count(DISTINCT codes) > 1
), pair AS (
    SELECT round, facet, max(facet_order) AS facet_order,
           max(facet_name) AS facet_name, max(kind) AS kind,
           x.a, x.b, count(*) AS n,
           (array_agg(item ORDER BY item))[1:%(links)s] AS items
    FROM chosen CROSS JOIN LATERAL (
        SELECT u.codes AS a, v.codes AS b
        FROM unnest(chosen.sets) WITH ORDINALITY AS u(codes, at)
        JOIN unnest(chosen.sets) WITH ORDINALITY AS v(codes, at) ON u.at < v.at
    ) x
    GROUP BY round, facet, x.a, x.b
)
SELECT round, facet, facet_order, facet_name, kind,
       string_to_array(a, {_SEP}), string_to_array(b, {_SEP}), n, items FROM (
    SELECT pair.*, row_number() OVER (
        PARTITION BY round, facet ORDER BY n DESC, a {_C}, b {_C}
    ) AS rank FROM pair
) ranked
WHERE rank <= %(top)s
ORDER BY round, facet, rank
"""


def confused_pairs(study_id: int, round_id: int | None, top: int, links: int) -> list[ConfusedPair]:
    """Per round and facet key, the `top` most frequent pairs of different label sets chosen by
    two annotators of the same item, in a facet the item's annotators differ in, each with the
    first `links` items (by id) it occurs in; ordered by round, facet key and rank (count
    descending, then the pair). An annotator who chose nothing in the facet adds no pair.

    Why SQL: the ORM path reads one row per label of every disagreeing facet into Python (over
    300,000 at 100,000 items, seconds); here PostgreSQL builds the label sets and counts the pairs
    and returns at most `top` rows per round and facet. PostgreSQL only (array_agg, label sets
    compared under the "C" collation as Python compares tuples of str).

    Each item's different label sets in a facet are gathered into one array and paired within
    it, rather than by joining the 140,000 (item, facet, set) rows of a 100,000-item study to
    themselves, which sorted both sides on disk: 3.7-4.7 s → 2.5-3.4 s on 2 busy cores (load
    6-8). What remains is mostly reading the 230,000 labels of the disagreeing facets and
    building each annotation's set."""
    params = {
        "study": study_id,
        "round": round_id,
        "submitted": Annotation.Status.SUBMITTED,
        "top": top,
        "links": links,
    }
    with connection.cursor() as cursor:
        cursor.execute(_CONFUSED_PAIRS, params)
        rows = cursor.fetchall()
    return [
        ConfusedPair(r, f, o, name, kind, tuple(a), tuple(b), n, list(i))
        for r, f, o, name, kind, a, b, n, i in rows
    ]


_f_item, _f_agreement, _f_decision = Table(Item), Table(ItemAgreement), Table(Decision)
_FINGERPRINT = (
    f"SELECT (SELECT count(*) FROM {_f_item} WHERE {_f_item.study} = %s"
    f" AND ({_f_item.round} = %s OR %s IS NULL)),"
    f" (SELECT count(*) FROM {_f_agreement}),"
    f" (SELECT max({_f_agreement.computed_at}) FROM {_f_agreement}),"
    f" (SELECT count(*) FROM {_f_decision}),"
    f" (SELECT max({_f_decision.updated_at}) FROM {_f_decision})"
)


def adjudication_fingerprint(study_id: int, round_id: int | None) -> tuple[Any, ...]:
    """What any write the disagreement analytics depend on changes: the study's (or round's)
    items counted, and over every study the agreement rows and decisions counted with the
    newest agreement computation and decision change (each newest value one index probe).

    Why SQL and every study: the same figures for the study's own rows join 100,000 items to
    their agreements and decisions on each page view (over 100 ms at 20,000 items on 2 busy
    cores); over the whole tables they are five index reads in one statement. A write in another
    study then computes this study's figures again, which is correct, only not needed."""
    with connection.cursor() as cursor:
        cursor.execute(_FINGERPRINT, [study_id, round_id, round_id])
        row = cursor.fetchone()
    return tuple(row)
