"""ApiTokenAuthentication: a live token authenticates (Token or Bearer); missing, unknown,
revoked, expired and malformed tokens get 401 with WWW-Authenticate; last use is written at
most once a minute."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token, revoke_own_api_token
from tests.accounts.conftest import token_client

pytestmark = pytest.mark.django_db
URL = "/api/tokens/"  # any API route: this one answers with the caller's own tokens


def names(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [row["name"] for row in response.json()["results"]]


@pytest.mark.parametrize("keyword", ["Token", "Bearer", "token", "BEARER"])
def test_a_live_token_authenticates_as_its_owner(alice, alice_secret, keyword):
    response = token_client(alice_secret, keyword).get(URL)
    assert response.status_code == 200
    assert names(response) == ["notebook"]


def assert_refused(response, detail: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"] == 'Token realm="api"'
    assert detail in response.json()["detail"]


def test_no_token_is_401_with_the_scheme_to_use(alice_secret):
    assert_refused(APIClient().get(URL), "credentials were not provided")


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token ann_abcdefgh_" + "x" * 43, "Invalid API token"),
        ("Bearer garbage", "Invalid API token"),
        ("Token", "Malformed Authorization header"),
        ("Token two parts", "Malformed Authorization header"),
    ],
)
def test_unknown_or_malformed_tokens_are_401(alice_secret, header, detail):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_refused(client.get(URL), detail)


def test_a_token_that_is_not_ascii_is_401(alice_secret):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token ann_é")
    assert_refused(client.get(URL), "Invalid API token")


def test_a_token_with_a_character_changed_is_401(alice_secret):
    tampered = alice_secret[:-1] + ("A" if alice_secret[-1] != "A" else "B")
    assert_refused(token_client(tampered).get(URL), "Invalid API token")


def test_a_revoked_token_is_401(alice, alice_secret):
    client = token_client(alice_secret)
    assert client.get(URL).status_code == 200
    revoke_own_api_token(user=alice, token_id=ApiToken.objects.get().pk)
    assert_refused(client.get(URL), "This API token is revoked")


def test_an_expired_token_is_401(alice):
    token, secret = create_api_token(user=alice, name="short", days=1)
    client = token_client(secret)
    assert client.get(URL).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_refused(client.get(URL), "This API token is expired")


def test_the_token_of_an_inactive_user_is_401(alice, alice_secret):
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert_refused(token_client(alice_secret).get(URL), "inactive")


def test_another_scheme_is_left_to_the_other_classes(alice_secret):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic YWxpY2U6cGFzc3dvcmQ=")
    assert_refused(client.get(URL), "credentials were not provided")


def test_a_session_still_authenticates_the_api(client, alice, alice_secret):
    client.force_login(alice)
    assert client.get(URL).status_code == 200


def updates_of_tokens(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]


def test_last_use_is_written_at_most_once_a_minute(alice, alice_secret):
    client = token_client(alice_secret)
    token = ApiToken.objects.get()
    assert token.last_used_at is None
    client.get(URL)
    first = ApiToken.objects.get().last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=10)

    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert client.get(URL).status_code == 200
    assert updates_of_tokens(queries) == []
    assert ApiToken.objects.get().last_used_at == first

    # 59 s ago: still within the minute, no write
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(seconds=59))
    with CaptureQueriesContext(connection) as queries:
        client.get(URL)
    assert updates_of_tokens(queries) == []

    # Past the minute: one write, the next request none
    stale = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.update(last_used_at=stale)
    with CaptureQueriesContext(connection) as queries:
        client.get(URL)
        client.get(URL)
    assert len(updates_of_tokens(queries)) == 1
    assert ApiToken.objects.get().last_used_at > stale + timedelta(seconds=100)


def test_a_warm_token_costs_one_query(alice, alice_secret):
    """The token and its user in one SELECT; nothing else for authentication."""
    client = token_client(alice_secret)
    client.get(URL)
    with CaptureQueriesContext(connection) as queries:
        client.get(URL)
    lookups = [q["sql"] for q in queries.captured_queries if '"key_hash" = ' in q["sql"]]
    assert len(lookups) == 1 and "auth_user" in lookups[0]
