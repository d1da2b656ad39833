"""An item's discussion thread, under the blindness rule of the studies app."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotator.studies.models import Assignment, Item, Membership

from ..errors import AdjudicationError
from ..models import Comment

MAX_COMMENT = 10_000


def may_discuss(*, item: Item, user: Any, membership: Membership | None) -> bool:
    """Owners and adjudicators always; an annotator of the item once their own annotation is
    submitted and the owner has released the item (until then they must stay blind)."""
    if membership is None or membership.study_id != item.study_id:
        return False
    if membership.sees_all_labels:
        return True
    return item.released_at is not None and (
        Assignment.objects.filter(
            item=item, annotator=user, status=Assignment.Status.SUBMITTED
        ).exists()
    )


@transaction.atomic
def post_comment(*, item: Item, user: Any, membership: Membership | None, body: str) -> Comment:
    """Add a message to the item's thread (Markdown, rendered sanitized)."""
    if not may_discuss(item=item, user=user, membership=membership):
        raise AdjudicationError("the discussion opens once your labels are in and it is released")
    body = body.strip()
    if not body:
        raise AdjudicationError("field 'body': write a message")
    if len(body) > MAX_COMMENT:
        raise AdjudicationError(f"field 'body': at most {MAX_COMMENT} characters")
    return Comment.objects.create(item=item, author=user, body=body)
