"""What a screening round's screeners decided, item by item (read-only).

An item is *screened* once all its k screeners submitted (its quota is reached); it counts as
*relevant* when its decision (adjudication) has the round's relevant category, or, before a
decision exists, when any screener chose it: a disagreement stays in until adjudicated, as
screening for systematic reviews does. For training the model, an item with at least one
submitted screening counts already (labelled the same way).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from django.db import connection
from django.db.models import F, Max

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.studies.models import Annotation, AnnotationLabel, Item, Round

from .models import ScreeningPlan

SUBMITTED = Annotation.Status.SUBMITTED


class ItemState(NamedTuple):
    """An item's screening state. A named tuple, not a frozen dataclass: a round's states are
    built by the thousand per panel view (5,000 screened), and a frozen dataclass's
    constructor cost 3 µs each on a loaded machine."""

    item_id: int
    issue_id: int
    submitted: int
    complete: bool
    relevant: bool
    completed_at: datetime | None


def round_items(plan: ScreeningPlan) -> list[ItemState]:
    """Every item of the plan's round, in item id order, with its screening state."""
    return _states(plan, screened_only=False)


def screened_items(plan: ScreeningPlan) -> list[ItemState]:
    """The round's screened items (all k screeners in), in item id order, with the states
    `round_items` gives them. The panel's figures need these and a count of the rest, not a
    row per candidate: reading every item of a round of 100,000 candidates took the panel
    over a second. On PostgreSQL one statement reads them (sql.screened_rows); SQLite (the
    demo) takes the ORM's path, which the tests hold equal."""
    if connection.vendor != "postgresql":
        return _states(plan, screened_only=True)
    from .sql import screened_rows

    rows = screened_rows(plan.round_id, plan.relevant_category_id)
    return [ItemState(pk, issue, n, True, relevant, at) for pk, issue, n, at, relevant in rows]


def _states(plan: ScreeningPlan, *, screened_only: bool) -> list[ItemState]:
    round_id, category = plan.round_id, plan.relevant_category_id
    items = Item.objects.filter(round_id=round_id)
    if screened_only:
        items = items.filter(submitted_count__gte=F("quota"))
    # The sets below read the round's submitted screenings, decisions and their labels: rows
    # of items someone screened, never of the untouched candidates.
    chosen = set(
        AnnotationLabel.objects.filter(
            annotation__assignment__item__round_id=round_id,
            annotation__status=SUBMITTED,
            category_id=category,
        ).values_list("annotation__assignment__item_id", flat=True)
    )
    decided = set(
        Decision.objects.filter(item__round_id=round_id).values_list("item_id", flat=True)
    )
    decided_relevant = set(
        DecisionLabel.objects.filter(
            decision__item__round_id=round_id, category_id=category
        ).values_list("decision__item_id", flat=True)
    )
    finished = dict(
        Annotation.objects.filter(assignment__item__round_id=round_id, status=SUBMITTED)
        .values("assignment__item_id")
        .annotate(at=Max("submitted_at"))
        .values_list("assignment__item_id", "at")
    )
    rows = items.order_by("pk").values_list("pk", "issue_id", "submitted_count", "quota")
    return [
        ItemState(
            item_id=pk,
            issue_id=issue,
            submitted=submitted,
            complete=submitted >= quota,
            relevant=(pk in decided_relevant) if pk in decided else pk in chosen,
            completed_at=finished.get(pk) if submitted >= quota else None,
        )
        for pk, issue, submitted, quota in rows
    ]


def candidate_count(round_id: int) -> int:
    """The round's items: screened or not."""
    return Item.objects.filter(round_id=round_id).count()


def decision_count(round: Round | int) -> int:
    """Submitted screenings in the round (each screener's decision on an item)."""
    round_id = round if isinstance(round, int) else round.pk
    return Annotation.objects.filter(assignment__item__round_id=round_id, status=SUBMITTED).count()


def has_both_classes(plan: ScreeningPlan) -> bool:
    """A submitted screening that chose the relevant category and one that did not: the model
    can be trained (before, the order stays the seeded random one). Two index probes, asked
    after each decision until the round's first model exists."""
    submitted = Annotation.objects.filter(
        assignment__item__round_id=plan.round_id, status=SUBMITTED
    )
    category = plan.relevant_category_id
    return (
        submitted.filter(labels__category_id=category).exists()
        and submitted.exclude(labels__category_id=category).exists()
    )


def completion_order(states: list[ItemState]) -> list[ItemState]:
    """The screened items in the order their last screening was submitted."""
    done = [s for s in states if s.complete and s.completed_at is not None]
    return sorted(done, key=lambda s: (s.completed_at, s.item_id))


def incomplete_items(round_id: int) -> list[int]:
    """Ids of the round's items still short of their quota, in id order."""
    return list(
        Item.objects.filter(round_id=round_id, submitted_count__lt=F("quota"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
