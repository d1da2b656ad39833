"""Sign in with GitHub against a local server speaking GitHub's OAuth endpoints
(tests/accounts/fake_github_oauth.py), browser-less through Django's test client: the button
posts to allauth's GitHub login, which redirects to /login/oauth/authorize; the fake answers
as GitHub's consent page would (a redirect back with a code, or access_denied), and the
callback exchanges the code (POST /login/oauth/access_token) and reads GET /user and
/user/emails. Off unless configured; new accounts, returning ones, names that are taken, an
e-mail address a local account has, invitation links, cancelled and refused authorizations."""

from __future__ import annotations

import http.client
import logging
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount, SocialToken
from cryptography.fernet import Fernet
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotator.accounts import crypto
from annotator.accounts.models import GitHubToken
from annotator.accounts.services import github_token_for, store_github_token
from annotator.studies.models import Membership
from annotator.studies.services import create_invitation
from tests.accounts.fake_github_oauth import FakeGitHubOAuth, GitHubUser
from tests.factories import PASSWORD, UserFactory
from tests.security.helpers import inline_code
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db
User = get_user_model()
OCTO_EMAIL = "octo@users.github.example"


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def oauth(settings: Any, key: str) -> Iterator[FakeGitHubOAuth]:
    """GitHub sign-in configured against the local server, with a token key."""
    server = FakeGitHubOAuth(
        user=GitHubUser(
            login="octocat",
            id=583231,
            name="Mona Lisa Octocat",
            emails=[
                {"email": OCTO_EMAIL, "primary": True, "verified": True, "visibility": "private"},
                {
                    "email": "583231+octocat@users.noreply.github.com",
                    "primary": False,
                    "verified": True,
                    "visibility": None,
                },
            ],
        )
    ).start()
    settings.SOCIALACCOUNT_PROVIDERS = {
        "github": {
            "APPS": [{"client_id": server.client_id, "secret": server.client_secret}],
            "GITHUB_URL": server.url,
            "SCOPE": ["read:user", "user:email", "public_repo"],
        }
    }
    settings.TOKEN_KEYS = [key]
    yield server
    server.stop()


def consent(url: str) -> str:
    """What GitHub's authorize page answers (no browser here): the Location it redirects to."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=10)
    conn.request("GET", f"{parts.path}?{parts.query}")
    answer = conn.getresponse()
    answer.read()
    conn.close()
    assert answer.status == 302, answer.status
    return answer.getheader("Location") or ""


def sign_in(client: Client, oauth: FakeGitHubOAuth, **form: str) -> Any:
    """Press "Sign in with GitHub", answer on GitHub, come back: the callback's response."""
    start = client.post(reverse("github_login"), form)
    assert start.status_code == 302
    assert start["Location"].startswith(f"{oauth.url}/login/oauth/authorize?")
    back = urllib.parse.urlsplit(consent(start["Location"]))
    assert (back.scheme, back.netloc, back.path) == (
        "http",
        "testserver",
        reverse("github_callback"),
    )
    return client.get(f"{back.path}?{back.query}")


def signed_in_as(client: Client) -> str | None:
    response = client.get(reverse("accounts:tokens"))
    return response.context["user"].username if response.status_code == 200 else None


def raw_ciphertexts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ciphertext FROM {GitHubToken._meta.db_table}")
        return [row[0] for row in cursor.fetchall()]


# --- off unless configured -------------------------------------------------------------------
def test_without_configuration_there_is_no_button_and_the_routes_are_404(client):
    html = client.get(reverse("login")).content.decode()
    assert "Sign in with GitHub" not in html and 'name="password"' in html
    for name in ("github_login", "github_callback", "socialaccount_login_cancelled"):
        assert client.get(reverse(name)).status_code == 404
    assert client.post(reverse("github_login")).status_code == 404


def test_configured_the_login_page_shows_a_button_posting_to_the_github_login(client, oauth):
    response = client.get(reverse("login") + "?next=/studies/")
    html = response.content.decode()
    assert f'<form method="post" action="{reverse("github_login")}"' in html
    assert "Sign in with GitHub</button>" in html
    assert '<input type="hidden" name="next" value="/studies/">' in html
    assert 'name="password"' in html  # the local login stays
    assert inline_code(html) == []


