"""Near-duplicate passes, the owner's marks, the issues they keep out, and similar issues."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.issues.models import Issue, Repository
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.models import Annotation, AnnotationLabel, Membership, Study

from .duplicates import DuplicateIndex, Group, Pair, Params, group_pairs, issue_text
from .marks import duplicate_issue_ids as duplicate_issue_ids  # callers of services before
from .marks import left_out_summary as left_out_summary
from .models import (
    DuplicateGroup,
    DuplicateMark,
    DuplicateMember,
    DuplicatePair,
    DuplicatePass,
    SimilarIssues,
)
from .similar import SimilarIndex, SimilarParams

logger = logging.getLogger(__name__)
Status = DuplicatePass.Status
BATCH = 1000


class SimilarityError(ValueError):
    """Bad input to a similarity service: the message names the field."""


# --- the pass -------------------------------------------------------------------------------
def start_duplicate_pass(
    *,
    repository: Repository | None = None,
    study: Study | None = None,
    user: Any = None,
    enqueue: bool = True,
) -> DuplicatePass:
    """A queued pass over every issue, or over `repository`'s."""
    from annotator.dispatch import enqueue_job

    job = DuplicatePass.objects.create(
        repository=repository,
        study=study,
        params={"duplicates": Params().as_dict(), "similar": SimilarParams().as_dict()},
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if enqueue:
        enqueue_job(job)
    return job


def run_duplicate_pass(*, pass_id: int) -> DuplicatePass:
    """The job: stream the issues once into the near-duplicate and the similarity indexes,
    then replace the groups and neighbours of the pass's scope in one transaction."""
    job = DuplicatePass.objects.get(pk=pass_id)
    if not claim_job(DuplicatePass, job.pk):
        return job
    with job_heartbeat(DuplicatePass, job.pk):
        try:
            counts = _run(job)
        except Exception as error:
            logger.exception("near-duplicate pass %s failed", job.pk)
            finish_job(DuplicatePass, job.pk, status=Status.FAILED, error=f"{error}")
            raise
    finish_job(DuplicatePass, job.pk, status=Status.SUCCEEDED, progress=100, counts=counts)
    job.refresh_from_db()
    return job


def _scope(job: DuplicatePass) -> Any:
    issues = Issue.objects.all()
    if job.repository_id:
        issues = issues.filter(repository_id=job.repository_id)
    return issues


def _run(job: DuplicatePass) -> dict[str, Any]:
    started = time.perf_counter()
    issues = _scope(job)
    total = max(issues.count(), 1)
    duplicates, similar = DuplicateIndex(Params()), SimilarIndex(SimilarParams())
    pairs: list[Pair] = []
    keys: list[int] = []
    texts: list[str] = []
    rows = issues.order_by("pk").values_list("pk", "title", "body").iterator(chunk_size=BATCH)
    for pk, title, body in rows:
        text = issue_text(title, body)
        pairs += duplicates.add(pk, text)
        keys.append(pk)
        texts.append(text)
        if len(keys) == BATCH:
            similar.add(keys, texts)
            keys, texts = [], []
            report_progress(DuplicatePass, job.pk, progress=50 * len(duplicates) // total)
    similar.add(keys, texts)
    read = time.perf_counter()
    groups = group_pairs(pairs)
    with transaction.atomic():
        _write_groups(job, groups)
        neighbours = _write_neighbours(job, similar, total)
    return {
        "issues": len(duplicates),
        "signatures": duplicates.signatures,
        "pairs": len(pairs),
        "groups": len(groups),
        "grouped_issues": sum(len(g.members) for g in groups),
        "with_neighbours": neighbours,
        "seconds": {
            "read_and_index": round(read - started, 2),
            "similar_and_write": round(time.perf_counter() - read, 2),
        },
    }


def _write_groups(job: DuplicatePass, groups: list[Group]) -> None:
    """Replace the groups of the scope: all of them, or those lying wholly in the repository."""
    old = DuplicateGroup.objects.all()
    if job.repository_id:
        elsewhere = DuplicateMember.objects.exclude(issue__repository_id=job.repository_id)
        old = old.exclude(pk__in=elsewhere.values("group_id"))
    old.delete()
    for start in range(0, len(groups), BATCH):
        chunk = groups[start : start + BATCH]
        rows = DuplicateGroup.objects.bulk_create(
            DuplicateGroup(
                found_by=job,
                size=len(g.members),
                max_similarity=g.max_similarity,
                min_similarity=g.min_similarity,
            )
            for g in chunk
        )
        DuplicateMember.objects.bulk_create(
            DuplicateMember(group=row, issue_id=m)
            for row, g in zip(rows, chunk, strict=True)
            for m in g.members
        )
        DuplicatePair.objects.bulk_create(
            DuplicatePair(
                group=row,
                issue_a_id=p.a,
                issue_b_id=p.b,
                similarity=p.similarity,
                same_signature=p.same_signature,
            )
            for row, g in zip(rows, chunk, strict=True)
            for p in g.pairs
        )


def _write_neighbours(job: DuplicatePass, similar: SimilarIndex, total: int) -> int:
    """Replace the scope's neighbours as they are computed (never all held at once)."""
    SimilarIssues.objects.filter(issue__in=_scope(job)).delete()
    batch: list[SimilarIssues] = []
    written = 0
    for key, found in similar.neighbours():
        batch.append(SimilarIssues(issue_id=key, neighbours=[list(n) for n in found], found_by=job))
        if len(batch) == 5 * BATCH:
            written += _flush(batch)
            report_progress(DuplicatePass, job.pk, progress=50 + 49 * written // total)
    return written + _flush(batch)


def _flush(batch: list[SimilarIssues]) -> int:
    SimilarIssues.objects.bulk_create(batch)
    done = len(batch)
    batch.clear()
    return done


# --- marks ----------------------------------------------------------------------------------
def _issue(value: Issue | int | str | None, field: str) -> Issue:
    if isinstance(value, Issue):
        return value
    try:
        return Issue.objects.get(pk=int(value or ""))
    except (TypeError, ValueError, Issue.DoesNotExist):
        raise SimilarityError(f"field '{field}': no issue with id {value!r}") from None


def _pair_similarity(issue: Issue, other: Issue) -> float | None:
    a, b = sorted((issue.pk, other.pk))
    pair = DuplicatePair.objects.filter(issue_a_id=a, issue_b_id=b).order_by("-pk").first()
    return pair.similarity if pair else None


@transaction.atomic
def mark_issue(
    *,
    study: Study,
    issue: Issue | int | str,
    decision: str,
    duplicate_of: Issue | int | str | None = None,
    include: bool = False,
    user: Any = None,
) -> DuplicateMark:
    """Record `issue` as a duplicate of `duplicate_of` (kept out of the study unless
    `include`) or as distinct, replacing (withdrawing) its current mark."""
    if decision not in DuplicateMark.Decision.values:
        raise SimilarityError(
            f"field 'decision': choose 'duplicate' or 'distinct', not {decision!r}"
        )
    issue = _issue(issue, "issue")
    other = None
    if decision == DuplicateMark.Decision.DUPLICATE:
        if duplicate_of is None or duplicate_of == "":
            raise SimilarityError(
                f"field 'duplicate_of': name the issue #{issue.number} of {issue.repository} "
                "duplicates"
            )
        other = _issue(duplicate_of, "duplicate_of")
        if other.pk == issue.pk:
            raise SimilarityError(f"field 'duplicate_of': issue {issue} cannot duplicate itself")
        _check_no_cycle(study, issue, other)
    elif include:
        raise SimilarityError("field 'include': only a duplicate can be included anyway")
    _withdraw_current(study, issue, user)
    return DuplicateMark.objects.create(
        study=study,
        issue=issue,
        decision=decision,
        duplicate_of=other,
        include=bool(include) and other is not None,
        similarity=_pair_similarity(issue, other) if other else None,
        decided_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _check_no_cycle(study: Study, issue: Issue, other: Issue) -> None:
    """A chain of duplicates must end at a kept issue: marking A a duplicate of B when B is
    (through others) a duplicate of A would leave out every report of the bug."""
    current = dict(
        DuplicateMark.objects.current()
        .filter(study=study, decision=DuplicateMark.Decision.DUPLICATE)
        .values_list("issue_id", "duplicate_of_id")
    )
    seen, at = {issue.pk}, other.pk
    while at in current:
        if current[at] in seen or at in seen:
            raise SimilarityError(
                f"field 'duplicate_of': issue {other} is itself marked a duplicate of {issue}; "
                "undo that mark first"
            )
        seen.add(at)
        at = current[at]
    if at == issue.pk:
        raise SimilarityError(f"field 'duplicate_of': issue {other} is a duplicate of {issue}")


def _withdraw_current(study: Study, issue: Issue, user: Any) -> None:
    DuplicateMark.objects.current().filter(study=study, issue=issue).update(
        withdrawn_at=timezone.now(),
        withdrawn_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def withdraw_mark(*, study: Study, mark_id: Any, user: Any = None) -> DuplicateMark:
    """Undo a current mark (kept as history, withdrawn by whom and when)."""
    try:
        mark = DuplicateMark.objects.select_for_update().get(pk=int(mark_id), study=study)
    except (TypeError, ValueError, DuplicateMark.DoesNotExist):
        raise SimilarityError(f"field 'mark': no mark {mark_id!r} in this study") from None
    if mark.withdrawn_at is not None:
        raise SimilarityError(f"field 'mark': mark {mark.pk} was already undone")
    mark.withdrawn_at = timezone.now()
    mark.withdrawn_by = user if getattr(user, "is_authenticated", False) else None
    mark.save(update_fields=["withdrawn_at", "withdrawn_by"])
    return mark


# --- similar issues -------------------------------------------------------------------------
def sees_all_similar(user: Any) -> bool:
    """Staff and the owners and adjudicators of a study see every similar issue; the others
    (annotators) only those they labeled themselves."""
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_staff:
        return True
    roles = (Membership.Role.OWNER, Membership.Role.ADJUDICATOR)
    return Membership.objects.filter(user=user, role__in=roles).exists()


def similar_issues(*, issue: Issue | int, user: Any) -> list[dict[str, Any]]:
    """The issue's most similar issues for `user`: [{"issue", "score", "labels"}] best first,
    `labels` the user's own submitted labels on it ({facet name: [category names]}). An
    annotator gets only the issues they labeled themselves; nobody gets another's labels."""
    issue_id = issue.pk if isinstance(issue, Issue) else int(issue)
    row = SimilarIssues.objects.filter(issue_id=issue_id).first()
    if row is None:
        return []
    scores = {int(pk): float(score) for pk, score in row.neighbours}
    own = _own_labels(user, scores)
    shown = list(scores) if sees_all_similar(user) else [pk for pk in scores if pk in own]
    issues = Issue.objects.select_related("repository").in_bulk(shown)
    return [
        {"issue": issues[pk], "score": scores[pk], "labels": own.get(pk, {})}
        for pk in shown
        if pk in issues
    ]


def _own_labels(user: Any, issue_ids: Iterable[int]) -> dict[int, dict[str, list[str]]]:
    """{issue id: {facet name: [category names]}} of the user's own submitted annotations."""
    if not getattr(user, "is_authenticated", False):
        return {}
    submitted = Annotation.objects.filter(
        assignment__annotator=user,
        assignment__item__issue_id__in=list(issue_ids),
        status=Annotation.Status.SUBMITTED,
    )
    found: dict[int, dict[str, list[str]]] = {}
    for pk in submitted.values_list("assignment__item__issue_id", flat=True):
        found.setdefault(pk, {})
    labels = AnnotationLabel.objects.filter(annotation__in=submitted).values_list(
        "annotation__assignment__item__issue_id", "facet__name", "category__name"
    )
    for pk, facet, category in labels.order_by("facet__order", "category__order"):
        names = found.setdefault(pk, {}).setdefault(facet, [])
        if category not in names:
            names.append(category)
    return found


def latest_pass() -> DuplicatePass | None:
    return DuplicatePass.objects.select_related("repository").order_by("-created_at").first()


def group_queryset(*, repository: Repository | None = None, study: Study | None = None) -> Any:
    """Groups, largest similarity first; with `repository`, those with an issue in it; with
    `study`, those with an issue in the study."""
    groups = DuplicateGroup.objects.all()
    members = DuplicateMember.objects.all()
    if repository is not None:
        members = members.filter(issue__repository=repository)
    if study is not None:
        members = members.filter(issue__study_items__study=study)
    if repository is not None or study is not None:
        groups = groups.filter(pk__in=members.values("group_id"))
    return groups.order_by("-max_similarity", "pk")


def marks_by_issue(study: Study, issue_ids: Iterable[int]) -> dict[int, DuplicateMark]:
    current = DuplicateMark.objects.current().filter(study=study, issue_id__in=list(issue_ids))
    related = current.select_related("decided_by", "duplicate_of__repository")  # the pages name it
    return {m.issue_id: m for m in related}
