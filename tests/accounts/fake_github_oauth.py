"""A local HTTP server speaking GitHub's OAuth web flow and the two API calls a sign-in makes,
for the Sign in with GitHub tests (annotator/accounts/github.py).

- ``GET /login/oauth/authorize?client_id&redirect_uri&scope&state``: the person's answer on
  GitHub's consent page, decided beforehand with ``approve`` (True: 302 to ``redirect_uri``
  with ``code`` and ``state``; False: ``error=access_denied`` as GitHub sends when they press
  Cancel); an unknown client id is a 404 page, as on GitHub.
- ``POST /login/oauth/access_token`` (form: ``client_id``, ``client_secret``, ``code``,
  ``redirect_uri``): JSON ``{access_token, token_type, scope}`` when asked with ``Accept:
  application/json``, else form-encoded, as GitHub does; a wrong secret, a used or unknown
  code or another redirect_uri answer 200 with ``{"error": "bad_verification_code", …}`` (GitHub's
  way), a code works once.
- ``GET /user`` and ``GET /user/emails`` (also under ``/api/v3``, GitHub Enterprise's root) with
  ``Authorization: token …`` or ``Bearer …``: the user of that token; 401 ``Bad credentials``
  otherwise.

Binds 127.0.0.1 on an ephemeral port; never the internet. Every request is kept in
``requests`` (method, path, form or query, Authorization header) for the tests to check.
"""

from __future__ import annotations

import json
import secrets
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class GitHubUser:
    login: str
    id: int
    email: str | None = None  # the public e-mail of /user (often null)
    emails: list[dict[str, Any]] = field(default_factory=list)  # /user/emails
    name: str = ""


@dataclass
class Seen:
    method: str
    path: str
    params: dict[str, str]
    authorization: str


@dataclass
class FakeGitHubOAuth:
    client_id: str = "Iv1.testclient"
    client_secret: str = "test-client-secret"
    user: GitHubUser = field(default_factory=lambda: GitHubUser(login="octocat", id=583231))
    approve: bool = True
    scope_granted: str = "read:user,user:email"
    requests: list[Seen] = field(default_factory=list)
    codes: dict[str, str] = field(default_factory=dict)  # code -> redirect_uri
    tokens: dict[str, GitHubUser] = field(default_factory=dict)  # issued access tokens
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> FakeGitHubOAuth:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.oauth = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def issued(self) -> list[str]:
        return list(self.tokens)

    def seen(self, path: str) -> list[Seen]:
        return [s for s in self.requests if s.path == path]


class _Handler(BaseHTTPRequestHandler):
    server_version = "GitHub.com"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def oauth(self) -> FakeGitHubOAuth:
        return self.server.oauth  # type: ignore[attr-defined,no-any-return]

    def _record(self, params: dict[str, str]) -> str:
        path = urllib.parse.urlsplit(self.path).path
        self.oauth.requests.append(
            Seen(self.command, path, params, self.headers.get("Authorization", ""))
        )
        return path

    def do_GET(self) -> None:
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        path = self._record(query).removeprefix("/api/v3")
        if path == "/login/oauth/authorize":
            return self._authorize(query)
        if path in ("/user", "/user/emails"):
            return self._api(path)
        self._send(404, {"message": "Not Found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        path = self._record(form)
        if path != "/login/oauth/access_token":
            return self._send(404, {"message": "Not Found"})
        self._access_token(form)

    # --- the web flow ---------------------------------------------------------------------
    def _authorize(self, query: dict[str, str]) -> None:
        oauth = self.oauth
        if query.get("client_id") != oauth.client_id:
            return self._send(404, {"message": "Not Found"})
        redirect_uri, state = query["redirect_uri"], query.get("state", "")
        if oauth.approve:
            code = secrets.token_hex(10)
            with oauth.lock:
                oauth.codes[code] = redirect_uri
            answer = {"code": code, "state": state}
        else:
            answer = {
                "error": "access_denied",
                "error_description": "The user has denied your application access.",
                "error_uri": "https://docs.github.com/apps/troubleshooting-authorization-request-errors/#access-denied",
                "state": state,
            }
        location = f"{redirect_uri}?{urllib.parse.urlencode(answer)}"
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _access_token(self, form: dict[str, str]) -> None:
        oauth = self.oauth
        with oauth.lock:
            redirect_uri = oauth.codes.pop(form.get("code", ""), None)
        good = (
            form.get("client_id") == oauth.client_id
            and form.get("client_secret") == oauth.client_secret
            and redirect_uri is not None
            and form.get("redirect_uri", redirect_uri) == redirect_uri
        )
        if good:
            token = "gho_" + secrets.token_urlsafe(27)[:36]
            with oauth.lock:
                oauth.tokens[token] = oauth.user
            body = {"access_token": token, "token_type": "bearer", "scope": oauth.scope_granted}
        else:
            body = {
                "error": "bad_verification_code",
                "error_description": "The code passed is incorrect or expired.",
                "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
            }
        if "application/json" in self.headers.get("Accept", ""):
            return self._send(200, body)
        self._send_raw(
            200, urllib.parse.urlencode(body).encode(), "application/x-www-form-urlencoded"
        )

    # --- the API --------------------------------------------------------------------------
    def _api(self, path: str) -> None:
        keyword, _, token = self.headers.get("Authorization", "").partition(" ")
        user = self.oauth.tokens.get(token) if keyword.lower() in ("token", "bearer") else None
        if user is None:
            return self._send(
                401,
                {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
            )
        if path == "/user/emails":
            return self._send(200, user.emails)
        self._send(
            200,
            {
                "login": user.login,
                "id": user.id,
                "node_id": f"MDQ6VXNlcj{user.id}",
                "avatar_url": f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
                "html_url": f"https://github.com/{user.login}",
                "type": "User",
                "site_admin": False,
                "name": user.name or None,
                "email": user.email,
            },
        )

    def _send(self, status: int, body: Any) -> None:
        self._send_raw(status, json.dumps(body).encode(), "application/json; charset=utf-8")

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
