"""The GitHub sync against the local fake server and PostgreSQL: full, incremental, resumed,
renamed, rate limited; the command, the job with its progress page, and periodic re-syncs."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command
from django.db import connections, transaction
from django.urls import reverse

from annotator.issues.github import AuthenticationError, NotFoundError, UnavailableError
from annotator.issues.models import (
    Issue,
    IssueComment,
    Repository,
    RepositoryAlias,
    SyncJob,
    SyncState,
)
from annotator.issues.services import import_issues
from annotator.issues.sync import (
    SyncError,
    SyncReport,
    resync_periodic_repositories,
    start_sync_job,
    sync_repository,
)
from tests.issues.fake_github import FakeGitHub, now_iso

pytestmark = pytest.mark.django_db


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    server.populate(issues=150, comments=40)
    yield server
    server.stop()


@pytest.fixture
def big_github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    server.populate(issues=1000, comments=2000)
    yield server
    server.stop()


def sync(server: FakeGitHub, name: str = "", messages: list[str] | None = None, **options):
    def on_progress(report: SyncReport) -> None:
        if messages is not None:
            messages.append(report.message)

    options.setdefault("sleep", lambda seconds: None)
    options.setdefault("backoff", 0.01)
    return sync_repository(
        full_name=name or server.full_name,
        api_url=server.url,
        token="",
        on_progress=on_progress,
        **options,
    )


def assert_database_matches(server: FakeGitHub) -> None:
    """Exactly the server's issues and comments, each as GitHub sent it."""
    repository = Repository.objects.named(server.full_name)
    assert repository is not None and repository.full_name == server.full_name
    issues = {i.number: i.raw for i in Issue.objects.filter(repository=repository)}
    assert issues == server.issues
    comments = IssueComment.objects.filter(issue__repository=repository).select_related("issue")
    assert {c.github_id: c.raw for c in comments} == server.comments
    for comment in comments:
        assert comment.raw["issue_url"].endswith(f"/issues/{comment.issue.number}")
    assert Issue.objects.exclude(repository=repository).count() == 0


def pages_written(server: FakeGitHub, path_end: str) -> list[str]:
    return [s.query.get("page", "1") for s in server.requests_to(path_end) if s.status == 200]


# --- done when ------------------------------------------------------------------------------
def test_a_thousand_issues_with_rate_limits_and_a_failure_then_only_changes(big_github):
    server = big_github
    server.fail("secondary", path="/issues", page=3)
    server.fail("primary", path="/issues/comments", page=2)
    server.fail("429", path="/issues/comments", page=15)
    server.fail("drop", path="/issues", page=6, times=3)  # more than the 2 retries: the run dies
    messages: list[str] = []

    with pytest.raises(UnavailableError, match="connection"):
        sync(server, messages=messages, max_retries=2)
    assert Issue.objects.count() == 500  # pages 1-5, each written whole
    assert SyncState.objects.get().next_url.endswith("page=6")

    resumed = sync(server, messages=messages, max_retries=2)

    assert resumed.resumed
    assert_database_matches(server)
    assert Issue.objects.count() == 1000 and IssueComment.objects.count() == 2000
    assert pages_written(server, "/issues") == [str(n) for n in range(1, 11)]  # each page once
    assert len(pages_written(server, "/issues/comments")) == 20
    assert sum("rate limit" in m for m in messages if m.startswith("waiting")) == 3
    assert Issue.objects.filter(is_pull_request=True).count() == 100

    server.edit_issue(10, title="Hang in all-reduce", state="closed")
    server.edit_issue(999, labels=[{"name": "distributed"}])
    server.add_issue(1001, created_at=now_iso(), updated_at=now_iso())
    server.edit_comment(500_007, body="Fixed by setting NCCL_P2P_DISABLE=1")
    server.add_comment(20, created_at=now_iso(), updated_at=now_iso())
    served_before = len(server.served)

    second = sync(server)

    assert_database_matches(server)
    new_requests = server.served[served_before:]
    issues_sent = sum(s.items for s in new_requests if s.path.endswith("/issues"))
    comments_sent = sum(s.items for s in new_requests if s.path.endswith("/comments"))
    # 10, 999, 1001, the issue of the edited comment, and 20 (its new comment bumped it)
    assert issues_sent == 5 and comments_sent == 2
    assert (second.issues.created, second.issues.updated, second.issues.unchanged) == (1, 4, 0)
    assert (second.comments.created, second.comments.updated) == (1, 1)


