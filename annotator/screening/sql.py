"""The screening app's hand-written SQL: rewriting a round's table of ranks, and reading the
state of a round's screened items for the stopping panel (`screened_rows`, its own why).

Rewriting the ranks, why not the ORM: a retrain rewrites the rank of every unscreened item
(10,000, 100,000) while screeners are being handed items from the same table. `bulk_create`
sends the rows in batches of parameters (100,000 rows: ~40 statements, 300,000 parameters); here
the ranks travel as two arrays in one INSERT … SELECT unnest(…), after one DELETE, in one
transaction, so a next-item request reads either the old order or the new one, never half of
each (a reader takes no lock on these rows: studies/sql.py top_ranked_item locks the item row
only). `tests/screening/test_sql.py` holds the result equal to the ORM's delete and
bulk_create.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection, transaction

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.sql import Table
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item, ScreeningRank

_k = Table(ScreeningRank)
# Two retrains of one round may finish together (the every-N trigger and the owner's button):
# without the lock the second's DELETE, whose snapshot predates the first's commit, leaves the
# first's new rows in place and its INSERT collides with them.
_LOCK = "SELECT pg_advisory_xact_lock(%s, %s)"
_RANKS_LOCK_SPACE = 19_019  # this statement's own advisory-lock namespace
_DELETE = f"DELETE FROM {_k} WHERE {_k.round} = %s"
_INSERT = (
    f"INSERT INTO {_k} ({_k.c('item')}, {_k.c('round')}, {_k.c('rank')})"
    " SELECT item, %s, rank FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(item, rank)"
)


def write_ranks(round_id: int, item_ids: Sequence[int]) -> int:
    """Replace the round's ranks by `item_ids` in order (the first gets rank 1); returns how
    many were written. Writers of one round take turns (a transaction-level advisory lock).
    SQLite (the demo, one process) takes the ORM's path."""
    with transaction.atomic():
        if connection.vendor != "postgresql":
            ScreeningRank.objects.filter(round_id=round_id).delete()
            ScreeningRank.objects.bulk_create(
                ScreeningRank(item_id=pk, round_id=round_id, rank=n)
                for n, pk in enumerate(item_ids, start=1)
            )
            return len(item_ids)
        with connection.cursor() as cursor:
            cursor.execute(_LOCK, [_RANKS_LOCK_SPACE, round_id])
            cursor.execute(_DELETE, [round_id])
            cursor.execute(_INSERT, [round_id, [int(pk) for pk in item_ids]])
    return len(item_ids)


# --- the stopping panel's screened items ----------------------------------------------------------
_i, _x, _a = Table(Item, "i"), Table(Assignment, "x"), Table(Annotation, "a")
_l, _d, _dl = Table(AnnotationLabel, "l"), Table(Decision, "d"), Table(DecisionLabel, "dl")
_SCREENED = (
    f"SELECT {_i.id}, {_i.issue}, {_i.submitted_count}, s.completed_at,"
    " CASE WHEN dd.decided THEN dd.relevant ELSE c.chosen END"
    f" FROM {_i}"
    # When the item's last submitted screening came in.
    " CROSS JOIN LATERAL ("
    f"SELECT max({_a.submitted_at}) AS completed_at FROM {_x}"
    f" JOIN {_a} ON {_a.assignment} = {_x.id} AND {_a.status} = %(submitted)s"
    f" WHERE {_x.item} = {_i.id}) s"
    # Its decision, if any, and whether the decision has the relevant category.
    " CROSS JOIN LATERAL ("
    f"SELECT count({_d.id}) > 0 AS decided, bool_or({_dl.id} IS NOT NULL) AS relevant"
    f" FROM {_d} LEFT JOIN {_dl} ON {_dl.decision} = {_d.id} AND {_dl.category} = %(category)s"
    f" WHERE {_d.item} = {_i.id}) dd"
    # Undecided only (a one-time filter: most screened items have a decision): did a
    # screener choose the relevant category?
    " CROSS JOIN LATERAL ("
    f"SELECT count(*) > 0 AS chosen FROM {_x}"
    f" JOIN {_a} ON {_a.assignment} = {_x.id} AND {_a.status} = %(submitted)s"
    f" JOIN {_l} ON {_l.annotation} = {_a.id} AND {_l.category} = %(category)s"
    f" WHERE {_x.item} = {_i.id} AND NOT dd.decided) c"
    f" WHERE {_i.round} = %(round)s AND {_i.submitted_count} >= {_i.quota}"
)

ScreenedRow = tuple[int, int, int, datetime | None, bool]


def screened_rows(round_id: int, category_id: int) -> list[ScreenedRow]:
    """The round's screened items (all k screeners in), in item id order: (item id, issue id,
    submitted screenings, when the last was submitted, relevant), relevant as
    `decisions.round_items` reads it (the decision's category, else any screener's).

    Why not the ORM: the panel read the round's screenings as four sets joined over the whole
    round, and every item of it (the panel 1.3 to 1.7 s at 100,000 candidates with 5,000
    screened, on a loaded machine); as one query of Exists and Subquery annotations,
    PostgreSQL hashed whole tables (every label of the relevant category in the study: 1.4 s).
    Here the screened items come from their partial index (studies' item_complete) and each is
    read through its own index probes (LATERAL): ~110 ms for 5,000 on the same machine, the
    unscreened candidates never read. The planner takes a third of the round's items for
    screened (its default share for `submitted_count >= quota`) and would compile the
    statement for that (JIT, 0.5 s). `tests/screening/test_sql.py` holds the rows equal to
    the ORM's (decisions.round_items)."""
    params: dict[str, str | int] = {
        "submitted": str(Annotation.Status.SUBMITTED),
        "category": category_id,
        "round": round_id,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(_SCREENED, params)
        rows = cursor.fetchall()
    return sorted((pk, issue, n, at, bool(relevant)) for pk, issue, n, at, relevant in rows)
