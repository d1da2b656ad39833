"""Writing parsed records in batches: upserts, duplicate checks and search vectors.

Used by the file import (services.import_issues) and by anything else that turns GitHub
objects into records, always inside one transaction per unit of work.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce, Greatest

from .formats import CommentRecord, ImportFormatError, IssueRecord
from .models import KNOWN_RENAMES, SEARCH_CONFIG, Issue, IssueComment, Repository

# tsvector values are capped at 1 MB; long logs add little to search past their first pages.
SEARCH_TEXT_LIMIT = 100_000

ISSUE_FIELDS = [
    "github_id", "title", "body", "state", "state_reason", "labels", "author", "created_at",
    "updated_at", "closed_at", "is_pull_request", "html_url", "comments_count", "raw",
    "content_hash", "imported_at",
]  # fmt: skip
COMMENT_FIELDS = ["github_id", "author", "body", "created_at", "updated_at", "raw", "content_hash"]


@dataclass
class ImportCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    skipped_reasons: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"created {self.created}, updated {self.updated}, "
            f"unchanged {self.unchanged}, skipped {self.skipped}"
        )

    def skip(self, reason: str) -> None:
        self.skipped += 1
        if len(self.skipped_reasons) < 20:
            self.skipped_reasons.append(reason)


def check_repository_name(full_name: str, where: str) -> None:
    owner, slash, name = full_name.partition("/")
    if not slash or not owner or not name or "/" in name:
        raise ImportFormatError(f"{where}: repository must be OWNER/NAME, got {full_name!r}")


class RecordWriter:
    """Writes batches of parsed records, classifying each as created/updated/unchanged/skipped.

    Issue numbers written by this import are remembered in one bitmap per repository, so a
    number seen twice is caught however far apart the two records are, in memory that grows
    with the largest issue number and not with the file.
    """

    def __init__(self) -> None:
        self.counts = ImportCounts()
        self._repositories: dict[str, Repository] = {}
        self._written: dict[int, bytearray] = {}

    def write(self, batch: list[IssueRecord | CommentRecord]) -> None:
        issues = [r for r in batch if isinstance(r, IssueRecord)]
        comments = [r for r in batch if isinstance(r, CommentRecord)]
        touched: set[int] = set()
        if issues:
            touched |= self._write_issues(issues)
        if comments:
            touched |= self._write_comments(comments)
        _refresh_search(touched)

    # --- repositories -------------------------------------------------------------------
    def _repository(self, record: IssueRecord | CommentRecord) -> Repository:
        if not record.repository:
            raise ImportFormatError(
                f"record {record.index}: field 'repository': missing "
                "(give --repo OWNER/NAME for files whose records do not name one)",
                record=f"record {record.index}",
                field="repository",
            )
        key = record.repository.lower()
        if key not in self._repositories:
            check_repository_name(record.repository, f"record {record.index}: field 'repository'")
            self._repositories[key] = resolve_repository(record.repository)
        return self._repositories[key]

    # --- issues ---------------------------------------------------------------------------
    def _write_issues(self, records: list[IssueRecord]) -> set[int]:
        by_key: dict[tuple[int, int], IssueRecord] = {}
        for record in records:
            repo = self._repository(record)
            key = (repo.pk, record.number)
            earlier = by_key.get(key)
            if earlier is not None:
                self._duplicate(earlier.index, earlier.content_hash(), record)
                continue
            by_key[key] = record
        existing = self._existing_issues(by_key)
        to_write = []
        for key, record in by_key.items():
            repo_id, number = key
            stored = existing.get(key)
            if stored is not None and self._was_written(repo_id, number):
                self._duplicate(None, stored[1], record)
                continue
            self._mark_written(repo_id, number)
            if stored is None:
                self.counts.created += 1
            elif stored[1] == record.content_hash():
                self.counts.unchanged += 1
                continue
            else:
                self.counts.updated += 1
            to_write.append(_issue_row(repo_id, record))
        Issue.objects.bulk_create(
            to_write,
            update_conflicts=True,
            unique_fields=["repository", "number"],
            update_fields=ISSUE_FIELDS,
        )
        written = {(issue.repository_id, issue.number) for issue in to_write}
        if not written:
            return set()
        return set(
            Issue.objects.filter(
                repository_id__in={r for r, _ in written}, number__in={n for _, n in written}
            ).values_list("pk", flat=True)
        )

    def _existing_issues(
        self, by_key: dict[tuple[int, int], IssueRecord]
    ) -> dict[tuple[int, int], tuple[int, str]]:
        numbers_by_repo: dict[int, list[int]] = {}
        for repo_id, number in by_key:
            numbers_by_repo.setdefault(repo_id, []).append(number)
        found: dict[tuple[int, int], tuple[int, str]] = {}
        for repo_id, numbers in numbers_by_repo.items():
            rows = Issue.objects.filter(repository_id=repo_id, number__in=numbers).values_list(
                "number", "pk", "content_hash"
            )
            for number, pk, content_hash in rows:
                found[(repo_id, number)] = (pk, content_hash)
        return found

    def _duplicate(self, earlier_index: int | None, earlier_hash: str, record: IssueRecord) -> None:
        if earlier_hash == record.content_hash():
            self.counts.skip(f"record {record.index}: duplicate of issue #{record.number}")
            return
        where = f"record {earlier_index}" if earlier_index else "an earlier record"
        raise ImportFormatError(
            f"record {record.index} (number {record.number}): field 'number': issue "
            f"#{record.number} appears again with different content (first at {where})",
            record=f"record {record.index} (number {record.number})",
            field="number",
        )

    def _was_written(self, repo_id: int, number: int) -> bool:
        bits = self._written.get(repo_id)
        return (
            bits is not None
            and number // 8 < len(bits)
            and bool(bits[number // 8] >> (number % 8) & 1)
        )

    def _mark_written(self, repo_id: int, number: int) -> None:
        bits = self._written.setdefault(repo_id, bytearray())
        if number // 8 >= len(bits):
            bits.extend(bytes(number // 8 + 1 - len(bits) + 1024))
        bits[number // 8] |= 1 << (number % 8)

    # --- comments -------------------------------------------------------------------------
    def _write_comments(self, records: list[CommentRecord]) -> set[int]:
        issue_ids = self._issue_ids_for(records)
        rows: dict[tuple[int, str], IssueComment] = {}
        for record in records:
            repo = self._repository(record)
            issue_id = issue_ids.get((repo.pk, record.issue_number))
            if issue_id is None:
                self.counts.skip(
                    f"record {record.index}: comment on {repo.full_name}#{record.issue_number}, "
                    "an issue not imported"
                )
                continue
            row = _comment_row(issue_id, record)
            if (issue_id, row.key) in rows:
                self.counts.skip(f"record {record.index}: duplicate comment")
                continue
            rows[(issue_id, row.key)] = row
        stored = dict(
            ((issue_id, key), content_hash)
            for issue_id, key, content_hash in IssueComment.objects.filter(
                issue_id__in={i for i, _ in rows}, key__in={k for _, k in rows}
            ).values_list("issue_id", "key", "content_hash")
        )
        to_write = []
        for key, row in rows.items():
            if key not in stored:
                self.counts.created += 1
            elif stored[key] == row.content_hash:
                self.counts.unchanged += 1
                continue
            else:
                self.counts.updated += 1
            to_write.append(row)
        IssueComment.objects.bulk_create(
            to_write,
            update_conflicts=True,
            unique_fields=["issue", "key"],
            update_fields=COMMENT_FIELDS,
        )
        return {row.issue_id for row in to_write}

    def _issue_ids_for(self, records: list[CommentRecord]) -> dict[tuple[int, int], int]:
        wanted: dict[int, set[int]] = {}
        for record in records:
            wanted.setdefault(self._repository(record).pk, set()).add(record.issue_number)
        found: dict[tuple[int, int], int] = {}
        for repo_id, numbers in wanted.items():
            rows = Issue.objects.filter(repository_id=repo_id, number__in=numbers)
            for number, pk in rows.values_list("number", "pk"):
                found[(repo_id, number)] = pk
        return found


def resolve_repository(full_name: str) -> Repository:
    """The repository called `full_name` (or formerly so), created on first sight.

    A name in KNOWN_RENAMES creates the new name's repository with the old name as an alias.
    """
    found = Repository.objects.named(full_name)
    if found is not None:
        return found
    current = KNOWN_RENAMES.get(full_name.lower(), full_name)
    owner, _, name = current.partition("/")
    repository = Repository.objects.named(current) or Repository.objects.create(
        owner=owner, name=name
    )
    if current != full_name:
        old_owner, _, old_name = full_name.partition("/")
        repository.aliases.create(owner=old_owner, name=old_name)
    return repository


def _issue_row(repository_id: int, record: IssueRecord) -> Issue:
    return Issue(
        repository_id=repository_id,
        number=record.number,
        github_id=record.github_id,
        title=record.title,
        body=record.body,
        state=record.state,
        state_reason=record.state_reason,
        labels=list(record.labels),
        author=record.author,
        created_at=record.created_at,
        updated_at=record.updated_at,
        closed_at=record.closed_at,
        is_pull_request=record.is_pull_request,
        html_url=record.html_url,
        comments_count=record.comments_count,
        raw=record.raw,
        content_hash=record.content_hash(),
    )


def _comment_row(issue_id: int, record: CommentRecord) -> IssueComment:
    return IssueComment(
        issue_id=issue_id,
        key=record.identity(),
        github_id=record.github_id,
        author=record.author,
        body=record.body,
        created_at=record.created_at,
        updated_at=record.updated_at,
        raw=record.raw,
        content_hash=record.content_hash(),
    )


def _refresh_search(issue_ids: set[int]) -> None:
    """Recompute the search vectors (title, body, comments) of the given issues.

    Also raises comments_count to the number of stored comments, for exports that carry
    comments but not GitHub's count.
    """
    if not issue_ids:
        return
    stored = (
        IssueComment.objects.filter(issue=OuterRef("pk"))
        .order_by()
        .values("issue")
        .annotate(n=Count("pk"))
        .values("n")
    )
    Issue.objects.filter(pk__in=issue_ids).update(
        comments_count=Greatest("comments_count", Coalesce(Subquery(stored), 0))
    )
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE issues_issue AS i SET search_vector =
                setweight(to_tsvector(%(config)s::regconfig, left(i.title, %(limit)s)), 'A')
                || setweight(to_tsvector(%(config)s::regconfig, left(i.body, %(limit)s)), 'B')
                || setweight(to_tsvector(%(config)s::regconfig, left(coalesce(
                     (SELECT string_agg(c.body, ' ') FROM issues_issuecomment c
                      WHERE c.issue_id = i.id), ''), %(limit)s)), 'C')
            WHERE i.id = ANY(%(ids)s)
            """,
            {"config": SEARCH_CONFIG, "limit": SEARCH_TEXT_LIMIT, "ids": list(issue_ids)},
        )