# --- incremental, ETag, since ---------------------------------------------------------------
def test_an_idle_repository_costs_only_304s(github):
    sync(github)
    sync(github)  # asks with the new since: nothing changed, so since stays and ETags are kept
    before = len(github.served)

    third = sync(github)

    statuses = [s.status for s in github.served[before:]]
    assert statuses == [200, 304, 304]  # the repository, then both lists not modified
    assert third.not_modified == 2 and third.pages == 0
    assert_database_matches(github)


def test_since_option_fetches_what_changed_since_then(github):
    github.edit_issue(3, title="edited")

    report = sync(github, since=datetime(2024, 1, 1, tzinfo=UTC))

    assert list(Issue.objects.values_list("number", flat=True)) == [3]
    assert github.requests_to("/issues")[0].query["since"] == "2024-01-01T00:00:00Z"
    assert report.issues.created == 1
    # Only recent changes were asked for, so the next plain run still fetches everything.
    assert SyncState.objects.get().since is None
    assert sync(github).issues.created == 149


def test_edits_mark_the_issue_changed_and_keep_everything_else(github):
    sync(github)
    before = dict(Issue.objects.values_list("number", "changed_at"))
    github.edit_issue(5, body="new body")
    comment = next(c for c in github.comments.values() if c["issue_url"].endswith("/issues/8"))
    github.edit_comment(comment["id"], body="edited comment")

    sync(github)

    after = dict(Issue.objects.values_list("number", "changed_at"))
    assert after[5] > before[5] and after[8] > before[8]
    assert {n for n in after if after[n] != before[n]} == {5, 8}
    assert Issue.objects.get(number=5).body == "new body"


# --- resume ---------------------------------------------------------------------------------
def test_a_run_killed_midway_resumes_without_duplicates_or_losses(github, monkeypatch):
    from annotator.issues import sync as sync_module

    github.populate(issues=0, comments=0)
    calls = {"n": 0}
    real_write = sync_module.RecordWriter.write

    def dying_write(self, batch):
        calls["n"] += 1
        real_write(self, batch)
        if calls["n"] == 2:
            raise RuntimeError("worker killed")  # after the writes, before the page commits

    monkeypatch.setattr(sync_module.RecordWriter, "write", dying_write)
    with pytest.raises(RuntimeError):
        sync(github)
    assert Issue.objects.count() == 100  # page 1 committed; page 2 rolled back whole
    monkeypatch.setattr(sync_module.RecordWriter, "write", real_write)

    report = sync(github)

    assert report.resumed and report.issues.created == 50
    assert_database_matches(github)
    assert pages_written(github, "/issues") == ["1", "2", "2"]


def test_since_given_starts_afresh_instead_of_resuming(github):
    github.fail("502", path="/issues", page=2, times=5)
    with pytest.raises(UnavailableError):
        sync(github, max_retries=1)

    report = sync(github, since=datetime(2020, 1, 1, tzinfo=UTC))

    assert not report.resumed
    assert_database_matches(github)


# --- rename, errors -------------------------------------------------------------------------
def test_a_renamed_repository_is_followed_and_recorded_as_an_alias(github):
    github.full_name, github.renamed_from = "neworg/Trainer", ("oldorg/Trainer",)
    github.issues.clear(), github.comments.clear()
    github.populate(issues=120, comments=10)
    old = json.dumps([dict(github.issues[1], title="as imported from a file")])
    import_issues(stream=io.BytesIO(old.encode()), repository="oldorg/Trainer")
    Repository.objects.update(owner="oldorg")  # the file named the old repository
    kept_pk = Issue.objects.get().pk

    sync(github, name="oldorg/Trainer")

    repository = Repository.objects.get()
    assert repository.full_name == "neworg/Trainer"
    assert list(RepositoryAlias.objects.values_list("owner", "name")) == [("oldorg", "Trainer")]
    assert Issue.objects.get(number=1).pk == kept_pk
    assert_database_matches(github)
    assert github.served[0].status == 301


def test_bad_token_stops_with_a_clear_message_and_writes_nothing(github):
    github.token = "right"
    with pytest.raises(AuthenticationError, match="GITHUB_TOKEN"):
        sync(github)
    assert Repository.objects.count() == 0


def test_unknown_repository_stops_with_a_clear_message(github):
    with pytest.raises(NotFoundError, match="check OWNER/NAME"):
        sync(github, name="nobody/nothing")
    assert Repository.objects.count() == 0


