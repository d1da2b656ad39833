"""Only a hash of a token is stored: the secret is nowhere in the database, whichever way the
token was made (service, page, API, command)."""

from __future__ import annotations

import re
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token
from annotator.accounts.tokens import hash_secret, new_secret
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db
SECRET = re.compile(r"ann_([A-Za-z0-9]{8})_([A-Za-z0-9_-]{43})")


def database_text_containing(needle: str) -> list[str]:
    """Every table whose rows, as text, contain `needle` (the whole public schema)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
        )
        tables = [row[0] for row in cursor.fetchall()]
        found = []
        for table in tables:
            cursor.execute(
                f'SELECT count(*) FROM "{table}" AS t WHERE strpos(t::text, %s) > 0', [needle]
            )
            if cursor.fetchone()[0]:
                found.append(table)
    return found


def assert_hashed_only(secret: str) -> ApiToken:
    prefix, rest = SECRET.fullmatch(secret).groups()  # type: ignore[union-attr]
    token = ApiToken.objects.get(key_hash=hash_secret(secret))
    assert token.prefix == prefix and len(token.key_hash) == 64
    row = ApiToken.objects.filter(pk=token.pk).values_list().get()
    assert not any(rest in str(value) for value in row)
    assert database_text_containing(rest) == []
    assert database_text_containing(token.key_hash) == ["accounts_apitoken"]  # the search works
    return token


def test_the_format_is_recognisable_and_random():
    secrets = {new_secret()[1] for _ in range(200)}
    assert len(secrets) == 200
    assert all(SECRET.fullmatch(secret) for secret in secrets)


def test_a_token_made_by_the_service_is_stored_as_its_hash(alice):
    token, secret = create_api_token(user=alice, name="notebook", days=30)
    assert assert_hashed_only(secret) == token
    assert token.state == ApiToken.State.ACTIVE and token.expires_at is not None


def test_a_token_made_on_the_page_is_stored_as_its_hash(client, alice):
    client.force_login(alice)
    page = client.post("/account/tokens/", {"name": "from the page", "days": ""})
    secret = SECRET.search(page.content.decode()).group(0)  # type: ignore[union-attr]
    assert assert_hashed_only(secret).name == "from the page"


def test_a_token_made_through_the_api_is_stored_as_its_hash(alice):
    client = APIClient()
    client.force_login(alice)
    secret = client.post("/api/tokens/", {"name": "api"}, format="json").data["secret"]
    assert_hashed_only(secret)


def test_a_token_made_by_the_command_is_stored_as_its_hash(alice):
    out = StringIO()
    call_command("create_api_token", "alice", "--name", "cron", stdout=out)
    assert_hashed_only(out.getvalue().strip())


def test_the_database_refuses_a_hash_that_is_not_sha256(alice):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError, match="api_token_hash_is_sha256"), transaction.atomic():
        ApiToken.objects.create(user=alice, name="x", prefix="x", key_hash="ann_plaintext")


def test_the_token_format_is_pure():
    """tokens.py imports no Django, so a script can mint and hash tokens the same way."""
    code = (
        "import sys, annotator.accounts.tokens;"
        "print(any(m.startswith('django') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
