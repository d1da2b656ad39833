"""The studies app's hand-written SQL: the statements of the labeling loop.

Why not the ORM: these run on every request of the labeling loop — the annotate page, draft,
submit, next item — for 50 annotators at once in `benchmarks/labeling_load.py`, and composing
them with the ORM (query compilation, select_related's joins, building rows through the queryset
machinery) cost more CPU than PostgreSQL took to run them. Each function is one statement, or a
pair that always runs together.

Table and column names come from the models (`Table`, `Columns`): the statements are built when
this module is imported, so a renamed field fails every test, not a request.
`tests/studies/test_sql.py` holds each result equal, field by field, to the ORM query it
replaces, on PostgreSQL and on SQLite (the demo).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection

from annotator.issues.models import Issue, IssueComment, Repository
from annotator.sql import Columns, Table, insert, lock_clause, replace_rows
from taxonomy_app.models import CodebookVersion

from .models import (
    Annotation,
    AnnotationLabel,
    Assignment,
    Item,
    Membership,
    Round,
    ScreeningRank,
    Study,
)

Status = Assignment.Status

_a, _i, _s, _r, _n = (
    Table(Assignment, "a"),
    Table(Item, "i"),
    Table(Issue, "s"),
    Table(Repository, "r"),
    Table(Annotation, "n"),
)
_o, _t, _v = Table(Round, "o"), Table(Study, "t"), Table(CodebookVersion, "v")


# --- loading an assignment --------------------------------------------------------------------
class _Load:
    """A hand-written SELECT of several models' columns and the instances built back."""

    def __init__(self, parts: tuple[Columns, ...], joins: str) -> None:
        self.parts = parts
        self.sql = f"SELECT {', '.join(part.sql() for part in parts)} FROM {joins}"

    def one(self, params: Sequence[Any]) -> list[Any] | None:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        built, start = [], 0
        for part in self.parts:
            built.append(part.build(row, start))
            start += len(part.fields)
        return built


_PAGE = _Load(
    (
        Columns(Assignment, "a"),
        Columns(Item, "i"),
        Columns(Issue, "s", defer={"raw", "search_vector"}),
        Columns(Repository, "r"),
        Columns(Annotation, "n"),
    ),
    f"{_a} JOIN {_i} ON {_i.id} = {_a.item} JOIN {_s} ON {_s.id} = {_i.issue}"
    f" JOIN {_r} ON {_r.id} = {_s.repository} LEFT JOIN {_n} ON {_n.assignment} = {_a.id}"
    f" WHERE {_a.id} = %s AND {_a.annotator} = %s",
)
_ROUND = _Load(
    (Columns(Round, "o"), Columns(Study, "t"), Columns(CodebookVersion, "v")),
    f"{_o} JOIN {_t} ON {_t.id} = {_o.study} JOIN {_v} ON {_v.id} = {_t.codebook_version}"
    f" WHERE {_o.id} = %s",
)
_WRITE = _Load(
    (
        Columns(Assignment, "a"),
        Columns(Item, "i"),
        Columns(Study, "t"),
        Columns(CodebookVersion, "v"),
    ),
    f"{_a} JOIN {_i} ON {_i.id} = {_a.item} JOIN {_t} ON {_t.id} = {_i.study}"
    f" JOIN {_v} ON {_v.id} = {_t.codebook_version} WHERE {_a.id} = %s AND {_a.annotator} = %s",
)


