"""Handing items to annotators: next item (breadth first, SKIP LOCKED), skip, timeouts."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .. import sql
from ..errors import StudyError
from ..models import Assignment, Item, Study

Status = Assignment.Status


@transaction.atomic
def next_assignment(*, study: Study, annotator: Any) -> Assignment | None:
    """The annotator's open assignment in `study`, or a new one on the next item; None when no
    item needs them.

    The next item is the first, by round, that still has a free slot and was never given to
    this annotator, preferring items with the most submitted and live assignments (so items
    complete breadth first, and agreement can be computed early), then the seeded order. The
    item row is taken with SELECT … FOR UPDATE SKIP LOCKED: concurrent requests each get a
    different item instead of queueing on one. The annotator's membership row is locked first,
    so two tabs of one annotator cannot take two items at once. (Statements: studies/sql.py.)

    In a ranked screening round (ScreeningRank rows: a prioritised round with a trained model,
    or an audit drawn), a fresh item gives way to the round's best-ranked free item, and the
    assignment keeps the rank it was handed out at; a half-screened item still goes first.
    """
    if not sql.lock_annotator(study.pk, annotator.pk):
        raise StudyError("only the study's annotators are given items to label")
    current = sql.open_assignment(study.pk, annotator.pk)
    if current is not None:
        return current
    slot = sql.free_slot(study.pk, annotator.pk)
    if slot is None:
        return None
    item_id, rank = slot.item_id, slot.rank
    if slot.ranked and slot.active_count == 0:
        # The slot's own row stays locked to the commit: others skip it for a moment.
        item_id, rank = sql.top_ranked_item(slot.round_id, annotator.pk) or (item_id, rank)
    assignment = sql.create_assignment(item_id, annotator.pk, rank=rank)
    assignment.annotator = annotator
    return assignment


@transaction.atomic
def skip_assignment(*, assignment: Assignment, user: Any, reason: str) -> Assignment:
    """Give an item back with a reason; its slot returns to the pool for someone else, and it
    is never offered to this annotator again. A draft is kept."""
    reason = reason.strip()
    if not reason:
        raise StudyError("field 'reason': say why you skip this item")
    assignment = lock_assignment(assignment, user)
    if assignment.status == Status.SUBMITTED:
        raise StudyError("this item is submitted already")
    if assignment.status == Status.ASSIGNED:
        Item.objects.filter(pk=assignment.item_id).update(active_count=F("active_count") - 1)
    assignment.status, assignment.skip_reason = Status.SKIPPED, reason[:300]
    assignment.finished_at = timezone.now()
    assignment.save(update_fields=["status", "skip_reason", "finished_at"])
    return assignment


def lock_assignment(assignment: Assignment, user: Any) -> Assignment:
    """`assignment` with its row locked for update and its status re-read under the lock; only
    its annotator may write to it, and only while its round is open (a closed round's labels
    never change). The lock reads one row and its round's state: the caller's object keeps the
    item and study it was loaded with (they are loaded here if it was not)."""
    row = sql.lock_assignment_row(assignment.pk)
    if row is None:
        raise Assignment.DoesNotExist(f"assignment {assignment.pk} no longer exists")
    annotator_id, status, closed = row
    if annotator_id != user.pk:
        raise StudyError("this item is assigned to someone else")
    if closed:
        raise StudyError("this item's round is closed: its labels no longer change")
    if not Assignment.item.is_cached(assignment):
        assignment = Assignment.objects.select_related(
            "item__study__codebook_version", "item__issue"
        ).get(pk=assignment.pk)
    assignment.annotator, assignment.status = user, status
    return assignment


def reclaim_if_expired(assignment: Assignment) -> None:
    """Take a timed-out assignment back, if its slot is still free."""
    if assignment.status != Status.EXPIRED:
        return
    taken = Item.objects.filter(pk=assignment.item_id, active_count__lt=F("quota")).update(
        active_count=F("active_count") + 1
    )
    if not taken:
        raise StudyError(
            "this item timed out and went to another annotator; your draft is kept, "
            "but it can no longer be submitted"
        )
    assignment.status = Status.ASSIGNED
    assignment.save(update_fields=["status"])


def release_stale_assignments(*, now: datetime | None = None, minutes: int | None = None) -> int:
    """Return assignments untouched for `minutes` (STUDIES_ASSIGNMENT_TIMEOUT_MINUTES) to the
    pool: they become "timed out" and their item's slot is free again. Returns how many."""
    minutes = settings.STUDIES_ASSIGNMENT_TIMEOUT_MINUTES if minutes is None else minutes
    if minutes <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(minutes=minutes)
    released = 0
    while batch := _release_batch(cutoff):
        released += batch
    return released


@transaction.atomic
def _release_batch(cutoff: datetime, size: int = 500) -> int:
    stale = list(
        Assignment.objects.select_for_update(skip_locked=True)
        .filter(status=Status.ASSIGNED, touched_at__lt=cutoff)
        .order_by("pk")
        .values_list("pk", "item_id")[:size]
    )
    if not stale:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in stale]).update(status=Status.EXPIRED)
    for item_id, count in sorted(Counter(item for _, item in stale).items()):
        Item.objects.filter(pk=item_id).update(active_count=F("active_count") - count)
    return len(stale)
