"""Labeling an item: autosaved drafts, validated submits, proposals of new categories."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator.adjudication.services import decide_item_if_complete, record_change
from annotator.agreement.services import on_round_progress
from taxonomy_app.errors import CodebookError
from taxonomy_app.models import Category, Facet, Proposal
from taxonomy_app.services import create_proposal

from .. import sql
from ..codebook import CodebookSchema, codebook_schema
from ..errors import LabelErrors, StudyError, UnsureError
from ..models import Annotation, Assignment, Item
from .assignment import lock_assignment, reclaim_if_expired
from .studies import close_round_when_complete

Status = Assignment.Status
# Labels by facet id: the category ids chosen in it.
Labels = Mapping[int, Sequence[int]]
MAX_SECONDS = 24 * 3600


@transaction.atomic
def save_draft(
    *,
    assignment: Assignment,
    user: Any,
    labels: Labels,
    notes: str = "",
    seconds_spent: int = 0,
    unsure: Iterable[str] = (),
) -> Annotation:
    """Autosave the annotator's work in progress. Lenient: labels that do not fit the codebook
    are dropped, required facets may be empty. `unsure`: keys of the facets the annotator marks
    unsure (chosen or not); a key that is no facet of the codebook is refused (UnsureError) and
    nothing is saved. Counts as activity for the timeout."""
    assignment = lock_assignment(assignment, user)
    if assignment.status in {Status.SKIPPED, Status.SUBMITTED}:
        raise StudyError(f"this item is {assignment.get_status_display()}; drafts are not saved")
    schema = codebook_schema(assignment.item.study.codebook_version)
    keys = _unsure_keys(schema, assignment, unsure)
    reclaim_if_expired(assignment)
    rows, _ = schema.validate_labels(labels, require=False)
    annotation = _write(assignment, rows, notes, seconds_spent, Annotation.Status.DRAFT, keys)
    Assignment.objects.filter(pk=assignment.pk).update(touched_at=timezone.now())
    return annotation


@transaction.atomic
def submit_annotation(
    *,
    assignment: Assignment,
    user: Any,
    labels: Labels,
    notes: str = "",
    seconds_spent: int = 0,
    unsure: Iterable[str] = (),
) -> Annotation:
    """Submit the labels of an assignment. Every required facet needs a label, a single-choice
    facet at most one, and every category must be an active one of the study's codebook
    version (else LabelErrors, by facet key, and nothing is written); every key of `unsure`
    (the facets the annotator marks unsure) a facet of it (else UnsureError, nothing written).
    Submitting again updates the same annotation, until the item is released for discussion:
    from then on a submit is a revision beside the blind labels (`_revise`). The item's
    submitted counter is bounded by its quota in the database."""
    assignment = lock_assignment(assignment, user)
    if assignment.status == Status.SKIPPED:
        raise StudyError("this item was skipped")
    schema = codebook_schema(assignment.item.study.codebook_version)
    rows, errors = schema.validate_labels(labels, require=True)
    if errors:
        raise LabelErrors(errors)
    keys = _unsure_keys(schema, assignment, unsure)
    reclaim_if_expired(assignment)
    first_submit = assignment.status != Status.SUBMITTED
    if not first_submit and _released(assignment.item_id):
        return _revise(assignment, user, schema.codes(rows), keys, notes)
    annotation = _write(assignment, rows, notes, seconds_spent, Annotation.Status.SUBMITTED, keys)
    # A re-submit may change an automatic decision: the rules run again on every one of them.
    completes = not first_submit
    if first_submit:
        sql.mark_submitted(assignment.pk, timezone.now())
        completes, round_id, screening = sql.count_submit_in(assignment.item_id)
        if screening:
            after_screening_decision(round_id)
        if completes:
            close_round_when_complete(item_id=assignment.item_id)
            on_round_progress(item_id=assignment.item_id)  # a complete round gets its run
    # The item's history, and its decision once all k annotations are in (adjudication).
    record_change(annotation=annotation, user=user, labels=schema.codes(rows), first=first_submit)
    if completes:
        decide_item_if_complete(item=assignment.item, schema=schema)
    return annotation


def after_screening_decision(round_id: int) -> None:
    """Tell the screening app, once the submit commits, that a screening round has one more
    decision (it may start a retrain: STUDIES_SCREENING_DECISION_HOOK, a dotted path, so that
    studies imports no app that imports it)."""
    hook = import_string(settings.STUDIES_SCREENING_DECISION_HOOK)
    transaction.on_commit(lambda: hook(round_id=round_id), robust=True)


def _released(item_id: int) -> bool:
    """The item is open for discussion (a re-submit only: a first submit is blind)."""
    return Item.objects.filter(pk=item_id, released_at__isnull=False).exists()


def _revise(
    assignment: Assignment,
    user: Any,
    labels: dict[str, list[str]],
    unsure: list[str],
    notes: str,
) -> Annotation:
    """A submit after the item was released for discussion: the annotator has read the others'
    labels, so the blind labels stay as they are (agreement, the queue, the decision and the
    exports keep reading them) and the new labels are the annotation's revision, recorded in
    the item's history. The post-discussion agreement reads the revisions."""
    annotation = Annotation.objects.select_for_update().get(assignment=assignment)
    count = (annotation.revision or {}).get("count", 0)
    annotation.revision = {
        "labels": labels,
        "unsure": unsure,
        "notes": notes.strip(),
        "at": timezone.now().isoformat(),
        "count": count + 1,
    }
    annotation.save(update_fields=["revision", "updated_at"])
    annotation.assignment = assignment
    record_change(annotation=annotation, user=user)
    return annotation


