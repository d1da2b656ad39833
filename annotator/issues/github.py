"""A small, polite client for GitHub's REST API: the live sync's pure HTTP core.

Imports no Django (tests/issues/test_github_client.py checks this in a subprocess). It fetches
one URL at a time and leaves pagination to the caller, who follows ``Response.links["next"]``
as GitHub asks (page URLs are never built here). Politeness, following GitHub's REST guide
("Best practices" and "Rate limits"):

- a 403/429 with ``retry-after`` waits that long; one with ``x-ratelimit-remaining: 0`` waits
  until ``x-ratelimit-reset``; another 403 that says "rate limit" (a secondary limit without a
  header) waits a minute, doubling each time. A response that leaves ``remaining`` at 0 makes
  the *next* request wait for the reset instead of spending a refused request.
- 5xx answers and connection errors are retried with exponential backoff.
- 401 and 404 stop at once with a message saying what to fix.
- redirects (a renamed repository answers 301) are followed here, keeping the token only on the
  same host, and ``Response.url`` is where the data came from.
- ``etag=`` sends ``If-None-Match``; a 304 (no quota spent) comes back as ``not_modified``.

Every wait goes through the injected ``sleep`` after telling ``on_wait``, so a progress bar can
show it and tests need not really sleep.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="([^"]+)"')
_REDIRECTS = {301, 302, 307, 308}
_TRANSIENT = {500, 502, 503, 504}
_SECONDARY_WAIT = 60.0


class GitHubError(Exception):
    """GitHub refused or failed a request; str() says what to do about it."""


class AuthenticationError(GitHubError):
    """401: the token is missing where required, wrong or expired."""


class NotFoundError(GitHubError):
    """404: no such repository (or a private one the token cannot read)."""


class RateLimitError(GitHubError):
    """The limit resets further away than the client may wait; run again later."""


class UnavailableError(GitHubError):
    """Still failing after the retries: 5xx answers or a lost connection."""


@dataclass(frozen=True)
class Wait:
    """A pause the client is about to take, for progress reports."""

    seconds: float
    reason: str


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    data: Any = None
    etag: str = ""
    links: Mapping[str, str] = field(default_factory=dict)
    server_time: datetime | None = None
    rate_remaining: int | None = None

    @property
    def not_modified(self) -> bool:
        return self.status == 304


@dataclass
class _Answer:
    """One raw HTTP answer, before the client decides what it means."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str


def parse_links(header: str) -> dict[str, str]:
    """``Link: <url>; rel="next", <url>; rel="last"`` as {"next": url, "last": url}."""
    return {rel: url for url, rel in _LINK.findall(header or "")}


