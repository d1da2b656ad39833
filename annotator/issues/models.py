"""GitHub data: repositories (with their old names), issues, comments, and import jobs."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVectorField
from django.db import connection, models
from django.db.models import Case, Count, F, FloatField, Q, Value, When, Window
from django.db.models.functions import Lower, RowNumber
from django.urls import reverse
from django.utils import timezone

from annotator.jobs import Job
from annotator.paging import planned_rows

# Repositories known to have been renamed on GitHub: an import that names the old full name lands
# in the repository of the new one, so a study never sees one project as two.
KNOWN_RENAMES = {"microsoft/deepspeed": "deepspeedai/DeepSpeed"}

SEARCH_CONFIG = "english"
# Fenced code (logs, tracebacks) is indexed with this copy of `english` that drops numbers,
# versions and file paths (migration 0009; annotator/issues/sql.py says why).
SEARCH_CODE_CONFIG = "issue_code"
# A search expected to match more issues than this lists them newest first instead of by rank
# (IssueQuerySet.ranks_cheaply).
RANK_LIMIT = 10_000
# A ranked search ranks its newest RANK_WINDOW matches by relevance and lists the rest after
# them, newest first (IssueQuerySet.search). Ranking reads each ranked match's search vector,
# which at a million issues is stored out of line (TOAST, ~4 pages a vector): ranking all 2,641
# matches of "segfault lora moe" read 13,500 pages (108 ms with every page in memory, 820 ms
# from disk); the newest 500 read 6,900 (41 ms, 422 ms), most of them the matches' own rows,
# which any count or order of them reads. A search matching at most this many ranks them all.
RANK_WINDOW = 500


class RepositoryQuerySet(models.QuerySet["Repository"]):
    def named(self, full_name: str) -> Repository | None:
        """The repository called `full_name` now or under an alias, ignoring case."""
        owner, _, name = full_name.strip().partition("/")
        found = self.filter(owner__iexact=owner, name__iexact=name).first()
        if found is None:
            found = self.filter(aliases__owner__iexact=owner, aliases__name__iexact=name).first()
        return found


class Repository(models.Model):
    owner = models.CharField(max_length=100)
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RepositoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "repositories"
        ordering = ["owner", "name"]
        constraints = [
            models.UniqueConstraint(Lower("owner"), Lower("name"), name="repository_unique_name"),
        ]

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def html_url(self) -> str:
        return f"https://github.com/{self.full_name}"


class RepositoryAlias(models.Model):
    """A former name of a repository (GitHub answers the old name with a 301)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="aliases")
    owner = models.CharField(max_length=100)
    name = models.CharField(max_length=100)

    class Meta:
        verbose_name_plural = "repository aliases"
        constraints = [
            models.UniqueConstraint(Lower("owner"), Lower("name"), name="repository_alias_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.owner}/{self.name} → {self.repository}"


ISSUE_FILTERS = ("q", "repository", "state", "label", "kind", "since", "until")


class IssueQuerySet(models.QuerySet["Issue"]):
    def for_list(self) -> IssueQuerySet:
        """What a list of issues shows: no bodies or raw objects, repository joined."""
        return self.select_related("repository").defer("raw", "body", "search_vector")

    def matching(self, filters: Mapping[str, str]) -> IssueQuerySet:
        """Issues matching the ISSUE_FILTERS of a list page or API query; unknown values are
        ignored. Ordered by search rank when searching, else newest first."""
        issues: IssueQuerySet = self
        if filters.get("repository", "").isdigit():
            issues = issues.filter(repository_id=int(filters["repository"]))
        if filters.get("state") in Issue.State.values:
            issues = issues.filter(state=filters["state"])
        if filters.get("label"):
            issues = issues.with_label(filters["label"])
        if filters.get("kind") in {"issue", "pr"}:
            issues = issues.filter(is_pull_request=filters["kind"] == "pr")
        # Bounds on the timestamp itself (the day's start in the current time zone), not on
        # its date: a cast of the column would keep its index out of use.
        if since := _parse_date(filters.get("since", "")):
            issues = issues.filter(created_at__gte=_day_start(since))
        if until := _parse_date(filters.get("until", "")):
            issues = issues.filter(created_at__lt=_day_start(until + timedelta(days=1)))
        if filters.get("q", "").strip():
            found = issues.search(filters["q"])
            if found.ranks_cheaply():
                return found
            return issues.search(filters["q"], ranked=False).newest_first()
        return issues.newest_first()

    def newest_first(self) -> IssueQuerySet:
        """Newest first (the `issue_newest` index's order)."""
        return self.order_by(F("created_at").desc(nulls_last=True), "-pk")

    def ranks_cheaply(self) -> bool:
        """Whether ranking these matches by relevance is cheap: ranking reads every match's
        search vector, seconds for a word most of a million issues hold, so past
        RANK_LIMIT expected matches (the planner's estimate) a search lists newest first."""
        expected = planned_rows(self)
        return expected is None or expected <= RANK_LIMIT

    def capped_count_is_cheap(self) -> bool:
        """Whether counting up to a limit is cheap (annotator/paging.py): not for a full-text
        search, whose GIN lookup builds the bitmap of every match first (0.7 s for a common
        word at a million issues)."""
        return "rank" not in self.query.annotations

    def rows_count_field(self) -> str | None:
        """The annotation each row of a ranked search carries the number of matches in
        (annotator/paging.py counts the list from its first page: no second pass)."""
        return "matches" if "matches" in self.query.annotations else None

    def is_ranked(self) -> bool:
        """Whether the list is ordered by search rank (else newest first)."""
        return bool(self.query.order_by) and self.query.order_by[0] == _BY_RANK

    def search(self, text: str, *, ranked: bool = True) -> IssueQuerySet:
        """Full-text search over title, body and comments (PostgreSQL); substring elsewhere.
        On PostgreSQL, `ranked`: the newest RANK_WINDOW matches come first, by rank, then the
        others, newest first (their rank is NULL: never computed, so their vectors are never
        read); else the matches in no order, for the caller to order."""
        text = text.strip()
        if not text:
            return self
        if connection.vendor == "postgresql":
            query = SearchQuery(text, config=SEARCH_CONFIG, search_type="websearch")
            if not ranked:
                # No rank is computed (NULL), but the list is a full-text search all the same:
                # counting its matches exactly is not cheap (capped_count_is_cheap).
                return self.filter(search_vector=query).annotate(
                    rank=Value(None, output_field=FloatField())
                )
            # One pass over the matches: their order by age, the rank of the newest, and how
            # many there are (the list's count: annotator/paging.py, `rows_count_field`).
            newest = Window(RowNumber(), order_by=[*_NEWEST])
            rank = Case(When(age__lte=RANK_WINDOW, then=SearchRank(F("search_vector"), query)))
            return (
                self.filter(search_vector=query)
                .annotate(age=newest, matches=Window(Count("pk")))
                .annotate(rank=rank)
                .order_by(_BY_RANK, *_NEWEST)
            )
        matches = IssueComment.objects.filter(body__icontains=text)
        return self.filter(
            Q(title__icontains=text) | Q(body__icontains=text) | Q(pk__in=matches.values("issue"))
        ).order_by("-pk")

    def with_label(self, label: str) -> IssueQuerySet:
        if connection.vendor == "postgresql":
            return self.filter(labels__contains=[label])
        # SQLite has no JSON containment; the stored JSON text quotes each name, so a quoted
        # substring match finds exactly the names equal to `label`.
        return self.filter(labels__icontains=f'"{label}"')


# The ranked order's first key (IssueQuerySet.search, is_ranked), and newest first.
_BY_RANK = F("rank").desc(nulls_last=True)
_NEWEST = (F("created_at").desc(nulls_last=True), F("pk").desc())


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def _parse_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value.strip()) if value.strip() else None
    except ValueError:
        return None


class Issue(models.Model):
    class State(models.TextChoices):
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    repository = models.ForeignKey(Repository, on_delete=models.PROTECT, related_name="issues")
    number = models.PositiveIntegerField()
    github_id = models.BigIntegerField(null=True, blank=True)
    title = models.TextField()
    body = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State.choices)
    state_reason = models.CharField(max_length=30, blank=True)
    labels = models.JSONField(default=list, blank=True)
    author = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    is_pull_request = models.BooleanField(default=False)
    html_url = models.URLField(max_length=500, blank=True)
    comments_count = models.PositiveIntegerField(default=0)
    raw = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    search_vector = SearchVectorField(null=True, editable=False)
    imported_at = models.DateTimeField(auto_now=True)
    # When a GitHub sync last changed this issue or its comments (sync.py sets it); a label
    # given before this moment was given on an older text ("changed since labeled").
    changed_at = models.DateTimeField(null=True, blank=True, db_index=True)

    objects = IssueQuerySet.as_manager()

    class Meta:
        ordering = ["repository_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "number"], name="issue_unique_number"),
        ]
        # On PostgreSQL only, migrations 0002 and 0008 create GIN indexes on search_vector
        # and labels, and `issue_newest` on (created_at DESC NULLS LAST, id DESC): the list's
        # order (IssueQuerySet.newest_first), which also serves date windows.
        indexes = [
            # What indexing has still to do (search.pending_issue_count, index_search_batch).
            models.Index(
                fields=["id"], condition=Q(search_vector__isnull=True), name="issue_unindexed"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.repository}#{self.number}"

    def get_absolute_url(self) -> str:
        return reverse("issues:detail", args=[self.pk])

    @property
    def github_url(self) -> str:
        """The "View on GitHub" link: the stored web URL when it is http(s) (imports refuse
        others, but rows stored before may hold a `javascript:` one), else built."""
        if urllib.parse.urlsplit(self.html_url).scheme in ("http", "https"):
            return self.html_url
        kind = "pull" if self.is_pull_request else "issues"
        return f"{self.repository.html_url}/{kind}/{self.number}"


class IssueComment(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="comments")
    # "id:<github id>" when GitHub gave one, else a hash of author, time and body: some exports
    # (and the shipped demo data) carry no comment ids, yet re-imports must stay idempotent.
    key = models.CharField(max_length=64)
    github_id = models.BigIntegerField(null=True, blank=True)
    author = models.CharField(max_length=100, blank=True)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    raw = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["issue", "key"], name="comment_unique_key"),
        ]

    def __str__(self) -> str:
        return f"comment {self.key} on {self.issue_id}"


