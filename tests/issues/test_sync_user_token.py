"""A sync asks GitHub with the token of the person who started it (stored encrypted on their
account page, annotator/accounts), from the sync page, the API and `sync_github --user`, and
with the server's GITHUB_TOKEN otherwise. The local fake GitHub (fake_github.py) answers 401
to any Authorization header but `Bearer <its token>`, so a sync that succeeds sent that one."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.models import GitHubToken
from annotator.accounts.services import create_api_token, store_github_token
from annotator.issues.models import Issue, SyncJob
from annotator.issues.sync import run_sync_job, start_sync_job
from tests.conftest import WORKER_TOKEN_KEY
from tests.factories import UserFactory
from tests.issues.fake_github import FakeGitHub

pytestmark = pytest.mark.django_db
USER_TOKEN = "gho_UsersOwnToken0123456789abcdefABCDEF"
SERVER_TOKEN = "ghp_TheServersToken0123456789abcdefABCD"


@pytest.fixture
def github(settings: Any) -> Iterator[FakeGitHub]:
    server = FakeGitHub(token=USER_TOKEN).start()
    server.populate(issues=12, comments=5)
    settings.GITHUB_API_URL = server.url
    settings.GITHUB_TOKEN = SERVER_TOKEN
    settings.TOKEN_KEYS = [Fernet.generate_key().decode()]
    yield server
    server.stop()


@pytest.fixture
def starter(user: Any, github: FakeGitHub) -> Any:
    """The signed-in importer of tests/issues, with their own GitHub token stored."""
    store_github_token(user=user, token=USER_TOKEN, source=GitHubToken.Source.PASTED)
    return user


def finished(job_id: int) -> SyncJob:
    run_sync_job(job_id=job_id)  # what the worker's task does
    return SyncJob.objects.get(pk=job_id)


def test_a_sync_started_on_the_page_sends_the_starters_token(
    logged_in_client, starter, github, caplog
):
    caplog.set_level(logging.DEBUG)
    page = logged_in_client.get(reverse("issues:sync")).content.decode()
    assert "with your own GitHub token" in page

    response = logged_in_client.post(reverse("issues:sync"), {"repository": github.full_name})

    job = SyncJob.objects.get()
    assert response.status_code == 302 and job.created_by == starter
    job = finished(job.pk)
    assert job.status == SyncJob.Status.SUCCEEDED, job.error
    assert Issue.objects.count() == 12
    assert all(USER_TOKEN not in record.getMessage() for record in caplog.records)


def test_a_sync_started_through_the_api_sends_the_starters_token(starter, github):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=starter, name='ci')[1]}")
    response = api.post("/api/syncs/", {"repository": github.full_name}, format="json")
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.status == SyncJob.Status.SUCCEEDED, job.error
    assert USER_TOKEN not in response.content.decode()


def test_without_a_token_of_their_own_the_server_token_is_sent(logged_in_client, user, github):
    github.token = SERVER_TOKEN
    logged_in_client.post(reverse("issues:sync"), {"repository": github.full_name})
    job = finished(SyncJob.objects.get().pk)
    assert job.status == SyncJob.Status.SUCCEEDED, job.error


def test_a_token_github_rejects_fails_the_job_naming_the_starters_token(
    logged_in_client, starter, github
):
    github.token = "ghp_SomethingElse"
    logged_in_client.post(reverse("issues:sync"), {"repository": github.full_name})
    job = finished(SyncJob.objects.get().pk)
    assert job.status == SyncJob.Status.FAILED
    assert "401" in job.error and "check your GitHub token, on your account page" in job.error
    assert Issue.objects.count() == 0


def test_periodic_resyncs_have_no_starter_and_send_the_server_token(starter, github):
    github.token = SERVER_TOKEN
    job = SyncJob.objects.create(repository_name=github.full_name, periodic=True)
    assert finished(job.pk).status == SyncJob.Status.SUCCEEDED


# --- the command ------------------------------------------------------------------------------
def test_the_command_with_user_sends_that_users_token(starter, github):
    out = io.StringIO()
    call_command("sync_github", github.full_name, "--user", starter.username, stdout=out)
    assert out.getvalue().startswith("issues: created 12")


def test_the_command_without_user_sends_the_server_token(starter, github):
    with pytest.raises(CommandError, match="check GITHUB_TOKEN"):
        call_command("sync_github", github.full_name)
    github.token = SERVER_TOKEN
    call_command("sync_github", github.full_name, stdout=io.StringIO())
    assert Issue.objects.count() == 12


def test_the_command_falls_back_to_the_server_token_for_a_user_without_one(github):
    github.token = SERVER_TOKEN
    plain = UserFactory(username="plain")
    err = io.StringIO()
    call_command(
        "sync_github", github.full_name, "--user", plain.username, stdout=io.StringIO(), stderr=err
    )
    assert "plain has no GitHub token stored: using GITHUB_TOKEN" in err.getvalue()
    assert Issue.objects.count() == 12


def test_the_command_refuses_an_unknown_user_and_syncs_nothing(github):
    with pytest.raises(CommandError, match="--user 'nobody': no such user; nothing synced"):
        call_command("sync_github", github.full_name, "--user", "nobody")
    assert github.served == [] and Issue.objects.count() == 0


def test_a_token_whose_key_was_dropped_fails_the_job_naming_the_keys(
    logged_in_client, starter, github, settings
):
    settings.TOKEN_KEYS = [Fernet.generate_key().decode()]  # the old key gone, unrotated
    logged_in_client.post(reverse("issues:sync"), {"repository": github.full_name})
    job = finished(SyncJob.objects.get().pk)
    assert job.status == SyncJob.Status.FAILED
    assert job.error.startswith("your GitHub token: no key in ANNOTATOR_TOKEN_KEYS opens")
    assert github.served == [] and Issue.objects.count() == 0


# --- in a real worker -------------------------------------------------------------------------
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_syncs_with_the_starters_token(celery_worker_process, settings):
    """The page starts the job; a separate `celery worker` process decrypts the starter's token
    with its own copy of the key (ANNOTATOR_TOKEN_KEYS) and GitHub sees it."""
    server = FakeGitHub(token=USER_TOKEN).start()
    try:
        server.populate(issues=12, comments=5)
        settings.TOKEN_KEYS = [WORKER_TOKEN_KEY]
        starter = UserFactory()
        store_github_token(user=starter, token=USER_TOKEN, source=GitHubToken.Source.PASTED)
        with transaction.atomic():
            job = start_sync_job(repository=server.full_name, api_url=server.url, user=starter)
        deadline = time.monotonic() + 60
        while not job.is_finished and time.monotonic() < deadline:
            time.sleep(0.1)
            job.refresh_from_db()
        assert job.status == SyncJob.Status.SUCCEEDED, job.error
        assert job.issues_created == 12 and Issue.objects.count() == 12
    finally:
        server.stop()