def own_assignment(assignment_id: int, annotator_id: int, *, page: bool) -> Assignment | None:
    """The annotator's assignment, or None (not theirs, or no such assignment), with its
    relations in place as `select_related` would set them.

    `page`: with everything the annotate page shows (item, issue without its raw JSON and search
    vector, repository, annotation, round, study, codebook version); else only what a write needs
    (item, study, codebook version). The page's eight tables are read in two queries of five and
    three: PostgreSQL plans one eight-table join in ~4 ms, two small ones in ~0.6 ms together
    (planning grows steeply with the number of tables)."""
    load = _PAGE if page else _WRITE
    built = load.one([assignment_id, annotator_id])
    if built is None:
        return None
    assignment: Assignment = built[0]
    item, *rest = built[1:]
    Assignment.item.field.set_cached_value(assignment, item)
    if page:
        issue, repository, annotation = rest
        Issue.repository.field.set_cached_value(issue, repository)
        Item.issue.field.set_cached_value(item, issue)
        Assignment.annotation.related.set_cached_value(assignment, annotation)
        if annotation is not None:
            Annotation.assignment.field.set_cached_value(annotation, assignment)
        round_, *rest = _ROUND.one([item.round_id]) or []
        Round.study.field.set_cached_value(round_, rest[0])
        Item.round.field.set_cached_value(item, round_)
    study, version = rest
    Study.codebook_version.field.set_cached_value(study, version)
    Item.study.field.set_cached_value(item, study)
    return assignment


_COMMENT = Columns(IssueComment, "c", defer={"raw", "content_hash", "key", "issue"})
_c = Table(IssueComment, "c")
_COMMENTS = (
    f"SELECT {_COMMENT.sql()} FROM {_c} WHERE {_c.issue} = %s ORDER BY {_c.created_at}, {_c.id}"
)


def issue_comments(issue_id: int) -> list[IssueComment]:
    """The issue's comments in thread order, with what the annotate page shows (not their raw
    JSON), built without the queryset machinery (one per page view, a thread can be long)."""
    with connection.cursor() as cursor:
        cursor.execute(_COMMENTS, [issue_id])
        return [_COMMENT.build(row, 0) for row in cursor.fetchall()]


_l = Table(AnnotationLabel)
_LABELS = f"SELECT {_l.facet}, {_l.category} FROM {_l} WHERE {_l.annotation} = %s"


def annotation_labels(annotation_id: int) -> dict[int, list[int]]:
    """Category ids by facet id of an annotation (one per annotate page view with a draft)."""
    labels: dict[int, list[int]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_LABELS, [annotation_id])
        for facet, category in cursor.fetchall():
            labels.setdefault(facet, []).append(category)
    return labels


# --- progress ---------------------------------------------------------------------------------
_PROGRESS = (
    f"SELECT COUNT(*) FILTER (WHERE {_a.status} = %s),"
    f" COUNT(*) FILTER (WHERE {_a.status} IN (%s, %s))"
    f" FROM {_a} JOIN {_i} ON {_i.id} = {_a.item} WHERE {_i.round} = %s AND {_a.annotator} = %s"
)


def annotator_round_counts(round_id: int, annotator_id: int) -> tuple[int, int]:
    """(submitted, submitted + in progress) assignments of the annotator in the round: the
    annotator's own figure on every annotate page (the ORM composed the aggregate slower than
    PostgreSQL answered it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _PROGRESS, [Status.SUBMITTED, Status.SUBMITTED, Status.ASSIGNED, round_id, annotator_id]
        )
        done, total = cursor.fetchone()
    return int(done), int(total)


# --- next item --------------------------------------------------------------------------------
_m = Table(Membership)
_LOCK_ANNOTATOR = f"SELECT 1 FROM {_m} WHERE {_m.study} = %s AND {_m.user} = %s AND {_m.role} = %s"


def lock_annotator(study_id: int, annotator_id: int) -> bool:
    """Lock the annotator's membership row of the study (FOR UPDATE); False when they are not
    one of its annotators. Serialises one annotator's "next item" requests (two tabs take one
    item, not two). On every submit, as the rest of "next item"."""
    with connection.cursor() as cursor:
        cursor.execute(
            _LOCK_ANNOTATOR + lock_clause(), [study_id, annotator_id, Membership.Role.ANNOTATOR]
        )
        return cursor.fetchone() is not None


_OPEN = Columns(Assignment, "a")
_OPEN_ASSIGNMENT = (
    f"SELECT {_OPEN.sql()} FROM {_a} JOIN {_i} ON {_i.id} = {_a.item}"
    f" WHERE {_i.study} = %s AND {_a.annotator} = %s AND {_a.status} = %s"
    f" ORDER BY {_a.assigned_at}, {_a.id} LIMIT 1"
)


def open_assignment(study_id: int, annotator_id: int) -> Assignment | None:
    """The annotator's oldest assignment in progress in the study, if any."""
    with connection.cursor() as cursor:
        cursor.execute(_OPEN_ASSIGNMENT, [study_id, annotator_id, Status.ASSIGNED])
        row = cursor.fetchone()
    return _OPEN.build(row, 0) if row else None


