"""Invitation links: sign up on one (logged out), log in on one, or join by one (logged in);
links expire, are limited in uses and can be revoked, and a dead link says why and creates
nothing. The members page lists the live links with their role, expiry and uses left."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotator.studies.errors import StudyError
from annotator.studies.models import Invitation, Membership
from annotator.studies.services import accept_invitation, create_invitation, create_study
from tests.factories import PASSWORD, UserFactory
from tests.security.helpers import inline_code
from tests.studies.factories import make_world

NEW_PASSWORD = "violet kettle under moonlight"


@pytest.fixture(autouse=True)
def fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def signup(client: Client, invitation: Invitation, **fields: str) -> Any:
    data = {
        "action": "signup",
        "signup-username": "newcomer",
        "signup-email": "newcomer@example.org",
        "signup-password1": NEW_PASSWORD,
        "signup-password2": NEW_PASSWORD,
        **{f"signup-{key}": value for key, value in fields.items()},
    }
    return client.post(invitation.get_absolute_url(), data)


def test_logged_out_the_link_offers_an_account_or_a_login(client, world):
    invitation = create_invitation(study=world.study, role="adjudicator")
    response = client.get(invitation.get_absolute_url())
    html = response.content.decode()
    assert response.status_code == 200
    assert "Create an account" in html and "I have an account" in html
    assert "adjudicator" in html and world.study.name in html
    assert 'name="signup-password2"' in html and 'name="login-password"' in html
    assert inline_code(html) == []  # the Content-Security-Policy's rule holds here too


def test_signing_up_on_the_link_makes_a_member_with_its_role_and_opens_the_study(client, world):
    invitation = create_invitation(study=world.study, role="adjudicator")
    response = signup(client, invitation)
    assert response.status_code == 302 and response["Location"] == world.study.get_absolute_url()
    user = get_user_model().objects.get(username="newcomer")
    assert user.email == "newcomer@example.org" and user.check_password(NEW_PASSWORD)
    assert Membership.objects.get(study=world.study, user=user).role == "adjudicator"
    assert client.get(response["Location"]).status_code == 200  # logged in as the newcomer
    invitation.refresh_from_db()
    assert invitation.uses == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"password2": "something else entirely"}, "password fields didn"),
        ({"password1": "12345678", "password2": "12345678"}, "too common"),
        ({"username": "study-owner"}, "already exists"),
        ({"username": "STUDY-OWNER"}, "already exists"),
    ],
)
def test_a_bad_sign_up_says_why_and_creates_nothing(client, world, fields, message):
    invitation = create_invitation(study=world.study)
    users, members = get_user_model().objects.count(), Membership.objects.count()
    response = signup(client, invitation, **fields)
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")
    assert get_user_model().objects.count() == users
    assert Membership.objects.count() == members
    invitation.refresh_from_db()
    assert invitation.uses == 0


def expire(invitation: Invitation) -> None:
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now())


def revoke(invitation: Invitation) -> None:
    Invitation.objects.filter(pk=invitation.pk).update(revoked_at=timezone.now())


def use_up(invitation: Invitation) -> None:
    accept_invitation(token=invitation.token, user=UserFactory(username="first-comer"))


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (expire, "This invitation link expired on"),
        (revoke, "This invitation link was revoked by the study's owner."),
        (use_up, "This invitation link has been used as many times as it allows."),
    ],
    ids=["expired", "revoked", "used-up"],
)
def test_a_dead_link_says_why_and_creates_nothing(client, world, spoil, message):
    invitation = create_invitation(study=world.study, max_uses=1)
    spoil(invitation)
    users, members = get_user_model().objects.count(), Membership.objects.count()
    page = client.get(invitation.get_absolute_url())
    assert page.status_code == 410
    assert message in page.content.decode().replace("&#x27;", "'")
    assert "Create an account" not in page.content.decode()
    assert signup(client, invitation).status_code == 410
    stranger = UserFactory(username="stranger")
    client.force_login(stranger)
    assert client.post(invitation.get_absolute_url()).status_code == 410
    assert get_user_model().objects.count() == users + 1  # the stranger made here, no one else
    assert Membership.objects.count() == members
    with pytest.raises(StudyError, match=message.split(" on")[0]):
        accept_invitation(token=invitation.token, user=stranger)


def test_an_unknown_link_says_so(client, db):
    page = client.get(reverse("studies:join", args=["no-such-token"]))
    assert page.status_code == 410 and "This invitation link is not valid" in page.content.decode()


def test_logging_in_on_the_link_joins_at_once(client, world):
    invitation = create_invitation(study=world.study)
    member = UserFactory(username="returning")
    data = {"action": "login", "login-username": "returning", "login-password": PASSWORD}
    response = client.post(invitation.get_absolute_url(), data, REMOTE_ADDR="10.1.1.1")
    assert response.status_code == 302 and response["Location"] == world.study.get_absolute_url()
    assert Membership.objects.get(study=world.study, user=member).role == "annotator"


def test_wrong_passwords_on_the_link_count_for_the_login_lock(client, world):
    invitation = create_invitation(study=world.study)
    member = UserFactory(username="returning")
    data = {"action": "login", "login-username": "returning", "login-password": "wrong"}
    statuses = [
        client.post(invitation.get_absolute_url(), data, REMOTE_ADDR="10.1.1.2").status_code
        for _ in range(5)
    ]
    assert statuses == [400, 400, 400, 400, 429]  # django-axes: locked after five
    data["login-password"] = PASSWORD
    locked = client.post(invitation.get_absolute_url(), data, REMOTE_ADDR="10.1.1.2")
    assert locked.status_code == 429 and "Account locked" in locked.content.decode()
    assert not Membership.objects.filter(user=member).exists()


def test_a_signed_in_user_confirms_joining(client, world):
    invitation = create_invitation(study=world.study)
    newcomer = UserFactory(username="newcomer")
    client.force_login(newcomer)
    page = client.get(invitation.get_absolute_url()).content.decode()
    assert "Join it as <strong>newcomer</strong>?" in page and "Create an account" not in page
    assert client.post(invitation.get_absolute_url())["Location"] == world.study.get_absolute_url()
    assert Membership.objects.get(study=world.study, user=newcomer).role == "annotator"


def test_a_link_of_n_uses_takes_n_people_and_a_member_uses_none(world):
    invitation = create_invitation(study=world.study, max_uses=2)
    accept_invitation(token=invitation.token, user=world.annotators[0])  # a member already
    for name in ("first", "second"):
        accept_invitation(token=invitation.token, user=UserFactory(username=name))
    with pytest.raises(StudyError, match="used as many times"):
        accept_invitation(token=invitation.token, user=UserFactory(username="third"))
    invitation.refresh_from_db()
    assert invitation.uses == 2 and invitation.uses_left == 0


def test_an_unlimited_link_never_runs_out(world):
    invitation = create_invitation(study=world.study, max_uses=None)
    for n in range(3):
        accept_invitation(token=invitation.token, user=UserFactory(username=f"person-{n}"))
    invitation.refresh_from_db()
    assert invitation.uses == 3 and invitation.uses_left is None


def test_the_database_refuses_one_use_too_many(world):
    invitation = create_invitation(study=world.study, max_uses=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Invitation.objects.filter(pk=invitation.pk).update(uses=2)


def test_links_expire_after_the_configured_days(world, settings):
    settings.STUDIES_INVITATION_DAYS = 3
    invitation = create_invitation(study=world.study)
    assert abs(invitation.expires_at - timezone.now() - timedelta(days=3)) < timedelta(minutes=1)
    longer = create_invitation(study=world.study, days=30)
    assert longer.expires_at - invitation.expires_at > timedelta(days=26)


@pytest.mark.parametrize(
    ("options", "field"),
    [({"days": 0}, "days"), ({"days": 400}, "days"), ({"max_uses": 0}, "max_uses")],
)
def test_bad_link_options_are_refused(world, options, field):
    with pytest.raises(StudyError, match=f"field '{field}'"):
        create_invitation(study=world.study, **options)
    assert not Invitation.objects.exists()


# --- the members page ------------------------------------------------------------------------
def test_the_members_page_lists_live_links_with_role_expiry_uses_left_and_revoke(client, world):
    live = create_invitation(study=world.study, role="adjudicator", max_uses=3)
    dead = create_invitation(study=world.study)
    revoke(dead)
    client.force_login(world.owner)
    html = client.get(reverse("studies:members", args=[world.study.pk])).content.decode()
    row = html.split(f'data-invitation="{live.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "adjudicator" in row and "3 of 3" in row
    assert f"{live.expires_at:%Y-%m-%d %H:%M} UTC" in row
    assert reverse("studies:invitation_revoke", args=[world.study.pk, live.token]) in row
    assert dead.token not in html
    assert inline_code(html) == []


def test_the_invite_form_makes_a_link_of_its_days_and_uses(client, world):
    client.force_login(world.owner)
    url = reverse("studies:invite", args=[world.study.pk])
    response = client.post(url, {"role": "annotator", "days": "2", "max_uses": "5"})
    assert response.status_code == 302
    invitation = Invitation.objects.get()
    assert invitation.max_uses == 5
    assert invitation.expires_at - timezone.now() < timedelta(days=2, minutes=1)


def test_a_bad_invite_form_says_why_and_makes_nothing(client, world):
    client.force_login(world.owner)
    url = reverse("studies:invite", args=[world.study.pk])
    response = client.post(url, {"role": "annotator", "days": "0", "max_uses": "1"})
    assert response.status_code == 400
    assert "greater than or equal to 1" in response.content.decode()
    assert not Invitation.objects.exists()


def test_revoking_asks_first_then_kills_the_link(client, world):
    invitation = create_invitation(study=world.study)
    client.force_login(world.owner)
    url = reverse("studies:invitation_revoke", args=[world.study.pk, invitation.token])
    confirm = client.get(url)
    assert confirm.status_code == 200 and "This cannot be undone." in confirm.content.decode()
    invitation.refresh_from_db()
    assert invitation.revoked_at is None  # asking changed nothing
    assert client.post(url).status_code == 302
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None
    client.logout()
    assert client.get(invitation.get_absolute_url()).status_code == 410


def test_another_studys_link_cannot_be_revoked_here(client, world):
    other_owner = UserFactory(username="other-owner")
    other = create_study(name="Other", codebook_version=world.version, owner=other_owner)
    invitation = create_invitation(study=other)
    client.force_login(world.owner)
    url = reverse("studies:invitation_revoke", args=[world.study.pk, invitation.token])
    assert client.post(url).status_code == 404
    invitation.refresh_from_db()
    assert invitation.revoked_at is None


# --- the API ---------------------------------------------------------------------------------
def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_makes_links_with_expiry_and_uses_and_revokes_them(world):
    owner = api(world.owner)
    base = f"/api/studies/{world.study.pk}/invitations/"
    created = owner.post(f"{base}create/", {"days": 7, "max_uses": None}, format="json")
    assert created.status_code == 201
    assert created.data["max_uses"] is None and created.data["uses_left"] is None
    assert created.data["live"] is True and created.data["revoked_at"] is None
    token = created.data["token"]
    revoked = owner.post(f"{base}{token}/revoke/")
    assert revoked.status_code == 200 and revoked.data["live"] is False
    assert revoked.data["revoked_at"] is not None
    refused = owner.post(f"{base}create/", {"max_uses": 0}, format="json")
    assert refused.status_code == 400 and Invitation.objects.count() == 1
    annotator = api(world.annotators[0])
    assert annotator.post(f"{base}{token}/revoke/").status_code == 404


# --- in Chromium -----------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_signing_up_on_an_invitation_in_the_browser(page, live_server):
    world = make_world(items=2)
    invitation = create_invitation(study=world.study, role="annotator")
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(live_server.url + invitation.get_absolute_url())
    expect(page.get_by_role("heading", name=f"Join “{world.study.name}”")).to_be_visible()
    form = page.locator("#signup")
    expect(form.get_by_role("heading", name="Create an account")).to_be_visible()
    expect(page.get_by_role("heading", name="I have an account")).to_be_visible()
    form.get_by_label("Username").fill("newcomer")
    form.get_by_label("Email").fill("newcomer@example.org")
    form.get_by_label(re.compile(r"^Password:?$")).fill(NEW_PASSWORD)
    form.get_by_label("Password confirmation").fill(NEW_PASSWORD)
    button = form.get_by_role("button", name="Create account and join")
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
    assert box["y"] >= 0 and box["y"] + box["height"] <= 720  # on screen, not cut off
    # Nothing covers it: the point at its centre is the button (or its text).
    assert (
        page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('button')?.textContent",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        == "Create account and join"
    )
    button.click()
    expect(page).to_have_url(live_server.url + world.study.get_absolute_url())
    expect(page.get_by_text("you joined as annotator")).to_be_visible()
    expect(page.locator(".topbar .who")).to_have_text("newcomer")
    expect(page.get_by_role("link", name="Start labeling →")).to_be_visible()
    user = get_user_model().objects.get(username="newcomer")
    assert Membership.objects.get(study=world.study, user=user).role == "annotator"
    assert violations == []
