"""Pages of a long, joined list whose rows are picked by id first.

The queue and the items page list up to 100,000 rows ordered through joins (round number,
position) with the issue, its repository and the decision beside each: asked plainly, PostgreSQL
may join every row of the study (each issue row with its ~2 KB body) before the sort picks 50.
Here the page is the list's query restricted to the ids of its slice — a subquery that sorts
the ids with only the joins the order needs — so the issue and the rest are joined for those
rows alone; still one query for the page.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from rest_framework.pagination import PageNumberPagination


class IdsFirstPaginator(Paginator):
    """A Paginator over an ordered queryset whose page is that queryset restricted to the ids
    of the page's slice (the same rows in the same order: the order must be total)."""

    def page(self, number: Any) -> Page:
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        ids = rows.select_related(None).prefetch_related(None).values("pk")[bottom:top]
        return Page(rows.filter(pk__in=ids), number, self)


class IdsFirstPagination(PageNumberPagination):
    """The API's page-number pagination over IdsFirstPaginator (same answers)."""

    django_paginator_class = IdsFirstPaginator
