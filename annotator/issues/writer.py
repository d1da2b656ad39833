"""Writing parsed records in batches: classification, duplicate checks and upserts.

Used by the file import (services.import_issues) and by anything else that turns GitHub
objects into records, always inside one transaction per unit of work.
"""

from __future__ import annotations

import dataclasses
import operator
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from .bulk import ISSUE_COLUMNS, count_stored_comments, insert_new_issue_rows, upsert_issue_rows
from .formats import CommentRecord, ImportFormatError, IssueRecord
from .models import KNOWN_RENAMES, ImportJob, Issue, IssueComment, IssueRevision, Repository
from .sql import CopyValueError, copy_fields, text_vectors

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


def github_hosts(api_url: str | None = None) -> frozenset[str]:
    """The hosts an issue's web URL may name: github.com and the GitHub API's host
    (`api_url`, else settings.GITHUB_API_URL; a GitHub Enterprise server serves both)."""
    host = urllib.parse.urlsplit(api_url or settings.GITHUB_API_URL).hostname
    return frozenset({"github.com", *([host] if host else [])})


_ON_GITHUB = "https://github.com/"


def check_issue_url(record: IssueRecord, hosts: frozenset[str]) -> None:
    """Refuse a web URL that is not http(s) on `hosts`: the issue pages link to it ("View on
    GitHub"), so a `javascript:` or `data:` URL would run in the reader's browser."""
    if not record.html_url:
        return  # Issue.github_url builds the link from the repository and number
    if record.html_url.startswith(_ON_GITHUB) and "github.com" in hosts:
        return  # its host ends at that "/": what urlsplit finds, without its cost
    parts = urllib.parse.urlsplit(record.html_url)
    if parts.scheme in ("http", "https") and parts.hostname in hosts:
        return
    raise ImportFormatError(
        f"must be an http(s) URL on {' or '.join(sorted(hosts))}, got {record.html_url[:200]!r}",
        record=f"{record.repository}#{record.number} (record {record.index})",
        field="url" if "html_url" not in record.raw and "url" in record.raw else "html_url",
    )


@dataclass(frozen=True, slots=True)
class PreparedIssue:
    """An issue record with what writing it needs that no query does: its URL checked, its
    content hash, and on PostgreSQL its values in COPY's binary format but for the repository
    id that begins them (resolved by the writer). RecordWriter.prepare makes it; the import
    does so in its parse thread, beside the statements of the batch before."""

    record: IssueRecord
    content_hash: str
    copy_tail: bytes | None
    # Its title's and body's search vector (sql.text_vectors), where computed ahead.
    vector: bytes | None = None


