"""The Content-Security-Policy and the other security headers: present on every kind of response
(pages, htmx partials, the API, error pages), strict for scripts, and met by the pages, which
carry no inline script, handler or style; secure-mode cookies and HSTS; `check --deploy` clean."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import include, path, reverse

from annotator.issues.access import grant_import
from tests.conftest import _database_url
from tests.factories import PASSWORD, UserFactory
from tests.security.helpers import Populated, inline_code, policy, populated_study

ROOT = Path(__file__).resolve().parents[2]
HTMX = {"HTTP_HX_REQUEST": "true"}
STRICT = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def _broken(request: Any) -> Any:
    raise RuntimeError("an unexpected failure")


def _forbidden(request: Any) -> Any:
    raise PermissionDenied


# The app's URLs plus two that fail, so that the 403 and 500 pages are checked too.
urlpatterns = [
    path("broken/", _broken),
    path("forbidden/", _forbidden),
    path("", include("annotator.urls")),
]


@pytest.fixture
def populated(db, settings, tmp_path) -> Populated:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    # Users log in with force_login here: the production hasher's cost would only slow the setup.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return populated_study()


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def assert_strict_policy(response: Any, url: str) -> None:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"{url}: no Content-Security-Policy header"
    assert "Content-Security-Policy-Report-Only" not in response.headers, url
    sent = policy(header)
    for directive, sources in STRICT.items():
        assert sent.get(directive) == sources, f"{url}: {directive} is {sent.get(directive)}"
    assert sent["img-src"][:2] == ["'self'", "data:"], url


def owner_pages(p: Populated) -> list[str]:
    study, item, version = p.study.pk, p.disputed.pk, p.world.version
    issue = p.world.issues[0].pk
    return [
        reverse("issues:list"),
        reverse("issues:list") + "?q=issue",
        reverse("issues:detail", args=[issue]),
        reverse("issues:import"),
        reverse("issues:sync"),
        reverse("studies:list"),
        reverse("studies:create"),
        reverse("studies:detail", args=[study]),
        reverse("studies:edit", args=[study]),
        reverse("studies:members", args=[study]),
        reverse("studies:select", args=[study]),
        reverse("studies:dashboard", args=[study]),
        reverse("studies:item", args=[item]),
        reverse("adjudication:queue", args=[study]),
        reverse("adjudication:items", args=[study]),
        reverse("adjudication:relabel", args=[study]),
        reverse("adjudication:item", args=[item]),
        reverse("adjudication:history", args=[item]),
        reverse("adjudication:discussion", args=[item]),
        reverse("agreement:study", args=[study]),
        reverse("agreement:run", args=[p.run.pk]),
        reverse("exports:start", args=[study]),
        reverse("exports:job", args=[p.export.pk]),
        reverse("exports:analysis", args=[study]),
        reverse("exports:analysis_issues", args=[study]),
        reverse("exports:prior_upload"),
        reverse("taxonomy:list"),
        reverse("taxonomy:version", args=[version.pk]),
        reverse("taxonomy:version", args=[p.draft.pk]),
        reverse("taxonomy:diff", args=[p.draft.pk]),
        reverse("taxonomy:guideline", args=[version.pk]),
        reverse("taxonomy:proposals", args=[version.codebook_id]),
    ]


def test_every_main_page_sends_the_strict_policy_and_has_no_inline_code(populated) -> None:  # type: ignore[no-untyped-def]
    grant_import(populated.owner)  # for the import and sync pages
    client = as_user(populated.owner)
    checked = []
    for url in owner_pages(populated):
        response = client.get(url)
        assert response.status_code == 200, f"{url}: {response.status_code}"
        assert_strict_policy(response, url)
        html = response.content.decode()
        assert inline_code(html) == [], f"{url}: {inline_code(html)}"
        checked.append(url)
    assert len(checked) == len(owner_pages(populated)) >= 30


def test_annotator_and_adjudicator_pages_have_no_inline_code(populated) -> None:  # type: ignore[no-untyped-def]
    annotator = populated.world.annotators[0]
    pages = [
        (annotator, populated.assignment_of(annotator).get_absolute_url()),
        (annotator, reverse("studies:mine", args=[populated.study.pk])),
        (annotator, reverse("studies:annotate_next", args=[populated.study.pk])),
        (populated.adjudicator, reverse("adjudication:item", args=[populated.disputed.pk])),
    ]
    for user, url in pages:
        response = as_user(user).get(url)
        assert response.status_code == 200, f"{url}: {response.status_code}"
        assert_strict_policy(response, url)
        assert inline_code(response.content.decode()) == [], url


def test_rendered_issue_bodies_lose_hostile_inline_code_but_keep_their_screenshot(
    populated,
) -> None:  # type: ignore[no-untyped-def]
    url = reverse("issues:detail", args=[populated.world.issues[0].pk])
    html = as_user(populated.owner).get(url).content.decode()
    assert "styled" in html and "alert(1)" not in html
    assert 'src="https://user-images.githubusercontent.com/1/trace.png"' in html
    header = as_user(populated.owner).get(url).headers["Content-Security-Policy"]
    assert "https://*.githubusercontent.com" in policy(header)["img-src"]


def test_htmx_partials_carry_the_policy(populated) -> None:  # type: ignore[no-untyped-def]
    client = as_user(populated.owner)
    category = populated.draft.facets.first().categories.first()
    partials = [
        (reverse("issues:list") + "?q=issue", "issue-results"),
        (reverse("exports:job", args=[populated.export.pk]), "export-status"),
        (reverse("taxonomy:category_row", args=[category.pk]), f"category-{category.pk}"),
    ]
    for url, target in partials:
        response = client.get(url, HTTP_HX_TARGET=target, **HTMX)
        assert response.status_code in (200, 286), f"{url}: {response.status_code}"
        assert b"<html" not in response.content, f"{url} is not a partial"
        assert_strict_policy(response, url)
        assert inline_code(response.content.decode()) == [], url


def test_the_api_and_the_login_page_carry_the_policy(populated) -> None:  # type: ignore[no-untyped-def]
    api = as_user(populated.owner)
    for url in ("/api/issues/", f"/api/studies/{populated.study.pk}/", "/api/schema/"):
        response = api.get(url)
        assert response.status_code == 200, url
        assert_strict_policy(response, url)
    refused = Client().get("/api/issues/", HTTP_AUTHORIZATION="Token wrong")
    assert refused.status_code == 401
    assert_strict_policy(refused, "/api/issues/ (401)")
    login = Client().get(reverse("login"))
    assert_strict_policy(login, "/login/")
    assert inline_code(login.content.decode()) == []


@pytest.mark.urls(__name__)
def test_error_pages_carry_the_policy(populated) -> None:  # type: ignore[no-untyped-def]
    client = as_user(populated.owner)
    client.raise_request_exception = False
    for url, status in (
        ("/no/such/page/", 404),
        ("/forbidden/", 403),
        ("/broken/", 500),
        (reverse("issues:detail", args=[10**9]), 404),
    ):
        response = client.get(url)
        assert response.status_code == status, url
        assert_strict_policy(response, url)
        assert inline_code(response.content.decode()) == [], url
    anonymous = Client().get(reverse("studies:list"))
    assert anonymous.status_code == 302 and "Content-Security-Policy" in anonymous.headers


def test_other_security_headers_are_sent(db, client) -> None:  # type: ignore[no-untyped-def]
    response = client.get(reverse("login"))
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_htmx_is_configured_to_inject_no_style_and_eval_nothing(db, client) -> None:  # type: ignore[no-untyped-def]
    html = client.get(reverse("login")).content.decode()
    content = html.split('<meta name="htmx-config" content=\'')[1].split("'>")[0]
    assert json.loads(content) == {"includeIndicatorStyles": False, "allowEval": False}
    css = (ROOT / "static/css/app.css").read_text()
    assert ".htmx-request .htmx-indicator" in css and ".depth-2 { --depth: 2; }" in css


def test_api_docs_widen_the_policy_for_that_page_only(db, client, user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    html = page.content.decode()
    assert inline_code(html.split("<body>")[1]) == []
    # Swagger UI comes from our static files (drf-spectacular-sidecar): it works offline.
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "http://" not in html and "https://" not in html
    bundle = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    sent = policy(page.headers["Content-Security-Policy"])
    assert sent["script-src"] == ["'self'"]
    assert "'unsafe-inline'" in sent["style-src"] and sent["object-src"] == ["'none'"]
    script = client.get(reverse("api-docs") + "?script=")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content
    elsewhere = policy(client.get(reverse("issues:list")).headers["Content-Security-Policy"])
    assert elsewhere["script-src"] == ["'self'"] and elsewhere["style-src"] == ["'self'"]


# Run in a fresh interpreter: secure mode is read from the environment when settings load.
SECURE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import django
    django.setup()
    from django.test import Client
    from django.test.utils import override_settings

    # Static files are hashed by collectstatic in production; these pages only need a name.
    plain = {"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
             "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    with override_settings(STORAGES=plain):
        client = Client()
        http = client.get("/login/")
        page = client.get("/login/", secure=True)
        login = client.post("/login/", {"username": sys.argv[1], "password": sys.argv[2]},
                            secure=True)
    def cookie(morsel):
        return {"secure": bool(morsel["secure"]), "httponly": bool(morsel["httponly"]),
                "samesite": morsel["samesite"]}
    print(json.dumps({
        "http": [http.status_code, http.headers.get("Location")],
        "login": login.status_code,
        "headers": dict(page.headers),
        "csrftoken": cookie(page.cookies["csrftoken"]),
        "sessionid": cookie(login.cookies["sessionid"]),
    }))
    """
)