_given = Table(Assignment, "g")
_shut = Table(Round, "c")
_k = Table(ScreeningRank, "k")
_FREE_ITEM = (
    f"SELECT {_i.id}, {_i.round}, {_i.active_count},"
    f" (SELECT {_k.rank} FROM {_k} WHERE {_k.item} = {_i.id}),"
    f" EXISTS (SELECT 1 FROM {_k} WHERE {_k.round} = {_i.round})"
    f" FROM {_i}"
    f" WHERE {_i.study} = %s AND {_i.active_count} < {_i.quota} AND NOT EXISTS"
    f" (SELECT 1 FROM {_given} WHERE {_given.item} = {_i.id} AND {_given.annotator} = %s)"
    f" AND NOT EXISTS (SELECT 1 FROM {_shut}"
    f" WHERE {_shut.id} = {_i.round} AND {_shut.closed_at} IS NOT NULL)"
    f" ORDER BY {_i.stage}, {_i.round}, {_i.submitted_count} DESC, {_i.active_count} DESC,"
    f" {_i.position}"
    " LIMIT 1"
)


class FreeSlot(NamedTuple):
    """The item `free_slot` found, with what decides whether a ranked item replaces it."""

    item_id: int
    round_id: int
    active_count: int
    rank: int | None  # its rank in ScreeningRank, if it has one
    ranked: bool  # its round has ranks (a prioritised screening round with a model or audit)


def free_slot(study_id: int, annotator_id: int) -> FreeSlot | None:
    """The next item for the annotator — the first (training and calibration rounds
    before main ones, `Item.stage`, then by round) with a free slot that was
    never given to them, in a round not closed, most submitted and live assignments first (items
    complete breadth first), then the seeded order — its row locked FOR UPDATE SKIP LOCKED
    (concurrent requests each get another item instead of queueing on one), or None.

    The partial index item_pool holds exactly these rows in this order, so the scan stops at
    the first item the annotator was never given. Rounds are numbered in creation order, so
    round_id orders them without a join. The lock is FOR NO KEY UPDATE — what the UPDATE of
    the item's counter takes anyway —, which conflicts with another hand-out's but not with the
    KEY SHARE locks that rows referencing the item take: a retrain writing the round's ranks
    (a foreign key to every ranked item) would otherwise hide every ranked item from SKIP LOCKED
    until it commits, and screeners would be told nothing is left. The rank and the round's
    "ranked" flag are read for
    the one row returned (two index probes of ScreeningRank), so that next_assignment asks for
    the top-ranked item only in a ranked round."""
    with connection.cursor() as cursor:
        cursor.execute(
            _FREE_ITEM + lock_clause("i", skip_locked=True, no_key=True), [study_id, annotator_id]
        )
        row = cursor.fetchone()
    if row is None:
        return None
    item_id, round_id, active, rank, ranked = row
    return FreeSlot(int(item_id), int(round_id), int(active), rank, bool(ranked))


def free_item(study_id: int, annotator_id: int) -> int | None:
    """The id of `free_slot`'s item, or None."""
    slot = free_slot(study_id, annotator_id)
    return None if slot is None else slot.item_id


