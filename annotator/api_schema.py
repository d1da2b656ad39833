"""The OpenAPI document, generated once per process.

drf-spectacular's view walks every route and serializer on each request and renders the result
again (about a second on 2 cores, YAML being the slower half, benchmarks/page_scale.py). The
document depends only on the code (routes, serializers, settings; it is served public, so not on
who asks), which a deploy changes by starting new processes: each process keeps the rendered bytes
per format, API version and language, and answers later requests with them.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.http import HttpResponse
from django.utils import translation
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

logger = logging.getLogger(__name__)

# A client may vary the negotiated media type (`; indent=2`…): past this many variants the
# document is rendered per request again rather than kept.
MAX_KEPT = 16

_kept: dict[tuple[Any, ...], tuple[bytes, str, str]] = {}
_lock = threading.Lock()


class CachedSchemaView(SpectacularAPIView):
    """SpectacularAPIView answering from this process's copy of the rendered document."""

    def _get_schema_response(self, request: Request) -> HttpResponse:
        version = self.api_version or request.version or self._get_version_parameter(request)
        renderer = request.accepted_renderer
        key = (
            type(renderer),
            request.accepted_media_type,
            version,
            translation.get_language(),
            self.urlconf,
            self.serve_public,
        )
        kept = _kept.get(key)
        if kept is None:
            response = super()._get_schema_response(request)
            assert isinstance(response, Response)
            response.accepted_renderer = renderer
            response.accepted_media_type = request.accepted_media_type
            # set by DRF's finalize_response, which a cached answer skips; not in the stubs
            response.renderer_context = self.get_renderer_context()  # type: ignore[attr-defined]
            content = response.rendered_content
            kept = (content, response["Content-Type"], response["Content-Disposition"])
            with _lock:
                if len(_kept) < MAX_KEPT:
                    _kept[key] = kept
        content, content_type, disposition = kept
        return HttpResponse(
            content, content_type=content_type, headers={"Content-Disposition": disposition}
        )


def render_ahead() -> None:
    """Render the document now, in the two forms asked for (YAML, what a client that names no
    type gets, and JSON, what Swagger UI asks for with `?format=json`), so that no request waits
    for it: the server calls this as a process starts (wsgi.py). A failure here is left for the
    first request to meet and report."""
    from django.test import RequestFactory

    factory = RequestFactory()
    view = CachedSchemaView.as_view()
    for query in ({}, {"format": "json"}):
        try:
            view(factory.get("/api/schema/", query))
        except Exception:  # the request path renders it again and reports the error
            logger.exception("The API document could not be rendered ahead")


def forget_schema() -> None:
    """Drop the kept documents (tests that change the routes or settings)."""
    with _lock:
        _kept.clear()
