"""Live GitHub sync: a repository's issues and comments, incrementally and resumably.

A run asks GitHub (annotator/issues/github.py) for the issues changed since `SyncState.since`,
then for the comments changed since then, page by page along the Link header. Each page is
written with RecordWriter in its own transaction together with the SyncState row that says
which page comes next, so a run that dies anywhere resumes on the next run at the first page
not written: nothing is lost, and a page written twice only finds its rows unchanged.

Why the next run's `since` is the *start* of the last run (GitHub's Date header, less a margin)
and not the newest `updated_at` seen: an issue edited during a run, on a page already read,
has an `updated_at` older than what later pages show; using those would lose the edit. Lists
are sorted by creation, oldest first, so pages stay put while a run (or its resumption) walks
them. `since` only moves when a run brought something, so an idle repository is asked the
same first-page URL again with its ETag and answers 304, which costs no quota.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotator.accounts.crypto import TokenKeyError
from annotator.accounts.services import github_token_for
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress

from .formats import CommentRecord, ImportFormatError, IssueRecord, record_from_rest
from .github import GitHubClient, GitHubError, Response, Wait
from .models import (
    Issue,
    IssueComment,
    IssueRevision,
    Repository,
    RepositoryAlias,
    SyncJob,
    SyncState,
)
from .search import index_pending_issues
from .sql import advisory_unlock, try_advisory_lock
from .writer import ImportCounts, RecordWriter, check_repository_name, github_hosts

logger = logging.getLogger(__name__)

# GitHub's Date header has whole seconds and `since` compares updated_at >= since.
SINCE_MARGIN = timedelta(seconds=2)
STALE_JOB_AGE = timedelta(hours=6)  # longer than sync_github_task's time limit
_LOCK_NAMESPACE = 8  # pg advisory lock space for "sync of repository <pk>"
Phase = SyncState.Phase
_JOB_FIELDS = ["pages", "not_modified", "waits", "waited_seconds"]
_JOB_FIELDS += ["phase", "phase_page", "phase_pages"]
_RUN_FIELDS = ["since", "etags", "phase", "next_url", "run_changed", "last_synced_at"]


class SyncError(Exception):
    """The sync cannot go on; str() says why and what to do."""


@dataclass
class SyncReport:
    """What a run did so far; passed to `on_progress` after every page and before every wait."""

    repository: str
    issues: ImportCounts = field(default_factory=ImportCounts)
    comments: ImportCounts = field(default_factory=ImportCounts)
    resumed: bool = False
    pages: int = 0
    not_modified: int = 0
    waits: int = 0
    waited_seconds: float = 0.0
    phase: str = ""
    phase_page: int = 0
    phase_pages: int = 0
    message: str = ""

    def __str__(self) -> str:
        return f"issues: {self.issues}; comments: {self.comments}"

    def job_fields(self) -> dict[str, Any]:
        """The SyncJob columns this report fills (the names match)."""
        fields = {name: getattr(self, name) for name in _JOB_FIELDS}
        for kind, counts in (("issues", self.issues), ("comments", self.comments)):
            fields |= {f"{kind}_{n}": getattr(counts, n) for n in ("created", "updated")}
            fields[f"{kind}_unchanged"] = counts.unchanged
        fields["skipped"] = self.issues.skipped + self.comments.skipped
        return fields | {"message": self.message[:300]}


def sync_repository(
    *,
    full_name: str,
    since: datetime | None = None,
    api_url: str = "",
    token: str | None = None,
    periodic: bool | None = None,
    on_progress: Callable[[SyncReport], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    **client_options: Any,
) -> SyncReport:
    """Bring the issues and comments of GitHub repository `full_name` into the database.

    Resumes an unfinished run unless `since` is given (which starts afresh from that time).
    `api_url` and `token` default to settings.GITHUB_API_URL and GITHUB_TOKEN; `periodic`
    (when not None) sets whether Celery beat re-syncs the repository. Raises GitHubError (bad
    token, unknown repository, rate limit too far off, GitHub down), SyncError and
    ImportFormatError (an object GitHub sent that cannot be read); pages written before stay.
    """
    check_repository_name(full_name, "repository")
    report = SyncReport(repository=full_name)
    progress = on_progress or (lambda report: None)
    client = GitHubClient(
        api_url=api_url or settings.GITHUB_API_URL,
        token=settings.GITHUB_TOKEN if token is None else token,
        sleep=sleep,
        on_wait=lambda wait: _note_wait(report, wait, progress),
        **client_options,
    )
    meta = client.get(client.repository_url(full_name))
    current = meta.data.get("full_name") if isinstance(meta.data, dict) else None
    repository = adopt_repository_name(requested=full_name, current=str(current or full_name))
    report.repository = repository.full_name
    with _exclusive(repository):
        state = _begin_run(repository, client, since, meta.server_time, report)
        if periodic is not None:
            SyncState.objects.filter(pk=state.pk).update(periodic=periodic)
        _Run(client, state, report, progress).run()
    return report


def adopt_repository_name(*, requested: str, current: str) -> Repository:
    """The repository GitHub now calls `current`; `requested`, if another name, becomes its
    alias (GitHub answered it with a 301). One stored under the old name is renamed."""
    with transaction.atomic():
        repository = Repository.objects.named(current)
        old = Repository.objects.named(requested)
        if repository is not None and old is not None and old.pk != repository.pk:
            raise SyncError(
                f"GitHub says {requested} is now {current}, but both are stored as separate "
                "repositories; merge them in the admin before syncing"
            )
        repository = repository or old
        if repository is None:
            owner, _, name = current.partition("/")
            return Repository.objects.create(owner=owner, name=name)
        if repository.full_name != current:
            _rename(repository, current)
        if requested.lower() != current.lower():
            _add_alias(repository, requested)
        return repository


def _rename(repository: Repository, current: str) -> None:
    previous = repository.full_name
    owner, _, name = current.partition("/")
    RepositoryAlias.objects.filter(owner__iexact=owner, name__iexact=name).delete()
    repository.owner, repository.name = owner, name
    repository.save(update_fields=["owner", "name"])
    if previous.lower() != current.lower():
        _add_alias(repository, previous)


def _add_alias(repository: Repository, full_name: str) -> None:
    owner, _, name = full_name.partition("/")
    if not RepositoryAlias.objects.filter(owner__iexact=owner, name__iexact=name).exists():
        repository.aliases.create(owner=owner, name=name)


@contextmanager
def _exclusive(repository: Repository) -> Iterator[None]:
    """Refuse a second concurrent run for one repository (a beat re-sync beside a manual one)
    instead of letting both move its SyncState. The lock dies with the connection."""
    if connection.vendor != "postgresql":
        yield
        return
    if not try_advisory_lock(_LOCK_NAMESPACE, repository.pk):
        raise SyncError(f"another sync of {repository} is running; try again when it ends")
    try:
        yield
    finally:
        advisory_unlock(_LOCK_NAMESPACE, repository.pk)


def _begin_run(
    repository: Repository,
    client: GitHubClient,
    since: datetime | None,
    server_time: datetime | None,
    report: SyncReport,
) -> SyncState:
    state, _ = SyncState.objects.get_or_create(repository=repository)
    state.api_url = client.api_url
    if state.phase and since is None:
        report.resumed = True
        report.message = f"resuming the unfinished run at its {state.phase} phase"
    else:
        state.run_since = since if since is not None else state.since
        state.run_started_at = (server_time or timezone.now()) - SINCE_MARGIN
        state.run_changed = False
        state.phase = Phase.ISSUES
        state.next_url = client.issues_url(repository.full_name, state.run_since)
    state.save()
    return state


class _Run:
    """Walks the phases of one run from where `state` says it stands."""

    def __init__(
        self,
        client: GitHubClient,
        state: SyncState,
        report: SyncReport,
        progress: Callable[[SyncReport], None],
    ) -> None:
        self.client, self.state, self.report, self.progress = client, state, report, progress
        self.repository = state.repository
        self.objects_read = 0  # numbers the records in error messages

    def run(self) -> None:
        if self.state.phase == Phase.ISSUES:
            self._walk(Phase.ISSUES)
            self._save(phase=Phase.COMMENTS, next_url=self._first_url(Phase.COMMENTS))
        if self.state.phase == Phase.COMMENTS:
            self._walk(Phase.COMMENTS)
        self._finish()

    def _first_url(self, phase: str) -> str:
        make = self.client.issues_url if phase == Phase.ISSUES else self.client.comments_url
        return make(self.repository.full_name, self.state.run_since)

    def _walk(self, phase: str) -> None:
        first_url = self._first_url(phase)
        self.report.phase, url = phase, self.state.next_url
        while url:
            etag = self.state.etags.get(url, "") if url == first_url else ""
            response = self.client.get(url, etag=etag)
            if response.not_modified:
                self.report.not_modified += 1
                self._tell(response, f"{phase}: not modified since the last run (304)")
                return
            items = _page_items(response)
            with transaction.atomic():
                self._write_page(phase, items)
                if url == first_url:
                    self.state.etags[url] = response.etag
                self.state.run_changed |= bool(items)
                self._save(next_url=response.links.get("next", ""))
            index_pending_issues()
            self.report.pages += 1
            self._tell(response, f"{phase}: page {_page_number(url)} written")
            url = self.state.next_url

    def _write_page(self, phase: str, items: list[Any]) -> None:
        records = [
            dataclasses.replace(record_from_rest(obj, index), repository=self.repository.full_name)
            for index, obj in enumerate(items, self.objects_read + 1)
        ]
        self.objects_read += len(items)
        changed = _changed_issue_numbers(self.repository, records)
        writer = RecordWriter(
            url_hosts=github_hosts(self.client.api_url), source=IssueRevision.Source.SYNC
        )
        writer.write(records)
        _add_counts(self.report.issues if phase == Phase.ISSUES else self.report.comments, writer)
        if changed:
            Issue.objects.filter(repository=self.repository, number__in=changed).update(
                changed_at=timezone.now()
            )

    def _finish(self) -> None:
        state = self.state
        current = {self._first_url(Phase.ISSUES), self._first_url(Phase.COMMENTS)}
        if state.run_changed and _covers(state.run_since, state.since):
            state.since, state.etags = state.run_started_at, {}  # new URLs, old ETags useless
        else:
            state.etags = {url: tag for url, tag in state.etags.items() if url in current and tag}
        self._save(phase=Phase.IDLE, next_url="", last_synced_at=timezone.now())
        self.report.message = "finished"
        self.progress(self.report)

    def _save(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self.state, name, value)
        # Only the run's own columns: `periodic` may be switched in the admin meanwhile.
        self.state.save(update_fields=_RUN_FIELDS)

    def _tell(self, response: Response, message: str) -> None:
        self.report.phase_page = _page_number(response.url)
        last = response.links.get("last")
        self.report.phase_pages = _page_number(last) if last else self.report.phase_page
        self.report.message = message
        self.progress(self.report)


def _covers(run_since: datetime | None, stored: datetime | None) -> bool:
    """Whether a run asked for everything the stored `since` would have: a --since later than
    it must not move it, or what changed in between would never be fetched."""
    return run_since is None or (stored is not None and run_since <= stored)


def _page_items(response: Response) -> list[Any]:
    if not isinstance(response.data, list):
        raise GitHubError(f"expected a JSON array from {response.url}")
    return response.data


def _page_number(url: str) -> int:
    """The page a GitHub list URL names (read for progress bars, never to build URLs)."""
    values = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("page", ["1"])
    return int(values[0]) if values[0].isdigit() else 1


def _changed_issue_numbers(
    repository: Repository, records: list[IssueRecord | CommentRecord]
) -> set[int]:
    """Numbers of the issues that these records create or change, themselves or by a comment;
    read before writing, so the writer's own comparison stays untouched."""
    issues = {r.number: r.content_hash() for r in records if isinstance(r, IssueRecord)}
    comments = {
        (r.issue_number, r.identity()): r.content_hash()
        for r in records
        if isinstance(r, CommentRecord)
    }
    stored_issues = dict(
        Issue.objects.filter(repository=repository, number__in=issues).values_list(
            "number", "content_hash"
        )
    )
    changed = {number for number, h in issues.items() if stored_issues.get(number) != h}
    stored_comments = _stored_comment_hashes(repository, comments.keys())
    return changed | {pair[0] for pair, h in comments.items() if stored_comments.get(pair) != h}


