"""No page shows template syntax to a person: a crawl, in Chromium, of every page reachable by
links from the main pages, as a study's owner, an annotator and an adjudicator, reading the text
the browser renders (a multi-line `{# … #}` comment, say, prints itself)."""

from __future__ import annotations

from collections import deque
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from tests.browser import log_in
from tests.main_pages import SIGNED_OUT, main_pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MARKS = ("{#", "{%", "{{")
# Not pages to read: downloads, the API and the admin, and anything that signs out.
SKIP = ("logout", "/api/", "/admin/", "download", "/export", ".json", ".yaml", ".csv", "/media/")
LIMIT = 60


def crawl(page: Any, base: str, starts: list[str]) -> dict[str, list[str]]:
    """Visit pages breadth first from `starts` by their same-site links; the marks each shows."""
    seen: set[str] = set()
    queue = deque(base + s for s in starts)
    found: dict[str, list[str]] = {}
    while queue and len(seen) < LIMIT:
        url = queue.popleft()
        path = urlsplit(url).path
        if path in seen:
            continue
        seen.add(path)
        response = page.goto(url)
        assert response is not None and response.status < 500, url
        text = page.inner_text("body")
        marks = [m for m in MARKS if m in text]
        if marks:
            found[page.url] = marks
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            href = urldefrag(href)[0]
            if href.startswith(base) and not any(s in href for s in SKIP):
                queue.append(href)
    assert len(seen) >= 8  # the crawl got somewhere
    return found


def test_no_page_shows_template_syntax(browser, live_server):
    world = main_pages()  # the crawl starts from every main page, as the person who reads it
    base = live_server.url
    starts = {
        world.username(reader): ["/", *(page.path for page in pages)]
        for reader, pages in world.by_reader().items()
        if reader != SIGNED_OUT
    }
    shown: dict[str, dict[str, list[str]]] = {}
    for username, paths in starts.items():
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        log_in(page, base, username)
        shown[username] = crawl(page, base, paths)
        context.close()
    assert len(starts) == 3
    assert shown == {name: {} for name in starts}
