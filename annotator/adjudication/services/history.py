"""The audit trail: every change to an annotation or a decision, as before/after snapshots.

Called by the services that write (studies' submit path, this app's decisions), never from a
signal: `record_change` snapshots the current state and compares it with the last recorded one,
so a save that changed nothing records nothing and "before" needs no read ahead of the write.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from annotator.sql import one_or_none
from annotator.studies.models import Annotation, AnnotationLabel, Item

from .. import sql
from ..models import Change, Decision, DecisionLabel

Snapshot = dict[str, Any]


class Read(Enum):
    """`record_change(decision=Read.IT)`: read the item's decision (the default)."""

    IT = "read it"


def record_change(
    *,
    user: Any,
    annotation: Annotation | None = None,
    item: Item | None = None,
    labels: dict[str, list[str]] | None = None,
    decision: Decision | Literal[Read.IT] | None = Read.IT,
    first: bool = False,
) -> Change | None:
    """Record the current state of `annotation`, or (given `item` alone) of the item's decision
    (None after it was withdrawn), if it differs from the last recorded state. Returns the new
    Change, or None when nothing changed. Call it inside the writing transaction.

    What the writer has at hand spares reading it back (this runs inside every submit):
    `labels` ({facet key: sorted codes}, as just written), `decision` (the item's decision as
    just written, None once withdrawn) and `first` (nothing was ever recorded for this
    annotation: its first submit)."""
    after: Snapshot | None
    if annotation is not None:
        item_id = annotation.assignment.item_id
        after = annotation_snapshot(annotation, labels=labels)
        last = Change.objects.filter(annotation=annotation)
        subject = Change.Subject.ANNOTATION
    elif item is not None:
        item_id = item.pk
        current: Decision | None
        if isinstance(decision, Read):
            current, labels = one_or_none(Decision.objects.filter(item=item)), None
        else:
            current = decision
        after = decision_snapshot(current, labels=labels)
        last = Change.objects.filter(item=item, subject=Change.Subject.DECISION)
        subject = Change.Subject.DECISION
    else:
        raise TypeError("record_change needs annotation= or item=")
    previous = None
    if not first:
        previous = last.order_by("-at", "-pk").values_list("after", flat=True).first()
    if previous == after:
        return None
    return sql.insert_change(
        Change(
            item_id=item_id,
            subject=subject,
            annotation=annotation,
            user=user if getattr(user, "pk", None) else None,
            before=previous,
            after=after,
        )
    )


def annotation_snapshot(
    annotation: Annotation, *, labels: dict[str, list[str]] | None = None
) -> Snapshot:
    if labels is None:
        rows = AnnotationLabel.objects.filter(annotation=annotation)
        labels = _codes(rows.values_list("facet__key", "category__code"))
    snapshot = {
        "annotator": annotation.assignment.annotator.get_username(),
        "status": annotation.status,
        "labels": labels,
        "notes": annotation.notes,
    }
    if annotation.unsure:  # only when marked: earlier snapshots, without the key, stay equal
        snapshot["unsure"] = list(annotation.unsure)
    if annotation.revision:  # after discussion, beside the blind labels (likewise)
        snapshot["revision"] = {
            k: annotation.revision[k]
            for k in ("labels", "unsure", "notes")
            if k in annotation.revision
        }
    return snapshot


def decision_snapshot(
    decision: Decision | None, *, labels: dict[str, list[str]] | None = None
) -> Snapshot | None:
    if decision is None:
        return None
    if labels is None:
        rows = DecisionLabel.objects.filter(decision=decision)
        labels = _codes(rows.values_list("facet__key", "category__code"))
    snapshot: Snapshot = {
        "source": decision.source,
        "reason": decision.reason,
        "comment": decision.comment,
        "labels": labels,
    }
    if decision.confidence is not None:  # only when said: earlier snapshots stay equal
        snapshot["confidence"] = decision.get_confidence_display()
    return snapshot


def _codes(rows: Any) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for key, code in sorted(rows):
        labels.setdefault(key, []).append(code)
    return labels


def item_history(*, item: Item) -> list[Change]:
    """The item's changes, oldest first, with who made each."""
    return list(Change.objects.filter(item=item).select_related("user").order_by("at", "pk"))