def _stored_comment_hashes(
    repository: Repository, wanted: Iterable[tuple[int, str]]
) -> dict[tuple[int, str], str]:
    wanted = list(wanted)
    rows = IssueComment.objects.filter(
        issue__repository=repository,
        issue__number__in={number for number, _ in wanted},
        key__in={key for _, key in wanted},
    ).values_list("issue__number", "key", "content_hash")
    return {(number, key): content_hash for number, key, content_hash in rows}


def _add_counts(total: ImportCounts, writer: RecordWriter) -> None:
    page = writer.counts
    total.created += page.created
    total.updated += page.updated
    total.unchanged += page.unchanged
    for reason in page.skipped_reasons:
        total.skip(reason)
    total.skipped += page.skipped - len(page.skipped_reasons)


def _note_wait(report: SyncReport, wait: Wait, progress: Callable[[SyncReport], None]) -> None:
    report.waits += 1
    report.waited_seconds += wait.seconds
    report.message = f"waiting {wait.seconds:.0f} s: {wait.reason}"
    progress(report)


# --- jobs ---------------------------------------------------------------------------------
def start_sync_job(
    *,
    repository: str,
    since: datetime | None = None,
    api_url: str = "",
    periodic: bool = False,
    user: Any = None,
) -> SyncJob:
    """Create a SyncJob for OWNER/NAME and queue it once the transaction commits."""
    from annotator.dispatch import enqueue_job

    check_repository_name(repository, "repository")
    job = SyncJob.objects.create(
        repository_name=repository,
        since=since,
        api_url=api_url,
        periodic=periodic,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    enqueue_job(job)
    return job


def run_sync_job(*, job_id: int) -> None:
    """Run SyncJob `job_id` and record progress and outcome on its row.

    A worker killed mid-run leaves whole pages and the cursor after the last of them (each
    commits with SyncState); the sweep fails the job and the next run resumes there.
    """
    job = SyncJob.objects.select_related("created_by").get(pk=job_id)
    if not claim_job(SyncJob, job.pk):
        return  # finished, or another worker holds it (a redelivered task)
    report: SyncReport | None = None
    try:
        token = token_for(job.created_by)
    except TokenKeyError as error:
        _finish_job(job.pk, None, status=SyncJob.Status.FAILED, error=f"your GitHub token: {error}")
        return

    def on_progress(current: SyncReport) -> None:
        nonlocal report
        report = current
        report_progress(SyncJob, job.pk, **current.job_fields())

    with job_heartbeat(SyncJob, job.pk):
        try:
            report = sync_repository(
                full_name=job.repository_name,
                since=job.since,
                api_url=job.api_url,
                token=token,
                token_name=USER_TOKEN_NAME if token else "GITHUB_TOKEN",
                periodic=True if job.periodic else None,
                on_progress=on_progress,
            )
        except (GitHubError, SyncError, ImportFormatError) as error:
            _finish_job(job.pk, report, status=SyncJob.Status.FAILED, error=str(error))
        except Exception as error:
            logger.exception("sync job %s failed", job.pk)
            failed = f"internal error: {error}"
            _finish_job(job.pk, report, status=SyncJob.Status.FAILED, error=failed)
            raise
        else:
            _finish_job(job.pk, report, status=SyncJob.Status.SUCCEEDED)


USER_TOKEN_NAME = "your GitHub token, on your account page"


def token_for(user: Any) -> str | None:
    """The GitHub token a sync started by `user` sends: theirs, stored encrypted on their
    account page (annotator/accounts), or None for the server's GITHUB_TOKEN. Periodic
    re-syncs have no user and use the server's."""
    return github_token_for(user)


def resync_periodic_repositories() -> list[SyncJob]:
    """Queue a sync for each repository marked periodic that has none queued or running.

    A job left "running" by a lost worker stops counting after STALE_JOB_AGE, so one lost
    task message cannot end the re-syncs of its repository.
    """
    unfinished = SyncJob.objects.filter(
        status__in=[SyncJob.Status.QUEUED, SyncJob.Status.RUNNING],
        created_at__gte=timezone.now() - STALE_JOB_AGE,
    )
    busy = {name.lower() for name in unfinished.values_list("repository_name", flat=True)}
    states = SyncState.objects.filter(periodic=True).select_related("repository")
    return [
        start_sync_job(repository=state.repository.full_name, api_url=state.api_url)
        for state in states
        if state.repository.full_name.lower() not in busy
    ]


def _finish_job(pk: int, report: SyncReport | None, **fields: Any) -> None:
    if report is not None:
        fields = report.job_fields() | fields
        reasons = report.issues.skipped_reasons + report.comments.skipped_reasons
        fields["notes"] = "\n".join(reasons)
        repository = Repository.objects.named(report.repository)
        fields["repository"] = repository
        if fields["status"] == SyncJob.Status.FAILED:
            fields["message"] = "stopped; the next run resumes where this one stopped"
    finish_job(SyncJob, pk, **fields)