def settings_in_a_fresh_process(**env: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'annotator.settings'; "
        "from django.conf import settings; "
        "print(settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action'][1:], "
        "settings.SOCIALACCOUNT_PROVIDERS['github']['SCOPE'])"
    )
    keep = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_OAUTH")}
    return subprocess.run(
        [sys.executable, "-c", code], env={**keep, **env}, capture_output=True, text=True
    )


def test_the_operators_settings_allow_github_as_a_form_target_and_ask_the_scope():
    """The button's form is answered by a redirect to GitHub's authorize page, which the
    policy's form-action must allow (browsers check a form's redirects too)."""
    off = settings_in_a_fresh_process()
    assert off.stdout.split("] ")[0] == "["
    on = settings_in_a_fresh_process(
        GITHUB_OAUTH_CLIENT_ID="Iv1.x",
        GITHUB_OAUTH_URL="https://ghe.example.org/",
        GITHUB_OAUTH_REPO_SCOPE="repo",
    )
    assert on.stdout.strip() == "['https://ghe.example.org'] ['read:user', 'user:email', 'repo']"
    bad = settings_in_a_fresh_process(GITHUB_OAUTH_REPO_SCOPE="admin:org")
    assert bad.returncode != 0
    assert "GITHUB_OAUTH_REPO_SCOPE must be empty, public_repo or repo" in bad.stderr


def test_a_get_on_the_github_login_asks_before_going_to_github(client, oauth):
    response = client.get(reverse("github_login"))
    assert response.status_code == 200
    assert "Continue to GitHub" in response.content.decode()
    assert oauth.requests == []


# --- a new account ----------------------------------------------------------------------------
def test_a_first_github_sign_in_makes_an_account_named_after_the_login(client, oauth, caplog):
    caplog.set_level(logging.DEBUG)
    response = sign_in(client, oauth, next="/studies/")

    assert response.status_code == 302 and response["Location"] == "/studies/"
    user = User.objects.get(username="octocat")
    assert signed_in_as(client) == "octocat"
    assert user.email == OCTO_EMAIL and not user.has_usable_password()
    account = SocialAccount.objects.get(user=user)
    assert (account.provider, account.uid) == ("github", "583231")
    # What GitHub was asked: the configured scopes, our callback, and the code exchanged.
    authorize = oauth.seen("/login/oauth/authorize")[0].params
    assert sorted(authorize["scope"].split()) == ["public_repo", "read:user", "user:email"]
    assert authorize["redirect_uri"] == "http://testserver/account/github/login/callback/"
    exchange = oauth.seen("/login/oauth/access_token")[0].params
    assert exchange["client_secret"] == oauth.client_secret
    (token,) = oauth.issued()
    assert oauth.seen("/api/v3/user")[0].authorization == f"token {token}"
    # The token is kept encrypted, never by allauth in clear, never logged.
    stored = GitHubToken.objects.get(user=user)
    assert stored.source == "sign-in" and stored.scopes == "read:user,user:email"
    assert stored.github_login == "octocat"
    assert github_token_for(user) == token
    assert SocialToken.objects.count() == 0
    assert all(token not in text for text in raw_ciphertexts())
    assert all(token not in record.getMessage() for record in caplog.records)
    assert not any(token in s.session_data for s in Session.objects.all())


def test_signing_in_again_opens_the_same_account_and_keeps_the_new_token(client, oauth):
    sign_in(client, oauth)
    client.post(reverse("logout"))
    assert signed_in_as(client) is None

    response = sign_in(client, oauth)

    assert response.status_code == 302 and response["Location"] == reverse("issues:list")
    assert User.objects.filter(socialaccount__provider="github").count() == 1
    assert signed_in_as(client) == "octocat"
    first, second = oauth.issued()
    assert first != second
    assert github_token_for(User.objects.get(username="octocat")) == second


def test_a_taken_name_gets_a_number_and_the_local_account_is_untouched(client, oauth):
    local = UserFactory(username="OctoCat", email="someone-else@example.org")
    UserFactory(username="octocat-2", email="third@example.org")

    sign_in(client, oauth)

    new = User.objects.get(socialaccount__provider="github")
    assert new.username == "octocat-3" and new.pk != local.pk
    html = client.get(reverse("accounts:tokens")).content.decode()
    assert "named octocat-3: the name octocat is not available here" in html
    assert signed_in_as(client) == "octocat-3"
    local.refresh_from_db()
    assert local.check_password(PASSWORD) and not SocialAccount.objects.filter(user=local).exists()


