"""A local HTTP server speaking GitHub's REST wire format, for the sync tests.

Serves one repository's issues and comments as ``GET /repos/{owner}/{repo}``, ``.../issues``
and ``.../issues/comments`` do: REST JSON shapes (as in annotator/issues/demo_data), ``state``,
``since`` (updated at or after), ``sort=created|updated``, ``direction``, ``per_page`` (30 by
default, at most 100) and ``page``; ``Link`` headers with rel="next", "last", "first" and
"prev"; ``ETag`` and 304 on ``If-None-Match``; ``x-ratelimit-*`` headers; 401 for a wrong
token; 404 for unknown repositories; a 301 from a former name. Faults are scripted with
``fail()``: rate limits (403 primary, 403 secondary with retry-after, 429), 502, 500, dropped
connections, and a quota left at 0; ``page_delay`` makes every list page slow to answer. Binds
127.0.0.1 on an ephemeral port; never the internet.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DOCS = "https://docs.github.com/rest"


ISSUES_START = datetime(2023, 1, 1, tzinfo=UTC)
COMMENTS_START = datetime(2023, 3, 1, tzinfo=UTC)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _at(start: datetime, **offset: int) -> str:
    return (start + timedelta(**offset)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Fault:
    kind: str  # primary | secondary | 429 | 502 | 500 | drop | exhaust | forbidden
    path: str = ""  # a substring of the request path
    page: int | None = None
    after: int = 0  # matching requests to let through first
    times: int = 1


@dataclass
class Served:
    path: str
    query: dict[str, str]
    status: int
    items: int = 0


@dataclass
class FakeGitHub:
    full_name: str = "deepspeedai/DeepSpeed"
    renamed_from: tuple[str, ...] = ()
    token: str = ""
    repo_id: int = 4242
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    served: list[Served] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    page_delay: float = 0.0  # seconds before each list page answers: a slow GitHub
    lock: threading.RLock = field(default_factory=threading.RLock)

    # --- data -----------------------------------------------------------------------------
    @property
    def api(self) -> str:
        return f"http://{self.host}/repos/{self.full_name}"

    def add_issue(self, number: int, **fields: Any) -> dict[str, Any]:
        kind = "pull" if fields.get("pull_request") else "issues"
        issue = {
            "url": f"{self.api}/issues/{number}",
            "repository_url": self.api,
            "html_url": f"https://github.com/{self.full_name}/{kind}/{number}",
            "id": 10_000 + number,
            "node_id": f"I_{number}",
            "number": number,
            "title": f"Issue {number}: NCCL timeout on rank {number % 8}",
            "user": {"login": f"user{number % 17}", "id": number % 17, "type": "User"},
            "labels": [{"id": 1, "name": "bug", "color": "d73a4a"}] if number % 3 else [],
            "state": "closed" if number % 4 == 0 else "open",
            "state_reason": "completed" if number % 4 == 0 else None,
            "locked": False,
            "comments": 0,
            "created_at": _at(ISSUES_START, minutes=number),
            "updated_at": "2023-06-01T00:00:00Z",
            "closed_at": "2023-05-01T00:00:00Z" if number % 4 == 0 else None,
            "author_association": "NONE",
            "body": f"Training hangs with ZeRO-3 (issue {number}).\r\n```\nlog\n```",
        }
        issue.update(fields)
        with self.lock:
            self.issues[number] = issue
        return issue

    def add_comment(self, number: int, **fields: Any) -> dict[str, Any]:
        with self.lock:
            comment_id = 500_000 + len(self.comments) + 1
            comment = {
                "url": f"{self.api}/issues/comments/{comment_id}",
                "html_url": f"https://github.com/{self.full_name}/issues/{number}#c{comment_id}",
                "issue_url": f"{self.api}/issues/{number}",
                "id": comment_id,
                "user": {"login": f"helper{comment_id % 5}", "id": comment_id % 5},
                "created_at": _at(COMMENTS_START, seconds=comment_id - 500_000),
                "updated_at": "2023-06-01T00:00:00Z",
                "author_association": "CONTRIBUTOR",
                "body": f"Try NCCL_DEBUG=INFO (comment {comment_id}).",
            }
            comment.update(fields)
            self.comments[comment_id] = comment
            issue = self.issues[number]
            issue["comments"] += 1
            # GitHub moves an issue's updated_at when it gets a comment.
            issue["updated_at"] = max(issue["updated_at"], comment["updated_at"])
        return comment

    def edit_issue(self, number: int, **fields: Any) -> None:
        with self.lock:
            self.issues[number].update(fields, updated_at=now_iso())

    def edit_comment(self, comment_id: int, **fields: Any) -> None:
        with self.lock:
            self.comments[comment_id].update(fields, updated_at=now_iso())
            number = int(self.comments[comment_id]["issue_url"].rsplit("/", 1)[1])
            self.issues[number]["updated_at"] = now_iso()

    def populate(self, issues: int, comments: int) -> None:
        """`issues` issues (every tenth a pull request) and `comments` comments spread
        over them."""
        for number in range(1, issues + 1):
            self.add_issue(number, **({"pull_request": {"url": "x"}} if number % 10 == 0 else {}))
        for n in range(comments):
            self.add_comment(n * 7 % issues + 1)

    def fail(self, kind: str, **where: Any) -> None:
        self.faults.append(Fault(kind, **where))

    def items_served(self, path_end: str) -> int:
        return sum(s.items for s in self.served if s.path.endswith(path_end))

    def requests_to(self, path_end: str) -> list[Served]:
        return [s for s in self.served if s.path.endswith(path_end)]

    # --- server ---------------------------------------------------------------------------
    def start(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"github": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://{self.host}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def take_fault(self, path: str, page: int) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times and fault.path in path and fault.page in (None, page):
                    if fault.after:
                        fault.after -= 1
                        return None
                    fault.times -= 1
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def do_GET(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(split.query))
        gh = self.github
        if gh.page_delay and split.path.endswith(("/issues", "/comments")):
            time.sleep(gh.page_delay)
        with gh.lock:
            status, headers, body, items = self._route(split.path, query)
            gh.served.append(Served(split.path, query, status, items))
        if status == 0:  # a dropped connection
            self.close_connection = True
            return
        self._send(status, headers, body)

    def _route(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], Any, int]:
        gh = self.github
        expected = f"Bearer {gh.token}"
        if gh.token and self.headers.get("Authorization") != expected:
            return 401, {}, {"message": "Bad credentials", "documentation_url": DOCS}, 0
        fault = gh.take_fault(path, int(query.get("page", "1")))
        if fault is not None and fault.kind != "exhaust":
            return _fault(fault)
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "repos":
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}, 0
        name, rest = f"{parts[1]}/{parts[2]}", "/".join(parts[3:])
        if name.lower() in {old.lower() for old in gh.renamed_from}:
            location = f"/repos/{gh.full_name}/{rest}".rstrip("/")
            target = location + (f"?{urllib.parse.urlencode(query)}" if query else "")
            return 301, {"Location": target}, {"message": "Moved Permanently", "url": target}, 0
        if name.lower() != gh.full_name.lower():
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}, 0
        status, headers, body, items = self._resource(rest, path, query)
        if fault is not None:  # "exhaust": a normal answer that spends the last request
            headers |= {
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(time.time()) + 1),
            }
        return status, headers, body, items

    def _resource(
        self, rest: str, path: str, query: dict[str, str]
    ) -> tuple[int, dict[str, str], Any, int]:
        gh = self.github
        if rest == "":
            owner, name = gh.full_name.split("/")
            body = {
                "id": gh.repo_id,
                "name": name,
                "full_name": gh.full_name,
                "owner": {"login": owner},
                "html_url": f"https://github.com/{gh.full_name}",
                "private": False,
                "has_issues": True,
            }
            return 200, {}, body, 0
        if rest == "issues":
            rows = list(gh.issues.values())
            if query.get("state", "open") != "all":
                rows = [r for r in rows if r["state"] == query.get("state", "open")]
        elif rest == "issues/comments":
            rows = list(gh.comments.values())
        else:
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}, 0
        return self._listing(rows, path, query)

    def _listing(
        self, rows: list[dict[str, Any]], path: str, query: dict[str, str]
    ) -> tuple[int, dict[str, str], Any, int]:
        if "since" in query:
            rows = [r for r in rows if r["updated_at"] >= query["since"]]
        key = "updated_at" if query.get("sort") == "updated" else "created_at"
        rows.sort(key=lambda r: (r[key], r["id"]), reverse=query.get("direction", "desc") == "desc")
        per_page = min(int(query.get("per_page", "30")), 100)
        page = int(query.get("page", "1"))
        chunk = rows[(page - 1) * per_page : page * per_page]
        body = json.dumps(chunk).encode()
        etag = f'W/"{hashlib.sha1(body).hexdigest()}"'
        headers = {"ETag": etag}
        last = max(1, -(-len(rows) // per_page))
        if last > 1:
            origin = f"http://{self.headers.get('Host', self.github.host)}"
            headers["Link"] = _links(origin + path, query, page, last)
        if self.headers.get("If-None-Match") == etag:
            return 304, headers, None, 0
        return 200, headers, chunk, len(chunk)

    def _send(self, status: int, headers: dict[str, str], body: Any) -> None:
        data = (
            b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        )
        gh = self.github
        self.send_response(status)
        base = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(max(0, 5000 - len(gh.served))),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(len(gh.served)),
            "x-ratelimit-resource": "core",
            "Content-Type": "application/json; charset=utf-8",
        }
        for name, value in (base | headers).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if status != 304:
            self.wfile.write(data)


def _links(base: str, query: dict[str, str], page: int, last: int) -> str:
    """GitHub's Link header: absolute URLs, the request's query with another page."""

    def url(number: int) -> str:
        return f"{base}?{urllib.parse.urlencode(query | {'page': str(number)})}"

    rels = {"prev": page - 1, "next": page + 1, "last": last, "first": 1}
    return ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in rels.items() if 1 <= n <= last)


def _fault(fault: Fault) -> tuple[int, dict[str, str], Any, int]:
    reset = str(int(time.time()) + 1)
    if fault.kind == "primary":
        body = {"message": "API rate limit exceeded for 127.0.0.1.", "documentation_url": DOCS}
        return 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, body, 0
    if fault.kind == "secondary":
        message = "You have exceeded a secondary rate limit. Please wait a few minutes."
        return 403, {"retry-after": "1"}, {"message": message, "documentation_url": DOCS}, 0
    if fault.kind == "429":
        return 429, {"retry-after": "1"}, {"message": "Too Many Requests"}, 0
    if fault.kind == "forbidden":
        return 403, {}, {"message": "Resource not accessible by integration"}, 0
    if fault.kind == "drop":
        return 0, {}, None, 0
    body = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    return int(fault.kind), {"Content-Type": "text/html"}, body, 0
