"""Progress figures for the annotate page, the dashboard and the API (read-only, one or two
aggregate queries each, whatever the number of items)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Avg, Count, Sum

from .. import sql
from ..models import Annotation, Assignment, Item, Membership, Round, Study

Status = Assignment.Status


@dataclass
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0


@dataclass(frozen=True)
class Share:
    """An annotator's part of a round: what they submitted, over what the round needs of each
    of the study's annotators (its items' quotas spread evenly over them, at most one per item;
    every item in a calibration round). The pool is first come, first served: a fast annotator
    may do more than their share, a slow one less."""

    done: int
    expected: int

    @property
    def left(self) -> int:
        return max(0, self.expected - self.done)

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.done / self.expected)) if self.expected else 0


def annotator_share(*, round_id: int, annotator: Any, max_age: int = 0) -> Share:
    """The annotator's Share of a round. Their own count is exact (one statement); the round's
    size (items, quotas, annotators: a scan of the round's items) may be up to `max_age`
    seconds old from the cache, as on the annotate page."""
    done, _ = sql.annotator_round_counts(round_id, getattr(annotator, "pk", annotator))
    items, needed, annotators = _round_size(round_id, max_age)
    expected = min(items, -(-needed // annotators)) if annotators else 0
    return Share(done=done, expected=expected)


def _round_size(round_id: int, max_age: int) -> tuple[int, int, int]:
    """(items, annotations needed, annotators of the study) of a round."""
    key = f"studies:round-size:{round_id}"
    if max_age > 0 and (cached := cache.get(key)) is not None:
        return cast(tuple[int, int, int], cached)
    counts = Item.objects.filter(round_id=round_id).aggregate(
        items=Count("pk"), needed=Sum("quota")
    )
    annotators = Membership.objects.filter(
        study__rounds=round_id, role=Membership.Role.ANNOTATOR
    ).count()
    size = (counts["items"] or 0, counts["needed"] or 0, annotators)
    if max_age > 0:
        cache.set(key, size, max_age)
    return size


def round_progress(*, round_id: int, max_age: int = 0) -> Progress:
    """Submitted annotations of a round over the annotations it needs (sum of quotas).

    `max_age` > 0 accepts a figure up to that many seconds old from the cache: the annotate
    page shows it on every item, and the sum reads every item of the round."""
    if max_age > 0:
        key = f"studies:round-progress:{round_id}"
        cached = cache.get(key)
        if cached is None:
            cached = round_progress(round_id=round_id)
            cache.set(key, cached, max_age)
        return cast(Progress, cached)
    counts = Item.objects.filter(round_id=round_id).aggregate(
        done=Sum("submitted_count"), total=Sum("quota")
    )
    return Progress(done=counts["done"] or 0, total=counts["total"] or 0)


@dataclass
class AnnotatorRow:
    username: str
    submitted: int = 0
    skipped: int = 0
    in_progress: int = 0
    timed_out: int = 0
    avg_seconds: float | None = None


@dataclass
class RoundRow:
    round: Round
    unassigned: int = 0
    in_progress: int = 0
    complete: int = 0
    annotators: list[AnnotatorRow] = field(default_factory=list)

    @property
    def items(self) -> int:
        return self.unassigned + self.in_progress + self.complete

    def _share(self, count: int) -> float:
        return round(100 * count / self.items, 2) if self.items else 0

    # Percent widths and offsets of the chart's stacked bar.
    @property
    def complete_share(self) -> float:
        return self._share(self.complete)

    @property
    def in_progress_share(self) -> float:
        return self._share(self.in_progress)

    @property
    def unassigned_share(self) -> float:
        return self._share(self.unassigned)

    @property
    def unassigned_offset(self) -> float:
        return round(self.complete_share + self.in_progress_share, 2)


def study_dashboard(*, study: Study) -> list[RoundRow]:
    """Per round: items by state, and per annotator done, skipped, in progress, timed out and
    the mean seconds per submitted item. Four queries, whatever the study's size."""
    rows = {r.pk: RoundRow(round=r) for r in study.rounds.all()}
    # "state" is with_state()'s annotation, which the stubs' plugin cannot see through a method
    states = Item.objects.filter(study=study).with_state().values("round_id", "state")  # type: ignore[misc]
    for row in states.annotate(n=Count("pk")).order_by():
        setattr(rows[row["round_id"]], row["state"].replace(" ", "_"), row["n"])
    _fill_annotators(study, rows)
    return list(rows.values())


def _fill_annotators(study: Study, rows: dict[int, RoundRow]) -> None:
    names = dict(
        get_user_model()
        .objects.filter(assignments__item__study=study)
        .values_list("pk", "username")
        .distinct()
    )
    seconds = {
        (row["assignment__item__round_id"], row["assignment__annotator_id"]): row["avg"]
        for row in Annotation.objects.filter(
            assignment__item__study=study, status=Annotation.Status.SUBMITTED
        )
        .values("assignment__item__round_id", "assignment__annotator_id")
        .annotate(avg=Avg("seconds_spent"))
        .order_by()
    }
    table: dict[tuple[int, int], AnnotatorRow] = {}
    for row in (
        Assignment.objects.filter(item__study=study)
        .values("item__round_id", "annotator_id", "status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        key = (row["item__round_id"], row["annotator_id"])
        entry = table.setdefault(key, AnnotatorRow(username=names.get(key[1], "?")))
        _count(entry, row["status"], row["n"])
    for (round_id, annotator_id), entry in sorted(table.items(), key=lambda kv: kv[1].username):
        entry.avg_seconds = seconds.get((round_id, annotator_id))
        rows[round_id].annotators.append(entry)


def _count(entry: AnnotatorRow, status: str, n: int) -> None:
    attribute = {
        Status.SUBMITTED: "submitted",
        Status.SKIPPED: "skipped",
        Status.ASSIGNED: "in_progress",
        Status.EXPIRED: "timed_out",
    }[Status(status)]
    setattr(entry, attribute, n)
