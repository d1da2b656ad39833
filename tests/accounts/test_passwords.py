"""Password change (signed in) and reset by e-mail, with Django's views in the app's pages;
the login page links to the reset; the pages hold no inline code (Content-Security-Policy)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from tests.factories import PASSWORD, UserFactory
from tests.security.helpers import inline_code

NEW_PASSWORD = "violet kettle under moonlight"


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def logs_in(username: str, password: str) -> bool:
    """Through the login page, as a person would (django-axes needs the request)."""
    response = Client().post(reverse("login"), {"username": username, "password": password})
    return response.status_code == 302


def test_the_login_page_links_to_the_password_reset(client, db):
    html = client.get(reverse("login")).content.decode()
    assert f'<a href="{reverse("password_reset")}">Forgot your password?</a>' in html


def test_a_reset_mails_a_link_that_sets_a_new_password(client, db):
    user = UserFactory(username="alice", email="alice@example.org")
    asked = client.post(reverse("password_reset"), {"email": "alice@example.org"})
    assert asked.status_code == 302 and asked["Location"] == reverse("password_reset_done")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"] and "annotator" in message.subject
    assert '"alice"' in message.body
    link = re.search(r"https?://[^/\s]+(/account/password/reset/\S+/)", message.body)
    assert link is not None, message.body
    form = client.get(link.group(1), follow=True)  # Django swaps the token for a session key
    assert "Choose a new password" in form.content.decode()
    assert inline_code(form.content.decode()) == []
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")
    assert logs_in("alice", NEW_PASSWORD) and not logs_in("alice", PASSWORD)
    again = client.get(link.group(1), follow=True).content.decode()
    assert "Link not valid" in again  # a link works once
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)


def test_an_unknown_address_gets_the_same_answer_and_no_mail(client, db):
    UserFactory(username="alice", email="alice@example.org")
    asked = client.post(reverse("password_reset"), {"email": "mallory@example.org"})
    assert asked.status_code == 302 and asked["Location"] == reverse("password_reset_done")
    assert mail.outbox == []


def test_a_weak_new_password_is_refused_and_the_old_one_kept(client, db):
    UserFactory(username="alice", email="alice@example.org")
    client.post(reverse("password_reset"), {"email": "alice@example.org"})
    path = re.search(r"(/account/password/reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(path, follow=True)
    refused = client.post(
        form.redirect_chain[-1][0], {"new_password1": "12345678", "new_password2": "12345678"}
    )
    assert refused.status_code == 200 and "too common" in refused.content.decode()
    assert logs_in("alice", PASSWORD)


def test_a_signed_in_user_changes_their_password(client, db):
    UserFactory(username="alice")
    client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    page = client.get(reverse("password_change"))
    assert page.status_code == 200 and inline_code(page.content.decode()) == []
    data = {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    done = client.post(reverse("password_change"), data)
    assert done.status_code == 302 and done["Location"] == reverse("password_change_done")
    assert client.get(reverse("studies:list")).status_code == 200  # still logged in here
    assert logs_in("alice", NEW_PASSWORD) and not logs_in("alice", PASSWORD)


def test_a_wrong_old_password_changes_nothing(client, db):
    user = UserFactory(username="alice")
    client.force_login(user)
    data = {"old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    response = client.post(reverse("password_change"), data)
    assert response.status_code == 200 and "incorrectly" in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_the_top_bar_links_to_the_password_change(client, db):
    client.force_login(UserFactory(username="alice"))
    html = client.get(reverse("studies:list")).content.decode()
    assert f'<a class="who" href="{reverse("password_change")}"' in html


def test_signed_out_the_change_page_asks_to_log_in(client, db):
    response = client.get(reverse("password_change"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    "name", ["password_reset", "password_reset_done", "password_reset_complete"]
)
def test_the_reset_pages_are_open_and_hold_no_inline_code(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 200
    assert "Content-Security-Policy" in response.headers
    assert inline_code(response.content.decode()) == []
