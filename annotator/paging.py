"""Pagination that stays fast on a million rows: an exact count while it is cheap, the query
planner's estimate past that.

Counting every match of a broad filter over a million issues reads most of the table (0.7 to 1 s
on 2 cores, benchmarks/page_scale.py); the planner's estimate (EXPLAIN, nothing run) costs a
millisecond. Where the planner expects at most `EXACT_COUNT_LIMIT` rows, they are counted,
which is then cheap. Where it expects more, a count that stops at the limit checks it (a few
milliseconds when the rows are that many; the planner's statistics lag a large import until
the next ANALYZE): under the limit that count is the answer, else the page shows "about N" and
says it is an estimate. A queryset can skip that check (`capped_count_is_cheap()` false: a
full-text search, whose capped count still builds the whole match bitmap). Off PostgreSQL
(the local SQLite demo) every count is exact.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import QuerySet

EXACT_COUNT_LIMIT = 10_000


def planned_rows(queryset: QuerySet[Any, Any]) -> int | None:
    """The rows PostgreSQL's planner expects `queryset` to return (nothing is run), or None on
    another database."""
    if connection.vendor != "postgresql":
        return None
    plan = json.loads(queryset.explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedPaginator(Paginator):
    """A Paginator whose `count` is the planner's estimate when that passes `exact_limit`
    (`count_is_estimate` then says so), else exact.

    A queryset whose rows carry the count (`rows_count_field()`: a window count over the
    matches, as a ranked search's) is counted from its first page, which is kept for page 1:
    the matches are found once, not once to count and once to list (a rare search at a
    million issues: 26 to 55 ms of the count's own GIN and heap reads)."""

    exact_limit = EXACT_COUNT_LIMIT
    count_is_estimate = False
    _first_page: list[Any] | None = None

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)  # counts, keeping the first page if it can
        if number == 1 and self._first_page is not None:
            return Page(self._first_page, number, self)
        return super().page(number)

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        field = getattr(rows, "rows_count_field", lambda: None)()
        if field is not None:
            self._first_page = list(rows[: self.per_page])
            return getattr(self._first_page[0], field) if self._first_page else 0
        estimate = planned_rows(rows) if isinstance(rows, QuerySet) else None
        if estimate is None or estimate <= self.exact_limit:
            return Paginator.count.func(self)  # type: ignore[attr-defined]
        assert isinstance(rows, QuerySet)
        check = getattr(rows, "capped_count_is_cheap", lambda: True)
        if check():
            seen = rows[: self.exact_limit + 1].count()
            if seen <= self.exact_limit:
                return seen
        self.count_is_estimate = True
        return max(estimate, self.exact_limit + 1)
