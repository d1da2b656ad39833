"""Bad input on any route is a 4xx with a message, never a 500: every route the URL resolver
knows (the permission matrix's table, tests/security/test_permission_matrix.py) is sent, as a
role its rule admits, GET with hostile query parameters, POST with hostile form fields and, on
the API, POST/PUT/PATCH with hostile JSON bodies; and a NUL byte in its URL parameters.

The hostile values: a NUL byte, "²" (a digit to str.isdigit(), not to int()), a 5,000-digit
number (past Python's 4,300-digit int() limit), 2**31 (past a PostgreSQL integer), "abc", -1 and
a 6,000-character string. Each request sends one value in every parameter name the app reads
(query parameters, every declared form and serializer field, the scene's facet fields), so a
route that reads any of them reads the value. JSON bodies: nested 100,000 deep, NUL strings,
huge numbers, wrong types. Every failure is collected and reported in one assertion naming the
route, the fuzz case and the status. Each request runs in a savepoint rolled back afterwards.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django import forms
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.test.utils import override_settings
from rest_framework import serializers

from annotator.exports.rows import FILTER_KEYS
from annotator.issues.models import ISSUE_FILTERS
from taxonomy_app.models import Facet
from tests.security.matrix import WRITE, Case, url_of
from tests.security.matrix_scene import RoleClients, Scene, body_text, build_scene
from tests.security.test_permission_matrix import CASES

pytestmark = pytest.mark.django_db

# Who sends a route's requests: the first role of this order that the route's rule admits.
PREFERRED = ("owner", "staff", "annotator", "adjudicator", "peer", "outsider", "anonymous")

VALUES: dict[str, str] = {
    "nul": "a\x00b",
    "superscript-two": "²",
    "5000-digits": "9" * 5000,
    "2**31": str(2**31),
    "abc": "abc",
    "-1": "-1",
    "long": "x" * 6000,
}
# The query parameters the app's views read (besides the filters, below).
QUERY = (
    "page",
    "round",
    "q",
    "sort",
    "facet",
    "level",
    "level-symptom",
    "stage",
    "sample_size",
    "seed",
    "k",
    "item",
    "status",
    "format",
    "download",
    "chart",
    "methods",
    "codebook",
    "study",
    "next",
    "o",
    "p",
    "e",
    "id",
    "limit",
    "offset",
)


def declared_fields() -> list[str]:
    """Every field name of the app's forms and serializers (annotator/, taxonomy_app/)."""
    names: set[str] = set()
    for base in (forms.BaseForm, serializers.Serializer):
        for cls in _subclasses(base):
            if not cls.__module__.startswith(("annotator.", "taxonomy_app.")):
                continue
            if issubclass(cls, forms.BaseForm):
                names |= set(cls.base_fields)  # type: ignore[attr-defined]
            elif not inspect.isabstract(cls):
                names |= set(getattr(cls, "_declared_fields", {}))
                meta = getattr(cls, "Meta", None)
                fields = getattr(meta, "fields", ())
                names |= set(fields) if isinstance(fields, (list, tuple)) else set()
    return sorted(names)


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def fuzz_json(fields: list[str]) -> dict[str, str]:
    """Hostile JSON bodies, as text (a 5,000-digit number cannot pass through json.dumps)."""

    def each(value: str) -> str:
        return "{" + ", ".join(f"{json.dumps(name)}: {value}" for name in fields) + "}"

    return {
        "nested-100000": '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nul-strings": each(json.dumps("a\x00b")),
        "nul-escape-keys": json.dumps({"a\x00b": 1, **dict.fromkeys(fields, "x")}),
        "5000-digits": each("9" * 5000),
        "2**31": each(str(2**31)),
        "-1": each("-1"),
        "superscript-two": each(json.dumps("²")),
        "objects": each('{"a": [1, {"b": null}]}'),
        "lists": each("[[1], [2]]"),
        "booleans": each("true"),
        "top-level-list": "[1, 2, 3]",
        "top-level-string": '"a\\u0000b"',
        "not-json": "{'a': 1",
    }


@dataclass(frozen=True)
class Request:
    role: str
    method: str
    url: str
    case: str  # what is fuzzed, for the report
    query: dict[str, str] | None = None
    form: dict[str, Any] | None = None
    body: str | None = None


class FuzzClients:
    """One client per role (the matrix's sessions), answering a view's exception with a 500
    instead of raising it."""

    def __init__(self, scene: Scene) -> None:
        self.sessions = RoleClients(scene).sessions
        self.client = Client(raise_request_exception=False)

    def send(self, request: Request) -> Any:
        self.client.cookies = SimpleCookie()
        if request.role in self.sessions:
            self.client.cookies[settings.SESSION_COOKIE_NAME] = self.sessions[request.role]
        call = getattr(self.client, request.method.lower())
        if request.body is not None:
            return call(request.url, request.body, content_type="application/json")
        if request.form is not None:  # urlencoded: no file is sent, and it encodes faster
            form = urlencode(request.form, doseq=True)
            return call(request.url, form, content_type="application/x-www-form-urlencoded")
        return call(request.url, request.query or {})


