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

from django.core.paginator import EmptyPage, Page, Paginator
from django.db import connection
from django.db.models import Q, QuerySet

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
    million issues: 26 to 55 ms of the count's own GIN and heap reads).

    An estimate can be short of the rows there are (the planner's statistics lag writes, and a
    join's selectivity is a guess: 60,251 for 102,427 decisions), so past it the pages are not
    bounded by it: any page that has rows is served, and each page reads one row more than it
    shows to know whether there is a next one. A page past the last row is EmptyPage, as Django
    answers past a counted end; `get_page` then serves the first."""

    exact_limit = EXACT_COUNT_LIMIT
    count_is_estimate = False
    _first_page: list[Any] | None = None

    def validate_number(self, number: Any) -> int:
        try:  # Django's checks (they count), but an estimated count does not bound the pages
            return super().validate_number(number)
        except EmptyPage:
            if not self.count_is_estimate or int(number) < 1:
                raise
            return int(number)

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)  # counts, keeping the first page if it can
        if number == 1 and self._first_page is not None:
            return Page(self._first_page, number, self)
        if not self.count_is_estimate:
            return super().page(number)
        bottom = (number - 1) * self.per_page
        rows = self.object_list[bottom : bottom + self.per_page + 1]
        return self._open_page(rows, number, may_be_empty=number == 1)

    def page_after(self, number: Any, past: Q) -> Page:
        """Page `number` as the rows `past` selects, the first `per_page` of them: the rows after
        the last of the page before, read from there rather than counted off from the first.
        EmptyPage when there are none; the number is checked as `page` checks it."""
        number = self.validate_number(number)
        assert isinstance(self.object_list, QuerySet)
        rows = self.object_list.filter(past)[: self.per_page + 1]
        return self._open_page(rows, number, may_be_empty=False)

    def _open_page(self, rows: Any, number: int, *, may_be_empty: bool) -> Page:
        """Page `number` of `rows`, a page's rows and the one after it if there is one;
        EmptyPage when there are none, unless the page `may_be_empty`."""
        rows = list(rows)
        if not rows and not may_be_empty:
            raise EmptyPage(self.error_messages["no_results"])
        return _OpenPage(rows[: self.per_page], number, self, more=len(rows) > self.per_page)

    def get_page(self, number: Any) -> Page:
        try:
            return super().get_page(number)
        except EmptyPage:  # past the last row of an estimated count
            return self.page(1)

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
            # Whether there are more than the limit does not depend on the order, which the
            # database would otherwise sort every row for (100,000 decisions: 135 → 16 ms).
            unordered = rows if rows.query.distinct_fields else rows.order_by()
            seen = unordered[: self.exact_limit + 1].count()
            if seen <= self.exact_limit:
                return seen
        self.count_is_estimate = True
        return max(estimate, self.exact_limit + 1)


class _OpenPage(Page):
    """A page of an estimated count: whether a next page exists is known from its rows (it read
    one more than it shows), and its last index from the rows it holds."""

    def __init__(self, rows: list[Any], number: int, paginator: Paginator, *, more: bool) -> None:
        super().__init__(rows, number, paginator)
        self._more = more

    def has_next(self) -> bool:
        return self._more

    def end_index(self) -> int:
        return self.start_index() + len(self.object_list) - 1
