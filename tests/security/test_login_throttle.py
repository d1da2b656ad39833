"""Login throttling (django-axes): five wrong passwords lock a username from one address for
fifteen minutes with a page that says so; other people, other addresses, API tokens and open
sessions are unaffected; the lock expires, and `manage.py axes_reset` lifts it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotator.accounts.services import create_api_token
from tests.factories import PASSWORD, UserFactory
from tests.security.helpers import inline_code

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
HOME = "10.0.0.1"


@pytest.fixture(autouse=True)
def fast_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    # Each attempt checks a password; the production hasher's cost would only slow the tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def attempt(client: Client, user: Any, password: str, address: str = HOME) -> Any:
    return client.post(
        reverse("login"),
        {"username": user.username, "password": password},
        REMOTE_ADDR=address,
    )


def logged_in(client: Client) -> bool:
    return client.get(reverse("studies:list")).status_code == 200


def lock(client: Client, user: Any) -> list[int]:
    return [attempt(client, user, "wrong password").status_code for _ in range(5)]


def test_five_wrong_passwords_lock_the_account_even_against_the_right_one(client) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    first = attempt(client, user, "wrong password")
    assert first.status_code == 200 and b"didn't match" in first.content
    assert [attempt(client, user, "wrong").status_code for _ in range(4)] == [200, 200, 200, 429]
    sixth = attempt(client, user, PASSWORD)
    html = sixth.content.decode()
    assert sixth.status_code == 429
    assert "Account locked" in html and user.username in html
    assert "5 wrong passwords" in html and "blocked for 15 minutes" in html
    assert not logged_in(client)
    assert "Content-Security-Policy" in sixth.headers and inline_code(html) == []


def test_the_lock_holds_one_username_from_one_address_only(client) -> None:  # type: ignore[no-untyped-def]
    locked, other = UserFactory(), UserFactory()
    lock(client, locked)
    assert attempt(Client(), other, PASSWORD).status_code == 302
    elsewhere = Client()
    assert attempt(elsewhere, locked, PASSWORD, address="10.0.0.2").status_code == 302
    assert logged_in(elsewhere)
    assert attempt(Client(), locked, PASSWORD).status_code == 429


def test_the_lock_expires_after_the_cool_off(client) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    lock(client, user)
    assert attempt(client, user, PASSWORD).status_code == 429
    # Attempts while locked are not counted, so the lock still dates from the fifth failure.
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=14)
    )
    assert attempt(client, user, PASSWORD).status_code == 429
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=2)
    )
    assert attempt(client, user, PASSWORD).status_code == 302 and logged_in(client)
    assert not AccessAttempt.objects.exists()


def test_axes_reset_lifts_every_lock(client) -> None:  # type: ignore[no-untyped-def]
    first, second = UserFactory(), UserFactory()
    lock(client, first)
    lock(client, second)
    out = StringIO()
    call_command("axes_reset", stdout=out)
    assert "2 attempts removed" in out.getvalue()
    assert attempt(client, first, PASSWORD).status_code == 302
    assert attempt(Client(), second, PASSWORD).status_code == 302


def test_a_successful_login_clears_earlier_failures(client) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    for _ in range(4):
        attempt(client, user, "wrong password")
    assert attempt(client, user, PASSWORD).status_code == 302
    fresh = Client()
    assert [attempt(fresh, user, "wrong password").status_code for _ in range(4)] == [200] * 4
    assert attempt(fresh, user, PASSWORD).status_code == 302


def test_api_tokens_and_open_sessions_keep_working_while_the_login_is_locked(client) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    session = Client()
    assert attempt(session, user, PASSWORD).status_code == 302
    _, secret = create_api_token(user=user, name="script")
    lock(client, user)
    assert attempt(client, user, PASSWORD).status_code == 429
    assert logged_in(session)
    assert session.get("/api/issues/").status_code == 200
    api = Client(HTTP_AUTHORIZATION=f"Token {secret}", REMOTE_ADDR=HOME)
    assert api.get("/api/issues/").status_code == 200
    assert Client().get("/api/issues/", HTTP_AUTHORIZATION="Token not-a-token").status_code == 401


def test_limit_and_lockout_come_from_the_environment() -> None:
    env = {**os.environ, "LOGIN_FAILURE_LIMIT": "3", "LOGIN_LOCKOUT_MINUTES": "2"}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME.total_seconds(), s.AXES_LOCKOUT_PARAMETERS, "
        "s.AUTHENTICATION_BACKENDS[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == (
        "3 120.0 [['username', 'ip_address']] axes.backends.AxesStandaloneBackend"
    )
