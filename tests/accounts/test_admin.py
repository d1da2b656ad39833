"""The admin lists tokens by prefix, user and state, revokes them, and never edits a hash."""

from __future__ import annotations

import pytest

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/accounts/apitoken/"


@pytest.fixture
def staff_client(client):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(username="admin", is_staff=True, is_superuser=True))
    return client


def test_the_list_shows_prefix_user_and_state(staff_client, alice, bob):
    live, _ = create_api_token(user=alice, name="notebook")
    revoked, _ = create_api_token(user=bob, name="cron")
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=revoked.created_at)
    page = staff_client.get(CHANGELIST).content.decode()
    assert live.prefix in page and revoked.prefix in page
    assert "alice" in page and "bob" in page
    assert ">active<" in page and ">revoked<" in page
    assert live.key_hash not in page


def test_the_revoke_action_revokes_the_selected_tokens(staff_client, alice):
    chosen, _ = create_api_token(user=alice, name="one")
    kept, _ = create_api_token(user=alice, name="two")
    response = staff_client.post(
        CHANGELIST, {"action": "revoke", "_selected_action": [chosen.pk]}, follow=True
    )
    assert "1 token(s) revoked" in response.content.decode()
    assert ApiToken.objects.get(pk=chosen.pk).state == "revoked"
    assert ApiToken.objects.get(pk=kept.pk).state == "active"


def test_the_hash_is_not_editable_and_tokens_are_not_added_here(staff_client, alice):
    token, _ = create_api_token(user=alice, name="notebook")
    url = f"{CHANGELIST}{token.pk}/change/"
    form = staff_client.get(url).content.decode()
    assert 'name="key_hash"' not in form and 'name="name"' in form
    staff_client.post(url, {"name": "renamed", "key_hash": "0" * 64, "prefix": "XXXXXXXX"})
    token.refresh_from_db()
    assert token.name == "renamed"
    assert token.key_hash != "0" * 64 and token.prefix != "XXXXXXXX"
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403