def test_a_github_login_shaped_like_a_rater_name_gets_a_prefix(client, oauth):
    oauth.user = GitHubUser(login="s12-rater-bob", id=77, emails=[])
    sign_in(client, oauth)
    assert User.objects.get(socialaccount__uid="77").username == "gh-s12-rater-bob"


def test_an_email_a_local_account_has_is_refused_and_nothing_is_made(client, oauth):
    local = UserFactory(username="mona", email=OCTO_EMAIL.upper())
    users = User.objects.count()

    response = sign_in(client, oauth)

    assert response.status_code == 409
    html = response.content.decode()
    assert "An account here already has your e-mail address" in html
    assert "connect GitHub on your account page" in html
    assert User.objects.count() == users and SocialAccount.objects.count() == 0
    assert GitHubToken.objects.count() == 0 and signed_in_as(client) is None
    (token,) = oauth.issued()
    assert not any(token in s.session_data for s in Session.objects.all())
    local.refresh_from_db()
    assert local.check_password(PASSWORD)


def test_an_unverified_address_neither_blocks_nor_becomes_the_accounts(client, oauth):
    """Anyone can add any address to a GitHub account, unverified: it must not reveal or
    block a local account, nor be given to the new one."""
    UserFactory(username="mona", email="mona@example.org")
    oauth.user = GitHubUser(
        login="mallory",
        id=99,
        email="mona@example.org",
        emails=[
            {"email": "mona@example.org", "primary": True, "verified": False, "visibility": None},
            {
                "email": "mallory@github.example",
                "primary": False,
                "verified": True,
                "visibility": None,
            },
        ],
    )
    response = sign_in(client, oauth)
    assert response.status_code == 302
    mallory = User.objects.get(socialaccount__uid="99")
    assert mallory.username == "mallory" and mallory.email == "mallory@github.example"
    assert list(EmailAddress.objects.values_list("email", flat=True)) == ["mallory@github.example"]


# --- refused, cancelled, forged ---------------------------------------------------------------
def test_cancelling_on_github_changes_nothing_and_says_so(client, oauth):
    oauth.approve = False
    response = sign_in(client, oauth)
    assert response.status_code == 302
    assert response["Location"] == reverse("socialaccount_login_cancelled")
    page = client.get(response["Location"])
    assert "You did not authorize this site on GitHub" in page.content.decode()
    assert User.objects.count() == 0 and signed_in_as(client) is None
    assert oauth.seen("/login/oauth/access_token") == []


def test_a_refused_code_exchange_is_an_error_page_and_changes_nothing(client, oauth, settings):
    settings.SOCIALACCOUNT_PROVIDERS["github"]["APPS"][0]["secret"] = "not-the-secret"
    response = sign_in(client, oauth)
    assert response.status_code == 401
    assert "Sign-in with GitHub failed" in response.content.decode()
    assert User.objects.count() == 0 and GitHubToken.objects.count() == 0
    assert oauth.issued() == [] and oauth.seen("/api/v3/user") == []


def test_a_callback_with_a_forged_state_is_refused(client, oauth):
    start = client.post(reverse("github_login"))
    assert start.status_code == 302
    response = client.get(reverse("github_callback") + "?code=abc&state=forged")
    assert response.status_code == 401
    assert User.objects.count() == 0 and oauth.seen("/login/oauth/access_token") == []


def test_without_a_key_sign_in_works_and_no_token_is_kept(client, oauth, settings):
    settings.TOKEN_KEYS = []
    sign_in(client, oauth)
    assert signed_in_as(client) == "octocat"
    assert GitHubToken.objects.count() == 0 and SocialToken.objects.count() == 0


def test_a_pasted_token_is_not_replaced_by_the_sign_in_one(client, oauth):
    sign_in(client, oauth)
    user = User.objects.get(username="octocat")
    store_github_token(user=user, token="ghp_pastedPastedPasted0123456789abcd", source="pasted")
    client.post(reverse("logout"))
    sign_in(client, oauth)
    assert github_token_for(user) == "ghp_pastedPastedPasted0123456789abcd"


