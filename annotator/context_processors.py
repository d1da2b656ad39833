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


def nav(request: HttpRequest) -> dict[str, dict[str, str]]:
    """The top bar's links (base.html), reversed once per process and script prefix: every
    page shows them, and reversing nine names cost about half a millisecond a page."""
    return {"nav": _nav_urls(get_script_prefix())}


@lru_cache(maxsize=8)
def _nav_urls(prefix: str) -> dict[str, str]:
    return {key: reverse(name) for key, name in NAV.items()}
