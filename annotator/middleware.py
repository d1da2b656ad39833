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
import re
import sys
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.multipartparser import MultiPartParserError
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve
from django.views import defaults

from annotator.params import BadParameter

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


# --- bad input: a 400 naming the parameter, before a view (or PostgreSQL) trips on it ---------
# PostgreSQL text cannot hold NUL; int() refuses numbers past this many digits (and "²", which
# str.isdigit() accepts): no parameter of the app is either, so none reaches a view.
NUMBER_MAX_DIGITS = sys.get_int_max_str_digits() or 4300
LONG_NUMBER = re.compile(rf"\d{{{NUMBER_MAX_DIGITS + 1},}}")


class BadInputMiddleware:
    """Answers 400 to a request whose path, query parameters or form fields hold a NUL byte or
    a number int() cannot read, naming the parameter; and to a view's BadParameter
    (annotator/params.py) with its message."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = bad_path(request.path_info) or bad_fields(request.GET, "query parameter")
        if problem is None and request.method == "POST" and _is_form(request):
            try:
                problem = bad_fields(request.POST, "form field")
            except MultiPartParserError as error:  # answered here as the view would: 400
                problem = f"the form could not be read: {error}"
        if problem is not None:
            return bad_request(request, problem)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, BadParameter):
            return bad_request(request, str(exception))
        return None


def bad_path(path: str) -> str | None:
    if "\x00" not in path:
        return None
    try:
        kwargs = resolve(path).kwargs
    except Resolver404:
        kwargs = {}
    named = [name for name, value in kwargs.items() if "\x00" in str(value)]
    where = f"URL parameter {named[0]!r}" if named else "the address"
    return f"{where} contains a NUL byte (\\x00)"


def bad_fields(fields: QueryDict, kind: str) -> str | None:
    """What is wrong with the first bad name or value of a query string or form, if any."""
    for name, values in fields.lists():
        if "\x00" in name:
            return f"a {kind} name contains a NUL byte (\\x00): {name.replace(chr(0), '?')[:40]!r}"
        for value in values:
            if problem := bad_value(value):
                return f"{kind} {name[:80]!r} {problem}"
    return None


def bad_value(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL byte (\\x00)"
    if LONG_NUMBER.search(value):
        return f"holds a number of more than {NUMBER_MAX_DIGITS} digits"
    if value.isdigit() and not value.isdecimal():
        return f"{value[:20]!r} is not a number in decimal digits"
    return None


def _is_form(request: HttpRequest) -> bool:
    return request.content_type in {"application/x-www-form-urlencoded", "multipart/form-data"}


def bad_request(request: HttpRequest, message: str) -> HttpResponse:
    """The 400 answer: `{"detail": …}` for the API, a short page (or its partial for htmx)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=400)
    htmx = request.headers.get("HX-Request") == "true"
    template = "bad_request.html#bad-request" if htmx else "bad_request.html"
    return HttpResponse(render_to_string(template, {"message": message}), status=400)


def login_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str:
    """The username django-axes records for a login attempt (settings.AXES_USERNAME_CALLABLE):
    the one typed, cut to its AccessAttempt column (255 characters), which a longer one would
    overflow. No account has a longer name (150 at most)."""
    typed = (credentials or {}).get("username") or request.POST.get("username") or ""
    return str(typed)[:255]
