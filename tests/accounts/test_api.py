"""/api/tokens/: list one's own, create (session only; the secret in that response alone),
revoke (DELETE; others' tokens 404); documented in the OpenAPI schema."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token
from tests.accounts.conftest import token_client

pytestmark = pytest.mark.django_db


def session(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def test_list_shows_only_my_tokens_without_secrets(alice, bob, alice_secret):
    create_api_token(user=bob, name="bob's cron")
    response = token_client(alice_secret).get("/api/tokens/")
    assert response.status_code == 200 and response.data["count"] == 1
    row = response.json()["results"][0]
    assert row["name"] == "notebook" and row["state"] == "active"
    assert row["prefix"] == alice_secret[4:12] and row["last_used_at"] is not None
    assert "secret" not in row and "key_hash" not in row
    assert alice_secret[12:] not in response.content.decode()


def test_a_session_creates_a_token_that_then_works(alice):
    client = APIClient()
    client.force_login(alice)
    created = client.post("/api/tokens/", {"name": "ci", "days": 90}, format="json")
    assert created.status_code == 201, created.data
    assert created["Cache-Control"] == "no-store"
    secret = created.data["secret"]
    assert secret.startswith(f"ann_{created.data['prefix']}_")
    assert created.data["state"] == "active" and created.data["expires_at"]
    listed = token_client(secret).get("/api/tokens/")
    assert [row["id"] for row in listed.json()["results"]] == [created.data["id"]]
    assert "secret" not in listed.json()["results"][0]


def test_creating_through_the_session_needs_the_csrf_token(alice):
    response = session(alice).post("/api/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 403 and "CSRF" in response.data["detail"]
    assert not ApiToken.objects.exists()


def test_a_token_cannot_create_tokens(alice, alice_secret):
    response = token_client(alice_secret).post("/api/tokens/", {"name": "more"}, format="json")
    assert response.status_code == 403
    assert "A token cannot create tokens" in response.data["detail"]
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": ""}, "name"),
        ({}, "name"),
        ({"name": "x", "days": 0}, "days"),
        ({"name": "x", "days": 4000}, "days"),
        ({"name": "x", "days": "soon"}, "days"),
        ({"name": "x" * 101}, "name"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_creates_nothing(alice, data, field):
    client = APIClient()
    client.force_login(alice)
    response = client.post("/api/tokens/", data, format="json")
    assert response.status_code == 400 and list(response.data) == [field]
    assert not ApiToken.objects.exists()


def test_delete_revokes_my_token_and_the_token_stops_working(alice, alice_secret):
    other, other_secret = create_api_token(user=alice, name="second")
    client = token_client(alice_secret)
    assert client.delete(f"/api/tokens/{other.pk}/").status_code == 204
    other.refresh_from_db()
    assert other.state == "revoked"
    assert token_client(other_secret).get("/api/tokens/").status_code == 401
    assert client.delete(f"/api/tokens/{other.pk}/").status_code == 204  # again: unchanged
    assert ApiToken.objects.get(pk=other.pk).revoked_at == other.revoked_at
    # A script may revoke the token it is using; its next call is refused.
    mine = ApiToken.objects.get(name="notebook")
    assert client.delete(f"/api/tokens/{mine.pk}/").status_code == 204
    assert client.get("/api/tokens/").status_code == 401


def test_others_tokens_are_404_and_untouched(alice, bob, alice_secret):
    theirs, _ = create_api_token(user=bob, name="bob's cron")
    client = token_client(alice_secret)
    assert client.delete(f"/api/tokens/{theirs.pk}/").status_code == 404
    assert client.delete(f"/api/tokens/{theirs.pk + 1000}/").status_code == 404
    session_client = APIClient()
    session_client.force_login(alice)
    assert session_client.delete(f"/api/tokens/{theirs.pk}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_anonymous_requests_are_401(alice_secret):
    token = ApiToken.objects.get()
    for response in (
        APIClient().get("/api/tokens/"),
        APIClient().post("/api/tokens/", {"name": "x"}),
        APIClient().delete(f"/api/tokens/{token.pk}/"),
    ):
        assert response.status_code == 401
    assert ApiToken.objects.count() == 1 and ApiToken.objects.get().revoked_at is None


def test_the_schema_documents_the_token_scheme_and_routes(alice_secret):
    schema = token_client(alice_secret).get("/api/schema/", {"format": "json"}).json()
    scheme = schema["components"]["securitySchemes"]["apiToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert {"apiToken": []} in schema["paths"]["/api/issues/"]["get"]["security"]
    assert set(schema["paths"]["/api/tokens/"]) == {"get", "post"}
    assert set(schema["paths"]["/api/tokens/{id}/"]) == {"delete"}
    assert "secret" in schema["components"]["schemas"]["CreatedTokenOutput"]["properties"]