# --- invitation links -------------------------------------------------------------------------
def test_an_invited_person_signs_in_with_github_on_the_link_and_joins(client, oauth):
    world = make_world(items=1, annotators=0)
    invitation = create_invitation(study=world.study, role="annotator")
    link = invitation.get_absolute_url()
    page = client.get(link).content.decode()
    assert "Sign in with GitHub to join" in page
    assert f'<input type="hidden" name="next" value="{link}">' in page

    response = sign_in(client, oauth, next=link)

    assert response.status_code == 302 and response["Location"] == link
    assert "Join it as <strong>octocat</strong>?" in client.get(link).content.decode()
    joined = client.post(link)
    assert joined.status_code == 302
    member = Membership.objects.get(study=world.study, user__username="octocat")
    assert member.role == "annotator"
    invitation.refresh_from_db()
    assert invitation.uses == 1


def test_an_invited_person_whose_email_has_an_account_connects_github_then_joins(client, oauth):
    """The address is refused on the link (no second account, no takeover); the person logs in
    with the password, connects GitHub on the account page, and from then on Sign in with
    GitHub opens that account, which joins by the link."""
    world = make_world(items=1, annotators=0)
    mona = UserFactory(username="mona", email=OCTO_EMAIL)
    link = create_invitation(study=world.study).get_absolute_url()

    assert sign_in(client, oauth, next=link).status_code == 409
    assert not Membership.objects.filter(user=mona).exists() and User.objects.count() == 2

    client.post(reverse("login"), {"username": "mona", "password": PASSWORD})
    page = client.get(reverse("accounts:github")).content.decode()
    assert "Connect GitHub</button>" in page
    connected = sign_in(client, oauth, process="connect", next=reverse("accounts:github"))
    assert connected.status_code == 302 and connected["Location"] == reverse("accounts:github")
    assert SocialAccount.objects.get(uid="583231").user == mona
    assert github_token_for(mona) == oauth.issued()[-1]
    assert (
        "Connected to the GitHub login <strong>octocat</strong>"
        in client.get(reverse("accounts:github")).content.decode()
    )

    client.post(reverse("logout"))
    assert sign_in(client, oauth, next=link)["Location"] == link
    assert signed_in_as(client) == "mona"
    client.post(link)
    assert Membership.objects.filter(study=world.study, user=mona).exists()
    assert User.objects.count() == 2


def test_a_local_login_and_its_lockout_are_unchanged_when_github_is_configured(
    client, oauth, settings
):
    UserFactory(username="carol")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": "carol", "password": "wrong"})
    locked = client.post(reverse("login"), {"username": "carol", "password": PASSWORD})
    assert locked.status_code == 429
    assert signed_in_as(client) is None


def test_stored_tokens_open_only_with_a_configured_key(oauth, key):
    user = UserFactory()
    store_github_token(user=user, token="ghp_secretSecret0123456789", source="pasted")
    (stored,) = raw_ciphertexts()
    assert stored.startswith("gAAAAA") and "ghp_" not in stored
    assert crypto.decrypt(stored, [key]) == "ghp_secretSecret0123456789"
    with pytest.raises(crypto.TokenKeyError, match="no key in ANNOTATOR_TOKEN_KEYS opens"):
        crypto.decrypt(stored, [Fernet.generate_key().decode()])


def test_a_malformed_key_does_not_stop_the_sign_in_and_the_log_names_no_token(
    client, oauth, settings, caplog
):
    settings.TOKEN_KEYS = ["not-a-fernet-key"]
    sign_in(client, oauth)
    assert signed_in_as(client) == "octocat" and GitHubToken.objects.count() == 0
    (token,) = oauth.issued()
    logged = [r.getMessage() for r in caplog.records if r.name == "annotator.accounts.github"]
    assert logged == [
        f"GitHub token of user #{User.objects.get().pk} not kept: field 'token': ANNOTATOR_TOKEN_KEYS key 1 is not a Fernet key (32 url-safe base64-encoded bytes)"
    ]
    assert all(token not in record.getMessage() for record in caplog.records)


def test_the_system_checks_name_a_malformed_key_and_sign_in_without_keys(settings, oauth):
    from annotator.accounts.checks import check_sign_in_keeps_tokens, check_token_keys

    assert check_token_keys() == [] and check_sign_in_keeps_tokens() == []
    settings.TOKEN_KEYS = [Fernet.generate_key().decode(), "short"]
    assert [(m.id, m.msg) for m in check_token_keys()] == [
        (
            "accounts.E001",
            "ANNOTATOR_TOKEN_KEYS key 2 is not a Fernet key (32 url-safe base64-encoded bytes)",
        )
    ]
    settings.TOKEN_KEYS = []
    assert [m.id for m in check_sign_in_keeps_tokens()] == ["accounts.W001"]
