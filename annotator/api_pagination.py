"""The REST API's page-number pagination, with the counts of annotator/paging.py and, for lists
that name their order, `next` links that read on from the last row instead of counting rows off
from the first."""

from __future__ import annotations

from typing import Any

from django.core.paginator import InvalidPage
from django.db.models import F, Q, QuerySet
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from .paging import EXACT_COUNT_LIMIT, EstimatedPaginator

AFTER = "after"  # the query parameter of a `next` link's position (see EstimatedPagination)
_KEY = "page_key_{}"  # the annotations that carry each row's position


class EstimatedPagination(PageNumberPagination):
    """The API's page-number pagination with EstimatedPaginator: `count` may be an estimate,
    and `count_is_estimate` says whether it is.

    A view whose rows are sorted by integer fields that are unique together, ascending, names
    them as `keyset` (and sorts by them). Its `next` link then carries the position of the page's
    last row (`after=12.3071.40517`, the fields' values), and a page asked with `after` is the
    rows past it, read from there: `page` then only numbers it (for `previous`, which pages by
    number). Counting off the rows of every page before it grows with the page's depth; a
    script that follows `next` reads the last page as fast as the second (a million issues,
    100,000 items, benchmarks/README.md: 300,000 annotations' page 3,000 in 24 ms by its link,
    348 ms when it was counted off whole rows). A page asked by its number alone looks up the
    position before it with the keyset's fields only, then reads on from there (183 ms)."""

    django_paginator_class = EstimatedPaginator
    _keyset: tuple[str, ...] = ()

    def paginate_queryset(
        self, queryset: Any, request: Request, view: Any = None
    ) -> list[Any] | None:
        self._keyset = tuple(getattr(view, "keyset", ()))
        if not self._keyset or not isinstance(queryset, QuerySet):
            return super().paginate_queryset(queryset, request, view)
        queryset = queryset.annotate(
            **{_KEY.format(n): F(field) for n, field in enumerate(self._keyset)}
        )
        after, size = request.query_params.get(AFTER), self.get_page_size(request)
        number = request.query_params.get(self.page_query_param)
        if not size:
            return super().paginate_queryset(queryset, request, view)
        if after is not None:
            position = _position(after, self._keyset)
        elif number and number.isdigit() and int(number) > 1:
            # A page asked by its number: the position of the row before it, read with the
            # keyset's fields alone, then the rows past it. The whole rows of the pages before
            # are neither joined nor sorted, nor spilled to disk to sort them.
            bottom = (int(number) - 1) * size
            before = list(queryset.values_list(*self._keyset)[bottom - 1 : bottom])
            if not before:  # past the last row: as any page there
                return super().paginate_queryset(queryset, request, view)
            position = tuple(before[0])
        else:
            return super().paginate_queryset(queryset, request, view)
        self.request = request
        paginator = self.django_paginator_class(queryset, size)
        past = _past(self._keyset, position)
        try:
            self.page = paginator.page_after(number or 2, past)
        except InvalidPage as error:
            raise NotFound(self.invalid_page_message) from error
        return list(self.page)

    def get_next_link(self) -> str | None:
        link = super().get_next_link()
        if link is None or not self._keyset:
            return link
        last = self.page.object_list[-1]  # type: ignore[union-attr]
        values = (getattr(last, _KEY.format(n)) for n in range(len(self._keyset)))
        return replace_query_param(link, AFTER, ".".join(str(value) for value in values))

    def get_previous_link(self) -> str | None:
        link = super().get_previous_link()
        return None if link is None else remove_query_param(link, AFTER)

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        paginator = self.page.paginator  # type: ignore[union-attr]
        response.data["count_is_estimate"] = getattr(paginator, "count_is_estimate", False)
        return response

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        out = super().get_paginated_response_schema(schema)
        out["properties"]["count_is_estimate"] = {
            "type": "boolean",
            "description": "whether `count` is the database's estimate (past "
            f"{EXACT_COUNT_LIMIT:,} rows) rather than an exact count",
        }
        return out

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        if getattr(view, "keyset", ()):
            parameters.append(
                {
                    "name": AFTER,
                    "required": False,
                    "in": "query",
                    "description": "the position of the last row of the page before, as the "
                    "`next` link gives it: the page is the rows past it (fast at any depth), "
                    "and `page` only numbers it",
                    "schema": {"type": "string"},
                }
            )
        return parameters


def _position(text: str, keyset: tuple[str, ...]) -> tuple[int, ...]:
    """The values of `after`, one integer per field of the keyset; ValidationError else."""
    parts = text.split(".")
    try:
        if len(parts) != len(keyset):
            raise ValueError
        return tuple(int(part) for part in parts)
    except ValueError:
        detail = f"must be {len(keyset)} whole numbers joined by dots, as a `next` link gives it"
        raise ValidationError({AFTER: [detail]}) from None


def _past(keyset: tuple[str, ...], values: tuple[int, ...]) -> Q:
    """The rows whose keyset sorts after `values`: (a, b, c) > (x, y, z), with a >= x beside it
    so that an index on the fields is entered at x rather than read from its start."""
    past = Q(**{f"{keyset[-1]}__gt": values[-1]})
    for field, value in zip(keyset[-2::-1], values[-2::-1], strict=True):
        past = Q(**{f"{field}__gt": value}) | (Q(**{field: value}) & past)
    return Q(**{f"{keyset[0]}__gte": values[0]}) & past
