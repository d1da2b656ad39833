"""Small query helpers shared by the apps' services."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import QuerySet

Row = TypeVar("Row")


def one_or_none(queryset: QuerySet[Any, Row]) -> Row | None:
    """The row of a query that matches at most one (a key lookup), or None.

    Unlike `.first()` it adds no ORDER BY: `.first()` orders by the model's Meta ordering, which
    Django compiles on every call (ordering by a foreign key follows that model's own ordering,
    with a join for each hop) and PostgreSQL then plans as ORDER BY … LIMIT 1, a search over
    sort orders. On the labeling path that cost more than the lookups themselves."""
    return next(iter(queryset.order_by()[:1]), None)
