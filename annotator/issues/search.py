"""The full-text search index of issues (PostgreSQL), kept up to date after each write.

The import's upsert stores each issue's search vector with the row (sql.copy_upsert_issues), so
an imported issue is searchable when the import commits, with no second write of the row.
Writers leave `search_vector` NULL where they change an issue's comments (and rows stored before
an index change have none); `index_pending_issues` fills those in, in small committed batches,
after the write has committed, and the issue list says how many issues are not yet searchable.
What the vector holds is defined once, in sql.py ("the search index"); the batch statement is
sql.index_search_batch.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection, transaction

from .models import Issue
from .sql import SEARCH_TEXT_LIMIT, analyze_issues, index_search_batch

INDEX_BATCH_SIZE = 2000
# Indexing at least this many issues in one call refreshes the planner's statistics after it
# (the counts of the issue list read them: annotator/paging.py).
ANALYZE_AFTER = 1000


def search_is_indexed() -> bool:
    """Whether this database keeps a search index (PostgreSQL) or searches by substring."""
    return connection.vendor == "postgresql"


def pending_issue_count() -> int:
    """How many issues are not yet searchable (0 where there is no index to wait for)."""
    if not search_is_indexed():
        return 0
    return Issue.objects.filter(search_vector__isnull=True).count()


def refresh_statistics_on_commit(written: int) -> None:
    """Once the transaction that wrote `written` issues commits, refresh the planner's statistics
    if they are at least ANALYZE_AFTER: the issue list's counts read them (annotator/paging.py).
    An import stores its issues with their search vectors, so no indexing follows it to do so."""
    if search_is_indexed() and written >= ANALYZE_AFTER:
        transaction.on_commit(analyze_issues, robust=True)


def index_pending_issues(
    *, batch_size: int = INDEX_BATCH_SIZE, on_batch: Callable[[int], None] | None = None
) -> int:
    """Compute the search vectors that writers left empty; return how many were computed.

    Each batch commits on its own and skips rows another indexer holds, so indexers can run
    side by side and a stopped one loses at most one batch of work.
    """
    if not search_is_indexed():
        return 0
    total = 0
    while True:
        with transaction.atomic():
            done = index_search_batch(batch_size=batch_size, text_limit=SEARCH_TEXT_LIMIT)
        if done <= 0:
            if total >= ANALYZE_AFTER:
                analyze_issues()
            return total
        total += done
        if on_batch:
            on_batch(total)