class GitHubClient:
    """GET requests against one API root (github.com or a GitHub Enterprise ``/api/v3``)."""

    def __init__(
        self,
        *,
        api_url: str = DEFAULT_API_URL,
        token: str = "",
        sleep: Callable[[float], None] = time.sleep,
        on_wait: Callable[[Wait], None] | None = None,
        clock: Callable[[], float] = time.time,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_wait: float = 3600.0,
        timeout: float = 30.0,
        token_name: str = "GITHUB_TOKEN",
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._token_name = token_name  # how messages name the token: the server's or a user's
        self._token, self._sleep, self._on_wait, self._clock = token, sleep, on_wait, clock
        self._max_retries, self._backoff, self._max_wait = max_retries, backoff, max_wait
        self._timeout = timeout
        self._reset_at: float | None = None  # set when the last answer left no quota
        self._opener = urllib.request.build_opener(_NoRedirect)

    # --- URLs -------------------------------------------------------------------------------
    def repository_url(self, full_name: str) -> str:
        return f"{self.api_url}/repos/{_quote_name(full_name)}"

    def issues_url(self, full_name: str, since: datetime | None = None) -> str:
        """Issues and pull requests, oldest first: new issues only ever append to the end, so
        page N stays page N while a run (or a resumed run) walks the pages."""
        return self._list_url(f"{self.repository_url(full_name)}/issues", since, state="all")

    def comments_url(self, full_name: str, since: datetime | None = None) -> str:
        """Every issue and pull-request comment of the repository, oldest first."""
        return self._list_url(f"{self.repository_url(full_name)}/issues/comments", since)

    def _list_url(self, base: str, since: datetime | None, **extra: str) -> str:
        query = {**extra, "sort": "created", "direction": "asc", "per_page": str(PER_PAGE)}
        if since is not None:
            query["since"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{base}?{urllib.parse.urlencode(query)}"

    # --- requests ---------------------------------------------------------------------------
    def get(self, url: str, *, etag: str = "") -> Response:
        """GET `url` (absolute, or a path under the API root), waiting, retrying and
        following redirects as the module docstring says. Raises GitHubError."""
        if url.startswith("/"):
            url = self.api_url + url
        for _ in range(10):
            answer = self._answer(url, etag)
            if answer.status not in _REDIRECTS:
                return self._response(answer)
            url = urllib.parse.urljoin(url, answer.headers.get("location", ""))
        raise GitHubError(f"too many redirects from {url}")

    def _answer(self, url: str, etag: str) -> _Answer:
        """The first answer that is neither a rate limit nor a transient failure."""
        rate_limited = failures = 0
        while True:
            self._wait_for_reset()
            answer = self._fetch(url, etag)
            if answer is not None and _is_rate_limit(answer):
                if rate_limited >= self._max_retries * 2:
                    raise RateLimitError(f"GitHub kept refusing {url}: {_limit_reason(answer)}")
                self._pause(self._rate_limit_wait(answer, rate_limited), _limit_reason(answer))
                rate_limited += 1
                continue
            if answer is not None and answer.status not in _TRANSIENT:
                self._note_quota(answer.headers)
                return answer
            failures += 1
            reason = f"HTTP {answer.status}" if answer else self._last_error
            if failures > self._max_retries:
                raise UnavailableError(
                    f"GitHub did not answer {url} after {failures} attempts ({reason})"
                )
            self._pause(self._backoff * 2 ** (failures - 1), f"{reason}; retry {failures}")

    def _fetch(self, url: str, etag: str) -> _Answer | None:
        """One HTTP exchange; None when the connection failed (reason in _last_error)."""
        request = urllib.request.Request(url, headers=self._headers(url, etag))
        try:
            with self._opener.open(request, timeout=self._timeout) as reply:
                return _Answer(reply.status, _lower(reply.headers), reply.read(), url)
        except urllib.error.HTTPError as error:
            body = error.read() if error.fp else b""
            return _Answer(error.code, _lower(error.headers), body, url)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            self._last_error = f"connection error: {getattr(error, 'reason', error) or error!r}"
            return None

    def _headers(self, url: str, etag: str) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "annotator-github-sync",
        }
        # The token goes only to the API host, even if a redirect points elsewhere.
        if self._token and _host(url) == _host(self.api_url):
            headers["Authorization"] = f"Bearer {self._token}"
        if etag:
            headers["If-None-Match"] = etag
        return headers

    def _response(self, answer: _Answer) -> Response:
        if answer.status == 304:
            return _response(answer, None)
        if answer.status == 401:
            raise AuthenticationError(
                f"GitHub rejected the credentials (401 {_message(answer)}): "
                f"check {self._token_name}, or unset it to sync a public repository anonymously"
            )
        if answer.status == 404:
            raise NotFoundError(
                f"not found on GitHub (404): {answer.url} — check OWNER/NAME; a private "
                f"repository needs a token that can read it ({self._token_name})"
            )
        if answer.status >= 400:
            raise GitHubError(
                f"GitHub answered {answer.status} ({_message(answer)}) for {answer.url}"
            )
        try:
            return _response(answer, json.loads(answer.body))
        except ValueError:
            raise GitHubError(f"GitHub sent something that is not JSON for {answer.url}") from None

    # --- waiting ----------------------------------------------------------------------------
    def _rate_limit_wait(self, answer: _Answer, earlier: int) -> float:
        headers = answer.headers
        if (retry_after := headers.get("retry-after", "")).strip().isdigit():
            return max(float(retry_after), self._backoff * (2.0**earlier - 1))
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            return self._until(float(headers["x-ratelimit-reset"])) + self._backoff * 2.0**earlier
        return _SECONDARY_WAIT * 2.0**earlier

    def _note_quota(self, headers: Mapping[str, str]) -> None:
        reset = headers.get("x-ratelimit-reset", "")
        if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            self._reset_at = float(reset)

    def _wait_for_reset(self) -> None:
        if self._reset_at is not None:
            reset_at, self._reset_at = self._reset_at, None
            seconds = self._until(reset_at) + self._backoff
            self._pause(seconds, "rate limit used up; waiting for the reset")

    def _until(self, epoch: float) -> float:
        return max(0.0, epoch - self._clock()) + 1.0  # GitHub resets on the second boundary

    def _pause(self, seconds: float, reason: str) -> None:
        if seconds > self._max_wait:
            raise RateLimitError(
                f"GitHub asks to wait {seconds:.0f} s ({reason}), longer than the "
                f"{self._max_wait:.0f} s allowed; run the sync again later, it resumes"
            )
        if self._on_wait is not None:
            self._on_wait(Wait(seconds=seconds, reason=reason))
        self._sleep(seconds)

    _last_error = "connection error"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Hand redirects back to GitHubClient.get, which records where data came from."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _response(answer: _Answer, data: Any) -> Response:
    headers = answer.headers
    remaining = headers.get("x-ratelimit-remaining", "")
    return Response(
        url=answer.url,
        status=answer.status,
        data=data,
        etag=headers.get("etag", ""),
        links=parse_links(headers.get("link", "")),
        server_time=_server_time(headers.get("date", "")),
        rate_remaining=int(remaining) if remaining.isdigit() else None,
    )


def _is_rate_limit(answer: _Answer) -> bool:
    if answer.status == 429:
        return True
    if answer.status != 403:
        return False
    headers = answer.headers
    return (
        "retry-after" in headers
        or headers.get("x-ratelimit-remaining") == "0"
        or "rate limit" in _message(answer).lower()
    )


def _limit_reason(answer: _Answer) -> str:
    if "retry-after" in answer.headers:
        return f"secondary rate limit (HTTP {answer.status}, retry-after)"
    if answer.headers.get("x-ratelimit-remaining") == "0":
        return "rate limit used up; waiting for the reset"
    return f"secondary rate limit (HTTP {answer.status})"


def _message(answer: _Answer) -> str:
    try:
        message = json.loads(answer.body).get("message", "")
    except (ValueError, AttributeError):
        message = ""
    return str(message) or http.client.responses.get(answer.status, "")


def _server_time(header: str) -> datetime | None:
    try:
        return parsedate_to_datetime(header).astimezone(UTC) if header else None
    except (TypeError, ValueError):
        return None


def _lower(headers: Any) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()} if headers else {}


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.lower()


def _quote_name(full_name: str) -> str:
    owner, _, name = full_name.strip().partition("/")
    return f"{urllib.parse.quote(owner, safe='')}/{urllib.parse.quote(name, safe='')}"