@pytest.fixture(scope="module")
def fuzz(django_db_setup, django_db_blocker, tmp_path_factory):  # type: ignore[no-untyped-def]
    media = tmp_path_factory.mktemp("media")
    cookies = "django.contrib.sessions.backends.signed_cookies"
    with (
        django_db_blocker.unblock(),
        override_settings(MEDIA_ROOT=media, SESSION_ENGINE=cookies),
        transaction.atomic(),
    ):
        scene = build_scene()
        facets = [f"facet-{pk}" for pk in Facet.objects.values_list("pk", flat=True)]
        fields = sorted({*declared_fields(), *facets, *QUERY, *ISSUE_FILTERS, *FILTER_KEYS})
        yield scene, FuzzClients(scene), fields
        transaction.set_rollback(True)


def role_for(case: Case, method: str) -> str | None:
    assert case.spec is not None
    roles = case.spec.rule_for(method).roles
    return next((role for role in PREFERRED if role in roles), None)


def requests_of(case: Case, scene: Scene, fields: list[str]) -> Iterator[Request]:
    """One request per (method, fuzz value) on the route."""
    assert case.spec is not None
    url, methods = url_of(case, scene), case.spec.methods
    query = [n for n in fields if n in {*QUERY, *ISSUE_FILTERS, *FILTER_KEYS}]
    if "GET" in methods and (role := role_for(case, "GET")):
        for name, value in VALUES.items():
            yield Request(role, "GET", url, f"GET ?{name}", query=dict.fromkeys(query, value))
        yield from path_requests(case, scene, role)
    if "POST" in methods and (role := role_for(case, "POST")):
        for name, value in VALUES.items():
            yield Request(role, "POST", url, f"POST form {name}", form=dict.fromkeys(fields, value))
    for method in sorted(methods & WRITE - {"DELETE"} if case.is_api else set()):
        if role := role_for(case, method):
            for name, body in fuzz_json(fields).items():
                yield Request(role, method, url, f"{method} json {name}", body=body)


def path_requests(case: Case, scene: Scene, role: str) -> Iterator[Request]:
    """The route with a NUL byte in each of its string URL parameters."""
    assert case.spec is not None
    converters = getattr(case.pattern.pattern, "converters", {})
    for param in case.spec.params:
        if type(converters.get(param)).__name__ in {"StringConverter", "PathConverter"}:
            url = url_of(case, scene)
            value = str(scene.ids.get(case.spec.params[param], case.spec.params[param]))
            if quote(value, safe="/") in url:
                nul = url.replace(quote(value, safe="/"), quote(value + "\x00"), 1)
                yield Request(role, "GET", nul, f"GET path {param} with NUL")


def message_of(response: Any) -> str:
    text = body_text(response)
    if "json" in response.get("Content-Type", ""):
        try:
            parsed = json.loads(text)
        except ValueError:
            return text.strip()
        return json.dumps(parsed) if parsed else ""
    return text.strip()


ROUTE_CASES = [c for c in CASES if c.spec is not None and "#" not in c.key]
# The routes are fuzzed in shards, so that parallel test workers share the ~5,000 requests
# (each worker builds the scene once for the shards it runs).
SHARDS = 4


def test_the_shards_cover_every_route() -> None:
    shards = [ROUTE_CASES[shard::SHARDS] for shard in range(SHARDS)]
    assert sorted(c.key for s in shards for c in s) == sorted(c.key for c in ROUTE_CASES)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_bad_input_on_any_route_is_a_server_error(fuzz, shard) -> None:  # type: ignore[no-untyped-def]
    scene, clients, fields = fuzz
    failures, sent = [], 0
    for case in ROUTE_CASES[shard::SHARDS]:
        for request in requests_of(case, scene, fields):
            with transaction.atomic():
                response = clients.send(request)
                message = message_of(response) if response.status_code >= 400 else "-"
                transaction.set_rollback(True)
            sent += 1
            status = response.status_code
            if status >= 500 or (400 <= status < 500 and not message):
                shown = request.url if len(request.url) < 120 else request.url[:117] + "..."
                failures.append(f"{case.key} {request.case} as {request.role}: {status} {shown}")
    assert sent > 2000 // SHARDS
    assert not failures, f"{len(failures)} of {sent} requests failed:\n" + "\n".join(failures)