class ImportJob(Job):
    file = models.FileField(upload_to="imports/%Y/%m/")
    original_name = models.CharField(max_length=255)
    format = models.CharField(max_length=10, default="auto")
    repository = models.CharField(max_length=201, blank=True, help_text="default OWNER/NAME")
    size_bytes = models.BigIntegerField(default=0)
    bytes_read = models.BigIntegerField(default=0)
    records_read = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)

    task_name = "annotator.issues.tasks.import_issues_task"

    class Meta(Job.Meta):
        # Imports and GitHub syncs write into the issue pool every study shares: staff, or
        # holders of this permission (the "Importers" group), may start them (access.py).
        permissions = [("import_issues", "Can import and sync GitHub issues")]

    def __str__(self) -> str:
        return f"import {self.pk} of {self.original_name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("issues:import_detail", args=[self.pk])

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.size_bytes:
            return 0
        return min(99, int(100 * self.bytes_read / self.size_bytes))

    @property
    def summary(self) -> str:
        return (
            f"created {self.created}, updated {self.updated}, "
            f"unchanged {self.unchanged}, skipped {self.skipped}"
        )


class SyncState(models.Model):
    """Where the GitHub sync of one repository stands (annotator/issues/sync.py).

    `since` is what the next run asks for; `phase`/`next_url` describe an unfinished run, which
    the next run resumes at `next_url` (each page and this row commit together).
    """

    class Phase(models.TextChoices):
        IDLE = "", "idle"
        ISSUES = "issues", "issues"
        COMMENTS = "comments", "comments"

    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, related_name="sync_state"
    )
    since = models.DateTimeField(null=True, blank=True)
    etags = models.JSONField(default=dict, blank=True, help_text="first-page URL → ETag")
    phase = models.CharField(max_length=10, choices=Phase.choices, default="", blank=True)
    next_url = models.TextField(blank=True)
    run_since = models.DateTimeField(null=True, blank=True)
    run_started_at = models.DateTimeField(null=True, blank=True)
    run_changed = models.BooleanField(default=False)
    api_url = models.URLField(max_length=300, blank=True)
    periodic = models.BooleanField(default=False, help_text="re-synced by Celery beat")
    last_synced_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"sync state of {self.repository}"


