"""Labeling an item: autosaved drafts, validated submits, proposals of new categories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotator.adjudication.services import decide_item_if_complete, record_change
from annotator.agreement.services import on_round_progress
from annotator.sql import insert, replace_rows, table
from taxonomy_app.errors import CodebookError
from taxonomy_app.models import Category, Facet, Proposal
from taxonomy_app.services import create_proposal

from ..codebook import CodebookSchema, codebook_schema
from ..errors import LabelErrors, StudyError
from ..models import Annotation, AnnotationLabel, Assignment, Item
from .assignment import lock_assignment, reclaim_if_expired

Status = Assignment.Status
# Labels by facet id: the category ids chosen in it.
Labels = Mapping[int, Sequence[int]]
MAX_SECONDS = 24 * 3600


@transaction.atomic
def save_draft(
    *, assignment: Assignment, user: Any, labels: Labels, notes: str = "", seconds_spent: int = 0
) -> Annotation:
    """Autosave the annotator's work in progress. Lenient: labels that do not fit the codebook
    are dropped, required facets may be empty. Counts as activity for the timeout."""
    assignment = lock_assignment(assignment, user)
    if assignment.status in {Status.SKIPPED, Status.SUBMITTED}:
        raise StudyError(f"this item is {assignment.get_status_display()}; drafts are not saved")
    reclaim_if_expired(assignment)
    schema = codebook_schema(assignment.item.study.codebook_version)
    rows, _ = validate_labels(schema, labels, require=False)
    annotation = _write(assignment, rows, notes, seconds_spent, Annotation.Status.DRAFT)
    Assignment.objects.filter(pk=assignment.pk).update(touched_at=timezone.now())
    return annotation


@transaction.atomic
def submit_annotation(
    *, assignment: Assignment, user: Any, labels: Labels, notes: str = "", seconds_spent: int = 0
) -> Annotation:
    """Submit the labels of an assignment. Every required facet needs a label, a single-choice
    facet at most one, and every category must be an active one of the study's codebook
    version (else LabelErrors, by facet key, and nothing is written). Submitting again updates
    the same annotation. The item's submitted counter is bounded by its quota in the database."""
    assignment = lock_assignment(assignment, user)
    if assignment.status == Status.SKIPPED:
        raise StudyError("this item was skipped")
    schema = codebook_schema(assignment.item.study.codebook_version)
    rows, errors = validate_labels(schema, labels, require=True)
    if errors:
        raise LabelErrors(errors)
    reclaim_if_expired(assignment)
    first_submit = assignment.status != Status.SUBMITTED
    annotation = _write(assignment, rows, notes, seconds_spent, Annotation.Status.SUBMITTED)
    # A re-submit may change an automatic decision: the rules run again on every one of them.
    completes = not first_submit
    if first_submit:
        now = timezone.now()
        assignments = table(Assignment)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {assignments} SET status = %s, finished_at = %s, touched_at = %s"
                " WHERE id = %s",
                [Status.SUBMITTED, now, now, assignment.pk],
            )
        completes = _count_submit(assignment.item_id)
        if completes:
            on_round_progress(item_id=assignment.item_id)  # a complete round gets its run
    # The item's history, and its decision once all k annotations are in (adjudication).
    record_change(annotation=annotation, user=user, labels=schema.codes(rows), first=first_submit)
    if completes:
        decide_item_if_complete(item=assignment.item, schema=schema)
    return annotation


def _count_submit(item_id: int) -> bool:
    """Count a first submit on its item; True when that makes the item complete. One statement
    (the ORM's update cannot return the new count): the item's row lock it takes is held to
    the end of the submit, so the answer stays true, and an item still waiting for annotations
    costs no further query for its decision."""
    item = table(Item)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {item} SET submitted_count = submitted_count + 1 WHERE id = %s"
            " RETURNING submitted_count >= quota",
            [item_id],
        )
        (complete,) = cursor.fetchone()
    return bool(complete)


def validate_labels(
    schema: CodebookSchema, labels: Labels, *, require: bool
) -> tuple[list[tuple[int, int]], dict[str, str]]:
    """(facet id, category id) rows that fit the codebook, and errors by facet key."""
    rows: list[tuple[int, int]] = []
    errors: dict[str, str] = {}
    for facet in schema.facets:
        chosen = list(dict.fromkeys(int(c) for c in labels.get(facet.id, ())))
        valid = [c for c in chosen if schema.facet_of.get(c) == facet.id]
        if len(valid) < len(chosen):
            errors[facet.key] = "choose among this facet's categories"
        elif not facet.is_multi and len(valid) > 1:
            errors[facet.key] = "choose one category only"
        elif require and facet.required and not valid:
            errors[facet.key] = "required: choose a category"
        rows.extend((facet.id, c) for c in (valid if facet.is_multi else valid[:1]))
    unknown = set(labels) - {f.id for f in schema.facets}
    if unknown:
        errors["facets"] = f"unknown facet ids {sorted(unknown)}"
    return rows, errors


def _write(
    assignment: Assignment, rows: list[tuple[int, int]], notes: str, seconds: int, status: str
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
        created_at=now,
        updated_at=now,
        submitted_at=now if status == Annotation.Status.SUBMITTED else None,
    )
    update = ["codebook_version", "status", "notes", "seconds_spent", "updated_at"]
    if status == Annotation.Status.SUBMITTED:
        update.append("submitted_at")
    # Hand-written statements: they run on every draft save and submit, and compiling them in
    # the ORM cost more than running them.
    annotation = insert(annotation, on_conflict=["assignment"], update=update)
    replace_rows(AnnotationLabel, "annotation_id", annotation.pk, ["facet_id", "category_id"], rows)
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
            facet=facet, name=name, rationale=rationale, parent=parent, user=user,
            issue=assignment.item.issue.github_url,
        )  # fmt: skip
    except CodebookError as error:
        raise StudyError(str(error)) from error
