"""The screening app's hand-written SQL: rewriting a round's table of ranks.

Why not the ORM: a retrain rewrites the rank of every unscreened item (10,000, 100,000) while
screeners are being handed items from the same table. `bulk_create` sends the rows in batches of
parameters (100,000 rows: ~40 statements, 300,000 parameters); here the ranks travel as two
arrays in one INSERT … SELECT unnest(…), after one DELETE, in one transaction, so a
next-item request reads either the old order or the new one, never half of each (a reader
takes no lock on these rows: studies/sql.py top_ranked_item locks the item row only).
`tests/screening/test_sql.py` holds the result equal to the ORM's delete and bulk_create.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction

from annotator.sql import Table
from annotator.studies.models import ScreeningRank

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