def _unsure_keys(
    schema: CodebookSchema, assignment: Assignment, unsure: Iterable[str]
) -> list[str]:
    """The facet keys marked unsure, in the codebook's order; UnsureError naming the keys that
    are no facet of the study's codebook version."""
    keys, unknown = schema.unsure_keys([unsure] if isinstance(unsure, str) else unsure)
    if unknown:
        version = assignment.item.study.codebook_version
        raise UnsureError(
            f"field 'unsure': no facet {', '.join(map(repr, unknown))} in codebook version "
            f"{version.number} (facets: {', '.join(f.key for f in schema.facets)})"
        )
    return keys


def _write(
    assignment: Assignment,
    rows: list[tuple[int, int]],
    notes: str,
    seconds: int,
    status: str,
    unsure: list[str],
) -> Annotation:
    """Insert or update the assignment's annotation in one statement (INSERT … ON CONFLICT),
    then replace its labels. A draft keeps the time of an earlier submit, if any."""
    now = timezone.now()
    annotation = Annotation(
        assignment=assignment,
        codebook_version_id=assignment.item.study.codebook_version_id,
        status=status,
        notes=notes.strip(),
        seconds_spent=max(0, min(int(seconds), MAX_SECONDS)),
        unsure=unsure,
        created_at=now,
        updated_at=now,
        submitted_at=now if status == Annotation.Status.SUBMITTED else None,
    )
    update = ["codebook_version", "status", "notes", "seconds_spent", "unsure", "updated_at"]
    if status == Annotation.Status.SUBMITTED:
        update.append("submitted_at")
    annotation = sql.upsert_annotation(annotation, update=update)
    sql.replace_annotation_labels(annotation.pk, rows)
    return annotation


@transaction.atomic
def propose_category(
    *,
    assignment: Assignment,
    user: Any,
    facet_id: int,
    name: str,
    rationale: str = "",
    parent_id: int | None = None,
) -> Proposal:
    """Propose a new category of a facet while labeling (open coding), through taxonomy_app's
    service; the proposal names the issue that prompted it."""
    if assignment.annotator_id != user.pk:
        raise StudyError("this item is assigned to someone else")
    study = assignment.item.study
    facet = Facet.objects.filter(pk=facet_id, version=study.codebook_version_id).first()
    if facet is None:
        raise StudyError("field 'facet': choose a facet of the study's codebook")
    parent = Category.objects.filter(pk=parent_id, facet=facet).first() if parent_id else None
    try:
        return create_proposal(
            facet=facet,
            name=name,
            rationale=rationale,
            parent=parent,
            user=user,
            issue=assignment.item.issue.github_url,
        )
    except CodebookError as error:
        raise StudyError(str(error)) from error
