"""Per-user GitHub tokens: pasted on the account page (never shown back), deleted after a
confirmation, encrypted at rest (the raw column holds no token, and the database refuses a
plaintext one), re-encrypted by `manage.py rotate_token_keys` when a key is rotated."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from annotator.accounts import crypto
from annotator.accounts.errors import GitHubTokenError
from annotator.accounts.models import GitHubToken
from annotator.accounts.services import github_token_for, store_github_token
from tests.backup.archives import dump_to, labelled_world, read
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
SECRET = "ghp_R4nd0mLooking0Secret0Value0123456789"


def new_key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def key(settings: Any) -> str:
    settings.TOKEN_KEYS = [new_key()]
    return str(settings.TOKEN_KEYS[0])


def raw_rows() -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {GitHubToken._meta.db_table}")
        return cursor.fetchall()


# --- the account page -------------------------------------------------------------------------
def test_a_pasted_token_is_stored_encrypted_and_never_shown_back(logged_in_client, user, key):
    page = logged_in_client.get(reverse("accounts:github"))
    assert page.status_code == 200 and "No token stored" in page.content.decode()

    response = logged_in_client.post(reverse("accounts:github"), {"token": f"  {SECRET}\n"})

    assert response.status_code == 302 and response["Location"] == reverse("accounts:github")
    assert github_token_for(user) == SECRET
    page = logged_in_client.get(reverse("accounts:github"))
    html = page.content.decode()
    assert "A token is stored, pasted on the account page" in html
    assert SECRET not in html and SECRET[-4:] not in html
    assert page["Cache-Control"] == "no-store"
    assert all(SECRET not in str(value) for row in raw_rows() for value in row)


@pytest.mark.parametrize(
    ("pasted", "message"),
    [
        ("", "This field is required."),
        ("ghp_two words", "not a GitHub token"),
        ("ghp_é" + "x" * 10, "not a GitHub token"),
    ],
)
def test_a_bad_paste_names_the_field_and_stores_nothing(logged_in_client, key, pasted, message):
    response = logged_in_client.post(reverse("accounts:github"), {"token": pasted})
    assert response.status_code == 400
    assert message in str(response.context["form"].errors["token"])
    assert pasted.strip() == "" or pasted not in response.content.decode()
    assert GitHubToken.objects.count() == 0


def test_without_a_key_the_page_says_so_and_a_paste_is_refused(logged_in_client, settings):
    settings.TOKEN_KEYS = []
    html = logged_in_client.get(reverse("accounts:github")).content.decode()
    assert "keeps no GitHub tokens" in html and 'name="token"' not in html
    response = logged_in_client.post(reverse("accounts:github"), {"token": SECRET})
    assert response.status_code == 400
    assert "set ANNOTATOR_TOKEN_KEYS" in str(response.context["form"].errors["token"])
    assert GitHubToken.objects.count() == 0


def test_deleting_the_token_asks_first_then_deletes(logged_in_client, user, key):
    store_github_token(user=user, token=SECRET, source="pasted")
    url = reverse("accounts:github_forget")
    confirm = logged_in_client.get(url)
    assert "Delete my GitHub token" in confirm.content.decode()
    partial = logged_in_client.get(url, headers={"HX-Request": "true"})
    assert partial.content.decode().lstrip().startswith('<div id="forget-confirm"')
    assert GitHubToken.objects.count() == 1

    response = logged_in_client.post(url)

    assert response.status_code == 302
    assert GitHubToken.objects.count() == 0 and github_token_for(user) is None


def test_another_users_token_is_neither_shown_nor_touched(client, key):
    alice, bob = UserFactory(), UserFactory()
    store_github_token(user=alice, token=SECRET, source="pasted", github_login="alice-gh")
    client.force_login(bob)
    assert "alice-gh" not in client.get(reverse("accounts:github")).content.decode()
    client.post(reverse("accounts:github_forget"))
    assert github_token_for(alice) == SECRET


# --- at rest ----------------------------------------------------------------------------------
def test_the_database_refuses_a_token_stored_in_clear(key):
    user = UserFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        GitHubToken.objects.create(user=user, ciphertext=SECRET, source="pasted")


def test_two_stores_of_one_token_differ_and_replace_each_other(key):
    user = UserFactory()
    first = store_github_token(user=user, token=SECRET, source="pasted").ciphertext
    second = store_github_token(user=user, token=SECRET, source="pasted").ciphertext
    assert first != second  # Fernet's random IV: equal tokens do not show as equal rows
    assert GitHubToken.objects.count() == 1


def test_a_malformed_key_is_named(settings):
    settings.TOKEN_KEYS = [new_key(), "not-a-key"]
    with pytest.raises(GitHubTokenError, match="key 2 is not a Fernet key"):
        store_github_token(user=UserFactory(), token=SECRET, source="pasted")


# --- key rotation -----------------------------------------------------------------------------
def test_rotating_keys_re_encrypts_every_row_with_the_new_key(settings):
    old, new = new_key(), new_key()
    settings.TOKEN_KEYS = [old]
    people = [UserFactory() for _ in range(3)]
    for number, person in enumerate(people):
        store_github_token(user=person, token=f"{SECRET}{number}", source="pasted")
    before = dict(GitHubToken.objects.values_list("pk", "ciphertext"))

    settings.TOKEN_KEYS = [new, old]  # the new key first, the old one still after it
    out = io.StringIO()
    call_command("rotate_token_keys", stdout=out)

    assert out.getvalue().strip() == "re-encrypted 3"
    after = dict(GitHubToken.objects.values_list("pk", "ciphertext"))
    assert all(after[pk] != before[pk] for pk in before)
    settings.TOKEN_KEYS = [new]  # the old key dropped: every token still opens
    assert [github_token_for(p) for p in people] == [f"{SECRET}{n}" for n in range(3)]
    for ciphertext in after.values():
        with pytest.raises(crypto.TokenKeyError):
            crypto.decrypt(ciphertext, [old])


def test_rotation_stops_on_a_row_no_key_opens_and_changes_nothing(settings):
    lost, old, new = new_key(), new_key(), new_key()
    settings.TOKEN_KEYS = [old]
    kept = store_github_token(user=UserFactory(), token=SECRET, source="pasted")
    settings.TOKEN_KEYS = [lost]
    orphan = store_github_token(user=UserFactory(), token=SECRET, source="pasted")
    before = dict(GitHubToken.objects.values_list("pk", "ciphertext"))

    settings.TOKEN_KEYS = [new, old]
    with pytest.raises(
        CommandError, match=rf"GitHub token #{orphan.pk} \(user #{orphan.user_id}\)"
    ):
        call_command("rotate_token_keys")

    assert dict(GitHubToken.objects.values_list("pk", "ciphertext")) == before
    assert kept.pk in before


def test_rotation_without_a_key_is_refused(settings):
    settings.TOKEN_KEYS = []
    with pytest.raises(CommandError, match="set ANNOTATOR_TOKEN_KEYS"):
        call_command("rotate_token_keys")


# --- backups ----------------------------------------------------------------------------------
def test_a_study_backup_carries_no_github_token_nor_its_ciphertext(key, tmp_path):
    world = labelled_world()
    for person in [world.owner, *world.annotators]:
        store_github_token(user=person, token=f"{SECRET}{person.pk}", source="pasted")
    ciphertexts = list(GitHubToken.objects.values_list("ciphertext", flat=True))

    _, members = read(dump_to(world, tmp_path / "backup.zip"))

    everything = b"".join(members.values())
    assert world.annotators[0].username.encode() in everything  # the people are in it
    assert b"ghp_" not in everything and SECRET.encode() not in everything
    assert not any(text.encode()[:40] in everything for text in ciphertexts)
    assert not any("github" in name.lower() for name in members)


def test_the_encryption_core_is_pure():
    """crypto.py imports no Django: the keys are passed in, so a script can check a key."""
    code = (
        "import sys, annotator.accounts.crypto;"
        "print(any(m.startswith('django') for m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
