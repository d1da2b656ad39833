"""In Chromium, under the app's Content-Security-Policy: a person presses "Sign in with GitHub"
on the login page (by keyboard), passes the local GitHub's consent (fake_github_oauth.py) and
arrives signed in; the account page then says a token is kept, without showing it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import expect

from annotator.accounts.services import github_token_for
from annotator.studies.models import Membership
from annotator.studies.services import create_invitation
from tests.accounts.fake_github_oauth import FakeGitHubOAuth, GitHubUser
from tests.studies.factories import make_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def oauth(settings: Any) -> Iterator[FakeGitHubOAuth]:
    server = FakeGitHubOAuth(user=GitHubUser(login="octocat", id=1, emails=[])).start()
    settings.SOCIALACCOUNT_PROVIDERS = {
        "github": {
            "APPS": [{"client_id": server.client_id, "secret": server.client_secret}],
            "GITHUB_URL": server.url,
            "SCOPE": ["read:user", "user:email"],
        }
    }
    settings.TOKEN_KEYS = [Fernet.generate_key().decode()]
    # What settings.py derives from GITHUB_OAUTH_URL: the button's form may end on GitHub.
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"].append(server.url)
    settings.CONTENT_SECURITY_POLICY = policy
    yield server
    server.stop()


def test_sign_in_with_github_from_the_login_page(page, live_server, oauth, django_user_model):
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server.url}/login/")
    button = page.get_by_role("button", name="Sign in with GitHub")
    expect(button).to_be_visible()
    box = button.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 720  # no scrolling to find it
    page.screenshot(path="/tmp/signin-login.png")

    button.focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    assert page.url == f"{live_server.url}/issues/"
    expect(page.locator(".who")).to_have_text("octocat")
    user = django_user_model.objects.get(username="octocat")
    (token,) = oauth.issued()
    assert github_token_for(user) == token

    page.goto(f"{live_server.url}/account/github/")
    expect(page.locator("[data-stored]")).to_contain_text("granted at sign-in with GitHub")
    assert token not in page.content()
    page.screenshot(path="/tmp/signin-account.png", full_page=True)
    assert violations == []


def test_join_a_study_by_its_link_with_github(page, live_server, oauth):
    world = make_world(items=1, annotators=0)
    link = create_invitation(study=world.study, role="annotator").get_absolute_url()
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server.url}{link}")
    button = page.get_by_role("button", name="Sign in with GitHub to join")
    expect(button).to_be_visible()
    page.screenshot(path="/tmp/signin-join.png", full_page=True)

    button.click()

    expect(page.get_by_text("Join it as octocat?")).to_be_visible()
    assert page.url == f"{live_server.url}{link}"
    page.get_by_role("button", name="Join").click()
    expect(page.get_by_text("You are a member of")).to_be_visible()
    assert Membership.objects.filter(study=world.study, user__username="octocat").exists()
