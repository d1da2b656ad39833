"""A database that cannot be reached answers 503 "try again in a moment", never a 500 traceback.

While PostgreSQL restarts or fails over, every query raises OperationalError or InterfaceError.
Such a request gets a 503 with Retry-After: a short page, a small partial for htmx, or
`{"detail": …}` for the API. The broken connection is closed here, so the next request opens a
new one (settings' `conn_health_checks` also tests a reused connection before its first query):
the app recovers by itself once the database is back, without a restart.

Two ways in, for the two places the error is raised: `DatabaseUnavailableMiddleware` for errors
raised by a view, and `server_error` (the project's handler500) for the same errors raised by
middleware before or after the view, such as loading the session and the user, which is the
first query of most requests.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

logger = logging.getLogger(__name__)

DATABASE_ERRORS = (OperationalError, InterfaceError)
MESSAGE = "The database is unavailable; try again in a moment."
RETRY_AFTER_SECONDS = 5


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        logger.warning("database unavailable (%s %s): %s", request.method, request.path, exception)
        return database_unavailable(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a database error raised outside a view is a 503 too; anything else, the
    usual 500 page."""
    if isinstance(sys.exc_info()[1], DATABASE_ERRORS):
        return database_unavailable(request)
    return defaults.server_error(request)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """The 503 answer, rendered without a query (no user, session or context processors)."""
    _close_broken_connections()
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": MESSAGE}, status=503)
    else:
        htmx = request.headers.get("HX-Request") == "true"
        template = "503.html#database-unavailable" if htmx else "503.html"
        response = HttpResponse(render_to_string(template, {"message": MESSAGE}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def _close_broken_connections() -> None:
    for connection in connections.all(initialized_only=True):
        if connection.errors_occurred:
            connection.close()