def secure_env(**extra: str) -> dict[str, str]:
    # tests/conftest.py allows the ORM beside Playwright's event loop; production does not.
    environ = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {
        **environ,
        "DJANGO_SECURE": "1",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
        "DJANGO_ALLOWED_HOSTS": "testserver,annotator.example.org",
        **extra,
    }


def run_python(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Python with `args` in the project's directory, under `env`; its output captured."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_secure_mode_sets_cookie_flags_hsts_and_redirects_to_https(transactional_db) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    user = UserFactory()
    env = secure_env(DATABASE_URL=_database_url(connection.settings_dict["NAME"]))
    done = run_python(["-c", SECURE_SCRIPT, user.username, PASSWORD], env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["http"] == [301, "https://testserver/login/"]
    assert seen["login"] == 302
    headers = seen["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert policy(headers["Content-Security-Policy"])["script-src"] == ["'self'"]
    assert seen["sessionid"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert seen["csrftoken"] == {"secure": True, "httponly": False, "samesite": "Lax"}


def test_plain_mode_keeps_cookies_usable_over_http(db, client) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    page = client.get(reverse("login"))
    assert "Strict-Transport-Security" not in page.headers
    login = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert login.status_code == 302
    session = login.cookies["sessionid"]
    assert not session["secure"] and session["httponly"] and session["samesite"] == "Lax"


def test_check_deploy_reports_nothing_with_the_production_settings() -> None:
    env = secure_env(DATABASE_URL="postgres://nobody@127.0.0.1:1/unused")
    done = run_python(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def test_check_deploy_flags_a_development_setup() -> None:
    env = {**os.environ, "DJANGO_SECURE": "0", "DJANGO_SECRET_KEY": ""}
    done = run_python(["manage.py", "check", "--deploy"], env)
    for warning in (
        "security.W004",
        "security.W008",
        "security.W009",
        "security.W012",
        "security.W016",
    ):
        assert warning in done.stdout + done.stderr, warning