_TOP_RANKED = (
    f"SELECT {_i.id}, {_k.rank} FROM {_k} JOIN {_i} ON {_i.id} = {_k.item}"
    f" WHERE {_k.round} = %s AND {_i.active_count} < {_i.quota} AND NOT EXISTS"
    f" (SELECT 1 FROM {_given} WHERE {_given.item} = {_i.id} AND {_given.annotator} = %s)"
    f" ORDER BY {_k.rank} LIMIT 1"
)


def top_ranked_item(round_id: int, annotator_id: int) -> tuple[int, int] | None:
    """(item id, rank) of the round's best-ranked item with a free slot never given to the
    annotator, its row locked FOR UPDATE SKIP LOCKED as in `free_slot`, or None.

    Asked only when `free_slot` found a fresh item (no live assignment) of a ranked round: then
    no item of the round is half-screened and free for this annotator (those sort first), so
    breadth first still holds and the model's order decides among fresh items. The scan walks
    the index screening_rank_order and stops at the first free item: the items screened since
    the last retrain, still at the top, are passed over (at most a retrain's worth)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _TOP_RANKED + lock_clause("i", skip_locked=True, no_key=True), [round_id, annotator_id]
        )
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


_TAKE_SLOT = (
    f"UPDATE {_i.bare()} SET {_i.c('active_count')} = {_i.c('active_count')} + 1"
    f" WHERE {_i.c('id')} = %s"
)


def create_assignment(item_id: int, annotator_id: int, *, rank: int | None = None) -> Assignment:
    """A new assignment of the item to the annotator (with the item's screening rank, if it
    has one), and the item's live counter up by one (the CHECK on the counters refuses a slot
    past the quota). Two statements without the ORM's compilation of an insert and an F()
    update: they run on every submit that moves on."""
    assignment = insert(Assignment(item_id=item_id, annotator_id=annotator_id, screening_rank=rank))
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_SLOT, [item_id])
    return assignment


# --- writing an annotation --------------------------------------------------------------------
_own = Table(Assignment)
_LOCK_ASSIGNMENT = (
    f"SELECT {_a.annotator}, {_a.status}, {_o.closed_at} IS NOT NULL FROM {_a}"
    f" JOIN {_i} ON {_i.id} = {_a.item} JOIN {_o} ON {_o.id} = {_i.round} WHERE {_a.id} = %s"
)


def lock_assignment_row(assignment_id: int) -> tuple[int, str, bool] | None:
    """Lock the assignment's row (FOR UPDATE OF it alone: the item and round rows stay free)
    and return (annotator id, status, whether its round is closed) as they are under the lock,
    or None when it no longer exists. On every draft save and submit: the round's state rides
    on the lock's query (two primary-key joins) rather than costing one more."""
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_ASSIGNMENT + lock_clause("a"), [assignment_id])
        row = cursor.fetchone()
    return None if row is None else (int(row[0]), str(row[1]), bool(row[2]))


_MARK_SUBMITTED = (
    f"UPDATE {_own.bare()} SET {_own.status} = %s, {_own.finished_at} = %s,"
    f" {_own.touched_at} = %s WHERE {_own.id} = %s"
)


def mark_submitted(assignment_id: int, now: datetime) -> None:
    """Set the assignment submitted, finished and touched at `now` (a first submit)."""
    with connection.cursor() as cursor:
        cursor.execute(_MARK_SUBMITTED, [Status.SUBMITTED, now, now, assignment_id])


_COUNT_SUBMIT = (
    f"UPDATE {_i.bare()} SET {_i.c('submitted_count')} = {_i.c('submitted_count')} + 1"
    f" WHERE {_i.c('id')} = %s RETURNING {_i.c('submitted_count')} >= {_i.c('quota')},"
    f" {_i.c('round')}, (SELECT {_shut.kind} FROM {_shut}"
    f" WHERE {_shut.id} = {_i.bare()}.{_i.c('round')}) = %s"
)


def count_submit(item_id: int) -> bool:
    """Count a first submit on its item; True when that makes the item complete (see
    `count_submit_in`)."""
    return count_submit_in(item_id)[0]