def test_a_second_concurrent_sync_of_one_repository_is_refused(github):
    sync(github)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            pk = Repository.objects.get().pk
            cursor.execute("SELECT pg_advisory_lock(8, %s)", [pk])
        with pytest.raises(SyncError, match="another sync"):
            sync(github)
    finally:
        other.close()


# --- command --------------------------------------------------------------------------------
def test_command_syncs_and_prints_counts(github):
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_github", github.full_name, "--api-url", github.url, stdout=out, stderr=err)
    assert out.getvalue().strip() == (
        "issues: created 150, updated 0, unchanged 0, skipped 0; "
        "comments: created 40, updated 0, unchanged 0, skipped 0"
    )
    assert "page 2 written" in err.getvalue()
    assert_database_matches(github)


def test_command_exits_nonzero_with_the_message(github):
    with pytest.raises(CommandError, match="nobody/nothing: not found on GitHub"):
        call_command("sync_github", "nobody/nothing", "--api-url", github.url, stdout=io.StringIO())
    with pytest.raises(CommandError, match="--since: expected an ISO date"):
        call_command("sync_github", "a/b", "--since", "yesterday", "--api-url", github.url)


# --- pages and API --------------------------------------------------------------------------
def test_sync_page_shows_the_form_and_queues_a_job(logged_in_client):
    assert logged_in_client.get(reverse("issues:sync")).status_code == 200
    response = logged_in_client.post(
        reverse("issues:sync"), {"repository": "deepspeedai/DeepSpeed", "periodic": "on"}
    )
    job = SyncJob.objects.get()
    assert response.status_code == 302 and response["Location"] == job.get_absolute_url()
    assert job.periodic and job.status == SyncJob.Status.QUEUED
    bad = logged_in_client.post(reverse("issues:sync"), {"repository": "not a repo"})
    assert bad.status_code == 400 and b"OWNER/NAME" in bad.content


def test_sync_detail_polls_until_finished(logged_in_client):
    job = SyncJob.objects.create(
        repository_name="a/b",
        status="running",
        phase="issues",
        phase_page=2,
        phase_pages=4,
        message="waiting 30 s: rate limit",
    )
    page = logged_in_client.get(job.get_absolute_url())
    assert b'id="sync-progress"' in page.content and b"waiting 30 s" in page.content
    assert job.percent == 25
    partial = logged_in_client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and b"<html" not in partial.content
    SyncJob.objects.filter(pk=job.pk).update(status="succeeded")
    assert logged_in_client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true").status_code == 286


def test_api_queues_a_sync(logged_in_client):
    response = logged_in_client.post(
        "/api/syncs/", {"repository": "deepspeedai/DeepSpeed"}, content_type="application/json"
    )
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert logged_in_client.get(f"/api/syncs/{response.json()['id']}/").status_code == 200


def test_issue_list_links_to_the_sync_page(logged_in_client):
    assert reverse("issues:sync").encode() in logged_in_client.get(reverse("issues:list")).content


def test_periodic_resync_queues_each_marked_repository_once(github):
    sync(github, periodic=True)
    assert SyncState.objects.get().periodic

    assert [job.repository_name for job in resync_periodic_repositories()] == [github.full_name]
    assert resync_periodic_repositories() == []  # one is already queued
    SyncJob.objects.update(created_at=datetime(2020, 1, 1, tzinfo=UTC))  # lost long ago
    assert len(resync_periodic_repositories()) == 1


# --- the job in a real worker ---------------------------------------------------------------
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_worker_runs_the_sync_job_with_progress(celery_worker_process, github):
    github.fail("secondary", path="/issues/comments")  # a real 1 s wait, seen on the job row
    with transaction.atomic():
        job = start_sync_job(repository=github.full_name, api_url=github.url)
    seen = []
    deadline = time.monotonic() + 60
    while not job.is_finished and time.monotonic() < deadline:
        time.sleep(0.05)
        job.refresh_from_db()
        seen.append(job.message)

    assert job.status == SyncJob.Status.SUCCEEDED, job.error
    assert job.issues_created == 150 and job.comments_created == 40 and job.waits == 1
    assert any(m.startswith("waiting 1 s: secondary rate limit") for m in seen)
    assert job.repository == Repository.objects.get() and job.percent == 100
    assert_database_matches(github)