class RecordWriter:
    """Writes batches of parsed records, classifying each as created/updated/unchanged/skipped.

    Issue numbers written by this import are remembered in one bitmap per repository, so a
    number seen twice is caught however far apart the two records are, in memory that grows
    with the largest issue number and not with the file.
    """

    def __init__(
        self,
        *,
        url_hosts: frozenset[str] | None = None,
        source: str = IssueRevision.Source.IMPORT,
        job: ImportJob | None = None,
        user: Any = None,
    ) -> None:
        self.url_hosts = github_hosts() if url_hosts is None else url_hosts
        # Who replaces the text of an issue a study holds: recorded with its revision.
        self.source, self.job = source, job
        self.user = user if getattr(user, "is_authenticated", False) else None
        self.counts = ImportCounts()
        self._repositories: dict[str, Repository] = {}
        self._written: dict[int, bytearray] = {}
        self._copy = connection.vendor == "postgresql"  # rows in COPY format (bulk.py)
        self._wrote_last = True  # whether the last batch of issues wrote any

    def prepare(self, record: Any) -> Any:
        """An issue record as a PreparedIssue (raising ImportFormatError for its URL); any
        other record as it is. Queries nothing, so it may run in another thread."""
        if not isinstance(record, IssueRecord):
            return record
        check_issue_url(record, self.url_hosts)
        digest = record.content_hash()
        tail = None
        if self._copy:
            try:
                row = _issue_row(0, record, digest, raw_text=True)
                tail = copy_fields(row[1:], start=1)
            except CopyValueError as error:
                where = f"record {record.index} (number {record.number})"
                raise ImportFormatError(str(error), record=where, field=error.field) from None
        return PreparedIssue(record, digest, tail)

    def with_vectors(self, batch: list[Any]) -> list[Any]:
        """The batch with each PreparedIssue's search vector, computed by this thread's
        connection (on PostgreSQL; elsewhere there is no search index). Writes nothing, so it
        may run in another thread, beside the upsert of the batch before: the vectors are half
        of the upsert's backend time, and there they take the machine's other core. Skipped
        while the batch written last was all unchanged (a re-import): those vectors would be
        thrown away, and the upsert computes any vector not given."""
        if not self._copy or not self._wrote_last:
            return batch
        at = [n for n, r in enumerate(batch) if isinstance(r, PreparedIssue)]
        issues = [batch[n].record for n in at]
        vectors = text_vectors([r.title for r in issues], [r.body for r in issues])
        done = list(batch)
        for n, vector in zip(at, vectors, strict=True):
            issue = batch[n]
            done[n] = PreparedIssue(issue.record, issue.content_hash, issue.copy_tail, vector)
        return done

    def write(self, batch: list[Any]) -> None:
        """Write a batch of IssueRecord, PreparedIssue and CommentRecord."""
        issues = [
            r if isinstance(r, PreparedIssue) else self.prepare(r)
            for r in batch
            if isinstance(r, IssueRecord | PreparedIssue)
        ]
        comments = [r for r in batch if isinstance(r, CommentRecord)]
        if issues:
            self._write_issues(issues)
        if comments:
            _after_comments(self._write_comments(comments))

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
    def _write_issues(self, prepared: list[PreparedIssue]) -> None:
        by_key: dict[tuple[int, int], PreparedIssue] = {}
        for issue in prepared:
            record = issue.record
            key = (self._repository(record).pk, record.number)
            earlier = by_key.get(key)
            if earlier is not None:
                self._duplicate(earlier.record.index, earlier.content_hash, issue)
                continue
            by_key[key] = issue
        existing = self._existing_issues(by_key)
        to_write: list[tuple[Any, ...] | bytes] = []
        vectors: list[bytes | None] = []
        updated: dict[int, IssueRecord] = {}
        for key, issue in by_key.items():
            repo_id, number = key
            stored = existing.get(key)
            if stored is not None and self._was_written(repo_id, number):
                self._duplicate(None, stored[1], issue)
                continue
            self._mark_written(repo_id, number)
            if stored is None:
                self.counts.created += 1
            elif stored[1] == issue.content_hash:
                self.counts.unchanged += 1
                continue
            else:
                self.counts.updated += 1
                updated[stored[0]] = issue.record
            if issue.copy_tail is not None:
                to_write.append(copy_fields([repo_id]) + issue.copy_tail)
            else:
                to_write.append(_issue_row(repo_id, issue.record, issue.content_hash))
            vectors.append(issue.vector)
        self._wrote_last = bool(to_write)
        rewritten = self._keep_revisions(updated)
        # All new (no stored row changes): one COPY into the table, where it can.
        if not (to_write and not updated and insert_new_issue_rows(to_write, vectors)):
            upsert_issue_rows(to_write, vectors)
        if rewritten:
            Issue.objects.filter(pk__in=rewritten).update(changed_at=timezone.now())

    def _keep_revisions(self, updated: dict[int, IssueRecord]) -> list[int]:
        """Before the upsert: the issues whose title or body the batch changes, with the text
        they had kept as a revision where a study holds them. Returns those issues' ids (the
        "changed since labeled" mark follows them)."""
        if not updated:
            return []
        now = timezone.now()
        stored = Issue.objects.filter(pk__in=updated).values_list(
            "pk", "title", "body", "content_hash"
        )
        changed = {
            pk: (title, body, content_hash)
            for pk, title, body, content_hash in stored
            if (title, body) != (updated[pk].title, updated[pk].body)
        }
        held = set(
            Issue.objects.filter(pk__in=changed, study_items__isnull=False)
            .values_list("pk", flat=True)
            .distinct()
        )
        IssueRevision.objects.bulk_create(
            IssueRevision(
                issue_id=pk,
                title=changed[pk][0],
                body=changed[pk][1],
                content_hash=changed[pk][2],
                replaced_at=now,
                source=self.source,
                import_job=self.job,
                replaced_by=self.user,
            )
            for pk in sorted(held)
        )
        return sorted(changed)

    def _existing_issues(
        self, by_key: dict[tuple[int, int], PreparedIssue]
    ) -> dict[tuple[int, int], tuple[int, str]]:
        numbers_by_repo: dict[int, list[int]] = {}
        for repo_id, number in by_key:
            numbers_by_repo.setdefault(repo_id, []).append(number)
        found: dict[tuple[int, int], tuple[int, str]] = {}
        for repo_id, numbers in numbers_by_repo.items():
            rows = _numbered(Issue.objects.filter(repository_id=repo_id), numbers)
            for number, pk, content_hash in rows.values_list("number", "pk", "content_hash"):
                found[(repo_id, number)] = (pk, content_hash)
        return found

    def _duplicate(
        self, earlier_index: int | None, earlier_hash: str, issue: PreparedIssue
    ) -> None:
        record = issue.record
        if earlier_hash == issue.content_hash:
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
            for issue_id, key, content_hash in _numbered(
                IssueComment.objects.filter(key__in={k for _, k in rows}),
                {i for i, _ in rows},
                field="issue_id",
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
            rows = _numbered(Issue.objects.filter(repository_id=repo_id), numbers)
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


def _numbered(queryset: Any, numbers: Iterable[int], field: str = "number") -> Any:
    """Filter `field` IN numbers, with their range beside: PostgreSQL estimates that an IN list
    of a thousand matches every row and scans the whole repository for each batch (23 s of a
    100,000-issue import); the range lets it use the (repository, number) index."""
    numbers = list(numbers)
    if not numbers:
        return queryset.none()
    return queryset.filter(
        **{f"{field}__in": numbers, f"{field}__gte": min(numbers), f"{field}__lte": max(numbers)}
    )


def _issue_row(
    repository_id: int, record: IssueRecord, content_hash: str, *, raw_text: bool = False
) -> tuple[Any, ...]:
    """The record as a row in bulk.ISSUE_COLUMNS order (the repository's id first). With
    `raw_text`, for COPY: the raw object as the JSON text the file held, where kept."""
    raw = record.raw_json if raw_text and record.raw_json is not None else record.raw
    return (repository_id, *_RECORD_COLUMNS(record), raw, content_hash)


# The columns between the repository's id and the raw object and hash are the record's
# attributes of the same names (the labels a tuple, which JSON writes as a list), read at once.
if (
    ISSUE_COLUMNS[0] != "repository_id"
    or ISSUE_COLUMNS[-2:] != ("raw", "content_hash")
    or not set(ISSUE_COLUMNS[1:-2]) <= {f.name for f in dataclasses.fields(IssueRecord)}
):
    raise RuntimeError(f"_issue_row does not know the columns {ISSUE_COLUMNS}")
_RECORD_COLUMNS = operator.attrgetter(*ISSUE_COLUMNS[1:-2])


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


def _after_comments(issue_ids: set[int]) -> None:
    """Issues whose comments changed: recount them and queue them for search indexing."""
    if issue_ids:
        count_stored_comments(list(issue_ids))
        Issue.objects.filter(pk__in=issue_ids).update(search_vector=None)