def count_submit_in(item_id: int) -> tuple[bool, int, bool]:
    """Count a first submit on its item: (whether that makes the item complete, the item's
    round id, whether that round is a screening round). One statement (the ORM's update cannot
    return the new count): the item's row lock it takes is held to the end of the submit, so
    the answer stays true, and an item still waiting for annotations costs no further query
    for its decision; the round's kind rides on it (one primary-key probe) so that a
    screening decision can wake the retrain job without a query on every other submit."""
    with connection.cursor() as cursor:
        cursor.execute(_COUNT_SUBMIT, [item_id, Round.Kind.SCREENING])
        complete, round_id, screening = cursor.fetchone()
    return bool(complete), int(round_id), bool(screening)


_done = Table(Item, "d")
_CLOSE_COMPLETE_ROUND = (
    f"UPDATE {_o.bare()} SET {_o.c('closed_at')} = %s, {_o.c('closed_reason')} = %s"
    f" WHERE {_o.c('id')} = (SELECT {_done.round} FROM {_done} WHERE {_done.id} = %s)"
    f" AND {_o.c('closed_at')} IS NULL AND NOT EXISTS (SELECT 1 FROM {_i}"
    f" WHERE {_i.round} = {_o.bare()}.{_o.c('id')} AND {_i.submitted_count} < {_i.quota})"
)


def close_complete_round(item_id: int, now: datetime) -> bool:
    """Close the item's round (reason "complete") if it is open and every item of it reached
    its quota; True when this closed it. Run after the commit of a submit that completed an
    item: of two submits completing a round's last items at once, the later commit sees both.
    One statement, probing the partial index item_incomplete, as agreement/sql.py
    completed_round does, rather than an ORM Exists that runs on the labeling loop."""
    with connection.cursor() as cursor:
        cursor.execute(_CLOSE_COMPLETE_ROUND, [now, Round.Closed.COMPLETE, item_id])
        return bool(cursor.rowcount == 1)


def upsert_annotation(annotation: Annotation, *, update: Sequence[str]) -> Annotation:
    """Insert the assignment's annotation, or update its `update` fields if it has one (INSERT
    … ON CONFLICT … DO UPDATE, as bulk_create(update_conflicts=True) would), in one statement
    without the ORM's compilation: on every draft save and submit."""
    return insert(annotation, on_conflict=["assignment"], update=update)


def replace_annotation_labels(
    annotation_id: int, rows: Sequence[tuple[int, int]], *, new: bool = False
) -> None:
    """Replace the annotation's (facet id, category id) rows: a DELETE (none when `new`) and one
    multi-row INSERT, on every draft save and submit."""
    replace_rows(
        AnnotationLabel, "annotation_id", annotation_id, ["facet_id", "category_id"], rows, new=new
    )