class SyncJob(Job):
    """One run of the GitHub sync, as a background job whose row the progress page polls."""

    repository_name = models.CharField(max_length=201, help_text="OWNER/NAME as asked")
    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="sync_jobs"
    )
    since = models.DateTimeField(null=True, blank=True, help_text="overrides the stored since")
    api_url = models.URLField(max_length=300, blank=True)
    periodic = models.BooleanField(default=False, help_text="also re-sync it periodically")
    phase = models.CharField(max_length=10, blank=True)
    phase_page = models.PositiveIntegerField(default=0)
    phase_pages = models.PositiveIntegerField(default=0)
    pages = models.PositiveIntegerField(default=0)
    not_modified = models.PositiveIntegerField(default=0)
    issues_created = models.PositiveIntegerField(default=0)
    issues_updated = models.PositiveIntegerField(default=0)
    issues_unchanged = models.PositiveIntegerField(default=0)
    comments_created = models.PositiveIntegerField(default=0)
    comments_updated = models.PositiveIntegerField(default=0)
    comments_unchanged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    waits = models.PositiveIntegerField(default=0)
    waited_seconds = models.FloatField(default=0)
    message = models.CharField(max_length=300, blank=True, help_text="what it is doing now")

    # Pages commit one by one with the cursor (sync.py): a lost run's pages stay, whole.
    lost_outcome = "the pages it wrote are kept, whole, and the next sync resumes after them"
    task_name = "annotator.issues.tasks.sync_github_task"

    def __str__(self) -> str:
        return f"sync {self.pk} of {self.repository_name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("issues:sync_detail", args=[self.pk])

    @property
    def percent(self) -> int:
        """Issues are the first half, comments the second; pages known from rel="last"."""
        if self.status == self.Status.SUCCEEDED:
            return 100
        done = self.phase_page / self.phase_pages if self.phase_pages else 0
        offset = 50 if self.phase == SyncState.Phase.COMMENTS else 0
        return min(99, int(offset + 50 * min(done, 1)))

    @property
    def summary(self) -> str:
        return (
            f"issues: created {self.issues_created}, updated {self.issues_updated}, "
            f"unchanged {self.issues_unchanged}; comments: created {self.comments_created}, "
            f"updated {self.comments_updated}, unchanged {self.comments_unchanged}; "
            f"skipped {self.skipped}"
        )


class IssueRevision(models.Model):
    """The text an issue had before an import or a sync replaced it, kept when a study holds
    the issue: an annotator who labeled it before the change keeps reading the text they
    labeled, and the change is on record (when, by which import or sync, by whom)."""

    class Source(models.TextChoices):
        IMPORT = "import", "import"
        SYNC = "sync", "GitHub sync"

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="revisions")
    title = models.TextField()
    body = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64)
    replaced_at = models.DateTimeField()
    source = models.CharField(max_length=10, choices=Source.choices)
    import_job = models.ForeignKey(
        "ImportJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    replaced_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["issue_id", "replaced_at", "id"]
        indexes = [models.Index(fields=["issue", "replaced_at"], name="issue_revision_time")]

    def __str__(self) -> str:
        return f"{self.issue_id} before {self.replaced_at:%Y-%m-%d %H:%M}"
