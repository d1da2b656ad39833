"""Handing items to annotators: next item (breadth first, SKIP LOCKED), skip, timeouts."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotator.sql import Columns, insert, lock_clause, table

from ..errors import StudyError
from ..models import Assignment, Item, Membership, Study

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
    so two tabs of one annotator cannot take two items at once.
    """
    _lock_annotator(study.pk, annotator.pk)
    current = _open_assignment(study.pk, annotator.pk)
    if current is not None:
        return current
    item_id = _free_item(study.pk, annotator.pk)
    if item_id is None:
        return None
    assignment = insert(Assignment(item_id=item_id, annotator=annotator))
    item = table(Item)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {item} SET active_count = active_count + 1 WHERE id = %s", [item_id]
        )
    return assignment


# "Next item" is written in SQL: it runs on every submit, and the ORM spent longer composing
# its statements than PostgreSQL took to answer them. SQLite (the demo) has no row locks.


def _lock_annotator(study_id: int, annotator_id: int) -> None:
    membership = table(Membership)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {membership} WHERE study_id = %s AND user_id = %s AND role = %s"
            + lock_clause(""),
            [study_id, annotator_id, Membership.Role.ANNOTATOR],
        )
        if cursor.fetchone() is None:
            raise StudyError("only the study's annotators are given items to label")


_OPEN = Columns(Assignment, "a")


def _open_assignment(study_id: int, annotator_id: int) -> Assignment | None:
    """The annotator's oldest assignment in progress in the study."""
    item = table(Item)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_OPEN.sql()} FROM {_OPEN.table()} JOIN {item} i ON i.id = a.item_id"
            " WHERE i.study_id = %s AND a.annotator_id = %s AND a.status = %s"
            " ORDER BY a.assigned_at, a.id LIMIT 1",
            [study_id, annotator_id, Status.ASSIGNED],
        )
        row = cursor.fetchone()
    return _OPEN.build(row, 0) if row else None


def _free_item(study_id: int, annotator_id: int) -> int | None:
    """The id of the next item for the annotator, its row locked (SKIP LOCKED), or None. The
    partial index item_pool holds exactly the rows of this order with a free slot, so the scan
    stops at the first item the annotator was never given. Rounds are numbered in creation
    order, so round_id orders them without a join."""
    item = table(Item)
    assignment = table(Assignment)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT i.id FROM {item} i"
            " WHERE i.study_id = %s AND i.active_count < i.quota AND NOT EXISTS"
            f" (SELECT 1 FROM {assignment} a WHERE a.item_id = i.id AND a.annotator_id = %s)"
            " ORDER BY i.round_id, i.submitted_count DESC, i.active_count DESC, i.position"
            " LIMIT 1" + lock_clause("i", skip_locked=True),
            [study_id, annotator_id],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else None


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
    its annotator may write to it. The lock reads one row, without joins: the caller's object
    keeps the item and study it was loaded with (they are loaded here if it was not)."""
    assignments = table(Assignment)
    with connection.cursor() as cursor:  # in SQL, as the reads of "next item" above
        cursor.execute(
            f"SELECT annotator_id, status FROM {assignments} WHERE id = %s" + lock_clause(""),
            [assignment.pk],
        )
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist(f"assignment {assignment.pk} no longer exists")
    annotator_id, status = row
    if annotator_id != user.pk:
        raise StudyError("this item is assigned to someone else")
    if not Assignment.item.is_cached(assignment):  # type: ignore[attr-defined]
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
