"""`manage.py create_api_token USERNAME --name NAME [--days N]` prints only the secret."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from annotator.accounts.models import ApiToken
from tests.accounts.conftest import token_client
from tests.conftest import ROOT, _database_url

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue()


def test_prints_only_a_working_secret(alice):
    output = run("alice", "--name", "cron")
    assert re.fullmatch(r"ann_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}\n", output)
    token = ApiToken.objects.get()
    assert (token.user, token.name, token.expires_at) == (alice, "cron", None)
    assert token_client(output.strip()).get("/api/tokens/").status_code == 200


def test_days_sets_the_expiry(alice):
    run("alice", "--name", "week", "--days", "7")
    expires = ApiToken.objects.get().expires_at
    assert abs(expires - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nobody", "--name", "x"], "user 'nobody': no such user"),
        (["alice", "--name", "  "], "field 'name'"),
        (["alice", "--name", "x", "--days", "0"], "field 'days'"),
        (["alice", "--name", "x", "--days", "4000"], "field 'days'"),
    ],
)
def test_bad_input_names_the_record_or_field_and_writes_nothing(alice, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not ApiToken.objects.exists()


def test_an_inactive_user_gets_no_token(alice):
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    with pytest.raises(CommandError, match="user 'alice': inactive"):
        run("alice", "--name", "x")
    assert not ApiToken.objects.exists()


def test_from_a_shell_it_exits_non_zero_on_bad_input():
    env = {**os.environ, "DATABASE_URL": _database_url(connection.settings_dict["NAME"])}
    done = subprocess.run(
        [sys.executable, "manage.py", "create_api_token", "nobody", "--name", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "user 'nobody': no such user" in done.stderr
