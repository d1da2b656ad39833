"""The REST API's page-number pagination, with the counts of annotator/paging.py."""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from .paging import EXACT_COUNT_LIMIT, EstimatedPaginator


class EstimatedPagination(PageNumberPagination):
    """The API's page-number pagination with EstimatedPaginator: `count` may be an estimate,
    and `count_is_estimate` says whether it is."""

    django_paginator_class = EstimatedPaginator

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
