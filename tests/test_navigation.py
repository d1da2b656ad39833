"""The top bar marks the current section's link (aria-current="page") from the page's `section`
(annotator/context_processors.py): on the sections' pages, on no other page, and on every route
where the links' paths marked it before sections had names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404

from annotator.context_processors import nav
from annotator.issues.access import grant_import
from annotator.studies.services import next_assignment
from tests.studies.factories import World, make_world

LINKS = {
    "issues": "Issues",
    "import": "Import",
    "studies": "Studies",
    "codebooks": "Codebooks",
    "tokens": "API tokens",
}
CURRENT = re.compile(r'<a href="[^"]*" aria-current="page">([^<]+)</a>')
CONVERTER = re.compile(r"<(?:(\w+):)?\w+>")


def by_path(path: str) -> str:
    """The section as base.html told it before: by the page's path, the list's and the upload
    form's exactly, the others' by prefix."""
    exact = {"/issues/": "issues", "/issues/import/": "import"}
    # The GitHub token page sits beside the API tokens (linked from there); the GitHub login's
    # own routes beside it belong to no section.
    exact |= {"/account/github/": "tokens", "/account/github/forget/": "tokens"}
    prefixes = {"/studies/": "studies", "/codebooks/": "codebooks", "/account/tokens/": "tokens"}
    return exact.get(path) or next((s for p, s in prefixes.items() if path.startswith(p)), "")


def routes(patterns: Any, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern


def concrete(route: str) -> str:
    """A path of a route: a number for each `int` parameter, a word for any other."""
    return "/" + CONVERTER.sub(lambda m: "7" if m.group(1) == "int" else "x", route)


def test_every_route_has_the_section_its_path_had() -> None:
    checked = set()
    for route, pattern in routes(get_resolver().url_patterns):
        if route.startswith("^") or "(?P" in route:
            continue  # regular expressions (admin, format suffixes): none under a section
        path = concrete(route)
        try:
            match = resolve(path)
        except Resolver404:
            continue
        if match.func is not pattern.callback:
            continue  # an earlier route takes this path
        request = RequestFactory().get(path)
        request.resolver_match = match
        assert nav(request)["section"] == by_path(path), path
        checked.add(match.view_name)
    # every page of the sections' namespaces was checked, and the others' too
    for name in ("issues", "studies", "taxonomy", "accounts", "agreement", "adjudication"):
        assert len({v for v in checked if v.startswith(name + ":")}) >= 2, name
    assert {"issues:list", "issues:import", "studies:assignment", "accounts:revoke"} <= checked


def test_a_page_answered_before_its_url_resolved_has_no_section() -> None:
    request = RequestFactory().get("/studies/")
    assert request.resolver_match is None
    assert nav(request)["section"] == ""


@pytest.fixture
def world(db: Any) -> World:
    return make_world(items=2)


def first_assignment(world: World) -> str:
    return next_assignment(study=world.study, annotator=world.annotators[0]).get_absolute_url()


PAGES: list[tuple[str, Callable[[World], str], str | None]] = [
    ("issues:list", lambda w: reverse("issues:list"), "Issues"),
    ("issues:import", lambda w: reverse("issues:import"), "Import"),
    ("issues:detail", lambda w: reverse("issues:detail", args=[w.issues[0].pk]), None),
    ("studies:list", lambda w: reverse("studies:list"), "Studies"),
    ("studies:detail", lambda w: reverse("studies:detail", args=[w.study.pk]), "Studies"),
    ("studies:dashboard", lambda w: reverse("studies:dashboard", args=[w.study.pk]), "Studies"),
    ("studies:assignment", first_assignment, "Studies"),
    ("taxonomy:list", lambda w: reverse("taxonomy:list"), "Codebooks"),
    (
        "taxonomy:proposals",
        lambda w: reverse("taxonomy:proposals", args=[w.version.codebook_id]),
        "Codebooks",
    ),
    ("taxonomy:version", lambda w: reverse("taxonomy:version", args=[w.version.pk]), "Codebooks"),
    ("accounts:tokens", lambda w: reverse("accounts:tokens"), "API tokens"),
    ("agreement:study", lambda w: reverse("agreement:study", args=[w.study.pk]), None),
    ("adjudication:queue", lambda w: reverse("adjudication:queue", args=[w.study.pk]), None),
    ("exports:start", lambda w: reverse("exports:start", args=[w.study.pk]), None),
]


@pytest.mark.parametrize(("name", "url", "current"), PAGES, ids=[p[0] for p in PAGES])
def test_the_top_bar_marks_the_current_section(client, world, name, url, current) -> None:  # type: ignore[no-untyped-def]
    person = world.annotators[0] if name == "studies:assignment" else world.owner
    if name == "issues:import":
        grant_import(person)  # the page is for importers (annotator/issues/access.py)
    client.force_login(person)
    response = client.get(url(world))
    assert response.status_code == 200
    bar = response.content.decode().split('<nav aria-label="Main">', 1)[1].split("</nav>", 1)[0]
    assert CURRENT.findall(bar) == ([current] if current else [])
    assert by_path(response.wsgi_request.path) == next(
        (key for key, label in LINKS.items() if label == current), ""
    )  # the same as before sections had names
