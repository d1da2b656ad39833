"""/account/tokens/: list, create (secret shown once), revoke after confirmation; each user
sees and revokes only their own tokens."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
LIST = "/account/tokens/"
SECRET = re.compile(r"ann_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}")


def revoke_url(token: ApiToken) -> str:
    return reverse("accounts:revoke", args=[token.pk])


def test_the_list_shows_only_my_tokens_with_their_facts(client, alice, bob):
    mine, _ = create_api_token(user=alice, name="notebook", days=7)
    gone, _ = create_api_token(user=alice, name="old script")
    create_api_token(user=alice, name="gone", days=1)
    ApiToken.objects.filter(name="gone").update(expires_at=mine.created_at)
    theirs, _ = create_api_token(user=bob, name="bob's cron")
    ApiToken.objects.filter(pk=gone.pk).update(revoked_at=gone.created_at)
    client.force_login(alice)

    page = client.get(LIST).content.decode()

    assert f"ann_{mine.prefix}_" in page and "notebook" in page
    assert theirs.prefix not in page and "bob" not in page.split("</header>")[1]
    states = dict(re.findall(r'data-token-row="(\w+)".*?data-state="(\w+)"', page, re.S))
    assert states == {
        mine.prefix: "active",
        gone.prefix: "revoked",
        ApiToken.objects.get(name="gone").prefix: "expired",
    }
    assert page.count("Revoke…") == 2  # not for the revoked one
    assert 'href="/account/tokens/"' in page and ">API tokens</a>" in page  # the nav link


def test_creating_shows_the_secret_once_and_never_again(client, alice):
    client.force_login(alice)
    created = client.post(LIST, {"name": "analysis notebook", "days": "30"})
    assert created.status_code == 200
    assert created["Cache-Control"] == "no-store"
    secrets = set(SECRET.findall(created.content.decode()))
    assert len(secrets) == 1
    assert "not shown again" in created.content.decode()
    token = ApiToken.objects.get()
    assert (token.name, token.user, token.expires_at is not None) == (
        "analysis notebook",
        alice,
        True,
    )
    again = client.get(LIST).content.decode()
    assert token.prefix in again and not SECRET.search(again)


def test_htmx_creation_answers_with_the_tokens_partial(client, alice):
    client.force_login(alice)
    response = client.post(LIST, {"name": "cli"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<div id="tokens">')
    assert "<html" not in body and SECRET.search(body)
    assert ApiToken.objects.get().expires_at is None


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"name": "", "days": ""}, "name", "This field is required"),
        ({"name": "   ", "days": ""}, "name", "This field is required"),
        ({"name": "x", "days": "0"}, "days", "greater than or equal to 1"),
        ({"name": "x", "days": "99999"}, "days", "less than or equal to 3650"),
        ({"name": "x", "days": "soon"}, "days", "Enter a whole number"),
        ({"name": "n" * 101, "days": ""}, "name", "at most 100 characters"),
    ],
)
def test_bad_input_names_the_field_and_creates_nothing(client, alice, data, field, message):
    client.force_login(alice)
    response = client.post(LIST, data)
    assert response.status_code == 400
    form = response.context["form"]
    assert message in " ".join(form.errors[field])
    assert message in response.content.decode()
    assert not ApiToken.objects.exists() and not SECRET.search(response.content.decode())
    partial = client.post(LIST, data, **HTMX)  # htmx swaps only 2xx: errors come as 200
    assert partial.status_code == 200 and message in partial.content.decode()


def test_revoking_asks_first_then_revokes_on_post(client, alice):
    token, _ = create_api_token(user=alice, name="notebook")
    client.force_login(alice)

    confirm = client.get(revoke_url(token))
    assert (
        confirm.status_code == 200 and "Every script using it gets 401" in confirm.content.decode()
    )
    partial = client.get(revoke_url(token), **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="revoke-confirm"') and "<html" not in partial
    token.refresh_from_db()
    assert token.revoked_at is None  # GET changes nothing

    response = client.post(revoke_url(token), follow=True)
    token.refresh_from_db()
    assert token.state == "revoked" and response.redirect_chain[-1][0] == LIST
    assert "revoked" in response.content.decode()
    first = token.revoked_at
    client.post(revoke_url(token))
    token.refresh_from_db()
    assert token.revoked_at == first  # a second revoke keeps the first date


def test_others_tokens_are_404_and_untouched(client, alice, bob):
    theirs, _ = create_api_token(user=bob, name="bob's cron")
    client.force_login(alice)
    assert client.get(revoke_url(theirs)).status_code == 404
    assert client.post(revoke_url(theirs)).status_code == 404
    assert client.get(reverse("accounts:revoke", args=[theirs.pk + 1000])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_revoking_needs_post_and_anonymous_users_log_in_first(client, alice):
    token, _ = create_api_token(user=alice, name="notebook")
    for url in (LIST, revoke_url(token)):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    client.post(revoke_url(token))
    client.force_login(alice)
    assert client.put(revoke_url(token)).status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_pages_have_no_inline_script_or_style(client, alice):
    token, _ = create_api_token(user=alice, name="notebook")
    client.force_login(alice)
    pages = [client.get(LIST), client.post(LIST, {"name": "x"}), client.get(revoke_url(token))]
    for page in pages:
        html = page.content.decode()
        assert " style=" not in html and "<style" not in html
        assert re.findall(r"<script(?![^>]*\bsrc=)", html) == []
        assert not re.search(r"\son[a-z]+=", html)
