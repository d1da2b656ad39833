"""Template context shared by every page."""

from __future__ import annotations

from functools import lru_cache

from django.http import HttpRequest
from django.urls import get_script_prefix, reverse

NAV = {
    "home": "home",
    "issues": "issues:list",
    "import": "issues:import",
    "studies": "studies:list",
    "codebooks": "taxonomy:list",
    "api": "api-docs",
    "tokens": "accounts:tokens",
    "admin": "admin:index",
    "logout": "logout",
}
# The section of the top bar (a key of NAV) a page belongs to: by its URL name, else by its
# URL namespace. The issues namespace holds two sections' pages, and of them only the list and
# the upload form are the sections' own pages.
SECTIONS = {
    "issues:list": "issues",
    "issues:import": "import",
    "studies": "studies",
    "taxonomy": "codebooks",
    "accounts": "tokens",
}


def nav(request: HttpRequest) -> dict[str, object]:
    """The top bar's links (base.html), reversed once per process and script prefix: every
    page shows them, and reversing nine names cost about half a millisecond a page; and the
    `section` whose link is the current one ("" for none), from the URL the page resolved."""
    return {"nav": _nav_urls(get_script_prefix()), "section": _section(request)}


def _section(request: HttpRequest) -> str:
    match = request.resolver_match  # None on a page answered before URL resolution
    if match is None:
        return ""
    return SECTIONS.get(match.view_name) or SECTIONS.get(match.namespace, "")


@lru_cache(maxsize=8)
def _nav_urls(prefix: str) -> dict[str, str]:
    return {key: reverse(name) for key, name in NAV.items()}