# --- selection --------------------------------------------------------------------------------
def analyze_items() -> None:
    """Refresh PostgreSQL's statistics of the item table after a selection added many rows, so
    that "next item" is planned over the partial index item_pool at once rather than after
    autovacuum's next pass. ANALYZE has no ORM form."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Table(Item).bare()}")


# --- rule breaks ------------------------------------------------------------------------------
class RulePredicate(NamedTuple):
    """A rule as a condition on one annotation's label set, over `f` (the ids of its labels'
    facets) and `p` (of their categories: a category is one code of one facet of one version),
    with its parameters."""

    sql: str
    params: list[Any]


def has_facet(facet_ids: Collection[int]) -> RulePredicate:
    """A label in one of these facets (a facet key's facets in the versions checked)."""
    return RulePredicate("t.f && %s::bigint[]", [sorted(facet_ids)])


def has_code(category_ids: Collection[int]) -> RulePredicate:
    """A label with one of these categories."""
    return RulePredicate("t.p && %s::bigint[]", [sorted(category_ids)])


def more_codes_than(category_ids: Collection[int], most: int) -> RulePredicate:
    """More than `most` labels with these categories: different codes, as an annotation's
    labels are of its own version's categories and never the same one twice."""
    return RulePredicate(
        "(SELECT count(*) FROM unnest(t.p) e WHERE e = ANY(%s::bigint[])) > %s",
        [sorted(category_ids), most],
    )


def both(
    first: RulePredicate, second: RulePredicate, *, negate_second: bool = False
) -> RulePredicate:
    second_sql = f"NOT ({second.sql})" if negate_second else f"({second.sql})"
    return RulePredicate(f"({first.sql}) AND {second_sql}", first.params + second.params)


def either(first: RulePredicate, second: RulePredicate) -> RulePredicate:
    return RulePredicate(f"({first.sql}) OR ({second.sql})", first.params + second.params)


_n, _a2, _i2 = Table(Annotation, "n"), Table(Assignment, "a"), Table(Item, "i")
_lb = Table(AnnotationLabel, "l")
_RULE_SCOPE = f"""
WITH scope AS MATERIALIZED (
    SELECT {_n.id} AS id, {_i2.study} AS study
    FROM {_n} JOIN {_a2} ON {_a2.id} = {_n.assignment} JOIN {_i2} ON {_i2.id} = {_a2.item}
    WHERE {_n.status} = %s AND {_n.codebook_version} = ANY(%s) AND {_i2.study} IN (
        SELECT {_m.study} FROM {_m} WHERE {_m.user} = %s AND {_m.role} = %s)
), sets AS (
    SELECT {_lb.annotation} AS id, array_agg({_lb.facet}) AS f, array_agg({_lb.category}) AS p
    FROM {_lb} JOIN scope ON scope.id = {_lb.annotation}
    GROUP BY {_lb.annotation}
)
SELECT {{columns}} FROM (
    SELECT scope.id, scope.study,
        coalesce(sets.f, '{{{{}}}}') AS f, coalesce(sets.p, '{{{{}}}}') AS p
    FROM scope LEFT JOIN sets ON sets.id = scope.id
) t"""


def rule_breaks(
    version_ids: Sequence[int],
    owner_id: int,
    predicates: Sequence[RulePredicate],
    offsets: Sequence[int],
    shown: int,
) -> list[tuple[int, list[int]]]:
    """Per predicate: how many submitted annotations made with these versions, in the studies
    `owner_id` owns, meet it, and the ids of `shown` of them from its offset (by study, then
    id). Why SQL: each annotation's label set is read once, as two arrays of ids, and every
    rule is checked on them in one pass; the ORM's form (a join over the labels per rule,
    `StudyLabelUsage._rule_breaks_by_orm`) made PostgreSQL probe the labels once per
    annotation and rule: a minute for the ten rules of the seed codebook at 100,000 items.
    The sets are of ids, not of facet keys and codes, so nothing joins the codebook's tables
    or builds a string per label: 2.1 s became 1.4 s at 310,000 annotations and 670,000
    labels. That is still seconds for a page: past FIGURES_INLINE_MAX_ITEMS annotations a
    figures job runs it (StudyLabelUsage.rule_breaks_as_of)."""
    if not predicates:
        return []
    columns: list[str] = []
    params: list[Any] = []
    for predicate, offset in zip(predicates, offsets, strict=True):
        columns.append(f"count(*) FILTER (WHERE {predicate.sql})")
        columns.append(
            f"(array_agg(t.id ORDER BY t.study, t.id) FILTER (WHERE {predicate.sql}))"
            f"[{int(offset) + 1}:{int(offset) + int(shown)}]"
        )
        params += predicate.params + predicate.params
    sql = _RULE_SCOPE.format(columns=", ".join(columns))
    scope: list[Any] = [
        Annotation.Status.SUBMITTED,
        list(version_ids),
        owner_id,
        Membership.Role.OWNER,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, scope + params)
        row = cursor.fetchone()
    return [(int(row[2 * n]), list(row[2 * n + 1] or [])) for n in range(len(predicates))]
