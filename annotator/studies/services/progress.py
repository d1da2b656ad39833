"""Progress figures for the annotate page, the dashboard and the API (read-only, one or two
aggregate queries each, whatever the number of items)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Q, Subquery, Sum

from annotator.figures import Figures, study_figures

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


def annotator_shares(*, study: Study, annotator: Any) -> tuple[list[tuple[Round, Share]], int]:
    """The annotator's Share of every round of the study (as `annotator_share` with no cache),
    and how many assignments they hold in it (every status): My items' header and the length of
    its history. Two passes (their assignments by round, the rounds' items), kept in the cache
    under a fingerprint that every write to them changes (`_shares_fingerprint`): three queries
    when the cache holds them, five when it does not, whatever the number of rounds."""
    annotator_id = getattr(annotator, "pk", annotator)
    rounds = list(study.rounds.all())
    latest = _latest_writes(study)
    fingerprint = repr(([r.pk for r in rounds], study.overlap_k, latest))
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
    key = f"studies:shares:{study.pk}:{annotator_id}:{digest}"
    figures = cache.get(key)
    if figures is None:
        figures = _share_figures(study, annotator_id)
        cache.set(key, figures, DASHBOARD_CACHE_SECONDS)
    mine, sizes = figures
    annotators = latest[-1] or 0
    shares = []
    for round_ in rounds:
        items, needed = sizes.get(round_.pk, (0, 0))
        expected = min(items, -(-needed // annotators)) if annotators else 0
        shares.append((round_, Share(done=mine.get(round_.pk, (0, 0))[0], expected=expected)))
    return shares, sum(held for _, held in mine.values())


def _share_figures(
    study: Study, annotator_id: int
) -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]:
    """By round id: the annotator's (submitted, held) assignments, and the round's (items,
    annotations needed)."""
    mine = {
        row["item__round_id"]: (row["done"], row["held"])
        for row in Assignment.objects.filter(item__study=study, annotator_id=annotator_id)
        .values("item__round_id")
        .annotate(done=Count("pk", filter=Q(status=Status.SUBMITTED)), held=Count("pk"))
        .order_by()
    }
    sizes = {
        row["round_id"]: (row["items"], row["needed"] or 0)
        for row in Item.objects.filter(study=study)
        .values("round_id")
        .annotate(items=Count("pk"), needed=Sum("quota"))
        .order_by()
    }
    return mine, sizes


def _latest_writes(study: Study) -> tuple[Any, ...]:
    """The newest assignment id, annotation change and item id (anywhere: one index probe
    each), the study's newest near-duplicate mark and number of marks in force, and its number
    of annotators, in one query: the part of the cache fingerprints that a hand-out, a
    (re-)submit, a selection, a mark or a member changes.

    An item's quota changes only with the study's k (`update_study`, in the shares' fingerprint
    beside this) or its number of annotators (calibration rounds). Skips, timeouts and
    releases change no count of the shares (they count every status held, and submitted ones
    stay so); for the dashboard they move the item counters in its own fingerprint."""
    from annotator.similarity.models import DuplicateMark  # similarity imports studies

    marks = DuplicateMark.objects.filter(study=study).order_by()
    in_force = DuplicateMark.objects.excluding().filter(study=study).order_by()
    annotators = Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR)
    return tuple(
        Study.objects.filter(pk=study.pk)
        .annotate(
            assignment=Subquery(Assignment.objects.order_by("-pk").values("pk")[:1]),
            annotation=Subquery(
                Annotation.objects.order_by("-updated_at").values("updated_at")[:1]
            ),
            item=Subquery(Item.objects.order_by("-pk").values("pk")[:1]),
            mark=Subquery(marks.order_by("-pk").values("pk")[:1]),
            marks=Subquery(in_force.values("study").annotate(n=Count("pk")).values("n")[:1]),
            annotators=Subquery(
                annotators.order_by().values("study").annotate(n=Count("pk")).values("n")[:1]
            ),
        )
        .values_list("assignment", "annotation", "item", "mark", "marks", "annotators")
        .get()
    )


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


def rounds_progress(*, study: Study) -> dict[int, Progress]:
    """`round_progress` of the study's rounds that hold items, by round id, exact: one grouped
    query over its items instead of one per round (the study page). A round without items is
    absent (its progress is 0 / 0). Items whose issue is a marked near-duplicate (not included
    anyway) are left out, as on the dashboard."""
    return {
        row["round_id"]: Progress(done=row["done"] or 0, total=row["total"] or 0)
        for row in Item.objects.filter(study=study)
        .exclude(duplicate_of_study(study, "issue_id"))
        .values("round_id")
        .annotate(done=Sum("submitted_count"), total=Sum("quota"))
        .order_by()
    }


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
    """A round's items by state and its annotators' rows, near-duplicates left out: `duplicates`
    items of the round have an issue the owners marked a duplicate (and did not include anyway);
    they are in none of the other figures."""

    round: Round
    unassigned: int = 0
    in_progress: int = 0
    complete: int = 0
    annotators: list[AnnotatorRow] = field(default_factory=list)
    duplicates: int = 0
    unsure: Any = None  # the round's services.unsure.UnsureFigures

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


def duplicate_of_study(study: Study | int, issue: str) -> Exists:
    """True where the row's issue (`issue`: the path to its id from the outer query) is marked a
    near-duplicate in the study and not included anyway
    (`annotator.similarity.services.duplicate_issue_ids`): what the study's counts leave out.
    An EXISTS rather than a list of ids: one anti-join, no extra query."""
    from annotator.similarity.models import DuplicateMark  # similarity imports studies

    study_id = study.pk if isinstance(study, Study) else study
    marks = DuplicateMark.objects.excluding().filter(study_id=study_id, issue=OuterRef(issue))
    return Exists(marks)


# How long the annotators' table may stay in the cache under an unchanged fingerprint: a bound
# for what no fingerprint sees (a renamed account), not the freshness of the figures.
DASHBOARD_CACHE_SECONDS = 600


def duplicates_by_round(study: Study) -> dict[int, int]:
    """The study's items whose issue is a marked near-duplicate (not included anyway), counted
    by round: a join from the marks (few) to the items through their issue."""
    from annotator.similarity.models import DuplicateMark  # similarity imports studies

    marked = DuplicateMark.objects.excluding().filter(study=study).values("issue_id")
    return dict(
        Item.objects.filter(study=study, issue_id__in=marked)
        .values("round_id")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("round_id", "n")
    )


def study_dashboard(*, study: Study) -> list[RoundRow]:
    """`study_dashboard_as_of`'s rows (figures computed here or the last computed)."""
    return study_dashboard_as_of(study=study)[0]


def study_dashboard_as_of(*, study: Study) -> tuple[list[RoundRow], Figures]:
    """Per round: items by state, per annotator done, skipped, in progress, timed out and the
    mean seconds per submitted item, and the unsure marks (`RoundRow.unsure`); items whose issue
    is a marked near-duplicate are left out of all of these and counted apart. With the rows,
    when the annotators' tables and unsure marks were computed (annotator/figures.py).

    The items' states are read on every call (one pass over the study's items). The annotators'
    table and the unsure marks (a pass over every assignment and annotation: over a second at
    100,000 items on a loaded machine) are kept under a fingerprint that every write to them
    changes (`_fingerprint`): computed here for a study of up to FIGURES_INLINE_MAX_ITEMS items,
    so a page never shows them older than the data; above, by a job, the last ones served
    meanwhile (empty tables until the first is done). Four queries when the cache holds them,
    whatever the study's size."""
    rows = {r.pk: RoundRow(round=r) for r in study.rounds.all()}
    # "state" is with_state()'s annotation, which the stubs' plugin cannot see through a method
    states = (
        Item.objects.filter(study=study)
        .exclude(duplicate_of_study(study, "issue_id"))
        .with_state()
        .values("round_id", "state")  # type: ignore[misc]
        .annotate(
            n=Count("pk"),
            active=Sum("active_count"),
            submitted=Sum("submitted_count"),
            quota=Sum("quota"),
        )
        .order_by("round_id", "state")
    )
    counters: list[tuple[Any, ...]] = []
    for row in states:
        counters.append(tuple(row.values()))
        setattr(rows[row["round_id"]], row["state"].replace(" ", "_"), row["n"])
    for round_id, n in duplicates_by_round(study).items():
        rows[round_id].duplicates = n
        counters.append((round_id, "duplicates", n))
    figures = study_figures(
        f"studies:dashboard:{study.pk}",
        fingerprint=_fingerprint(study, [*rows], counters),
        items=sum(row.items + row.duplicates for row in rows.values()),
        compute="annotator.studies.services.progress.dashboard_tables",
        params={"study_id": study.pk},
        timeout=DASHBOARD_CACHE_SECONDS,
    )
    tables: tuple[dict[int, list[AnnotatorRow]], dict[int, Any]] = figures.value or ({}, {})
    annotators, unsure = tables
    for round_id, row in rows.items():
        row.annotators = annotators.get(round_id, [])
        row.unsure = unsure.get(round_id) or _no_unsure()
    return list(rows.values()), figures


def dashboard_tables(study_id: int) -> tuple[dict[int, list[AnnotatorRow]], dict[int, Any]]:
    """The annotators' rows and the unsure marks of every round, by round id (computed in the
    request or by a job: annotator/figures.py)."""
    study = Study.objects.get(pk=study_id)
    return _annotator_tables(study), _unsure(study)


def _no_unsure() -> Any:
    from .unsure import UnsureFigures

    return UnsureFigures(facets=[])


def _unsure(study: Study) -> dict[int, Any]:
    from .unsure import unsure_figures  # unsure imports duplicate_of_study from here

    return unsure_figures(study=study)


def _fingerprint(study: Study, rounds: list[int], counters: list[tuple[Any, ...]]) -> str:
    """What the annotators' table and the unsure marks are computed from, read cheaply: the
    study's rounds, its item counters by round and state (every hand-out, submit, skip,
    timeout, release and quota change moves one), the newest assignment id and the newest
    annotation change (index `annotation_updated`; a re-submit changes its time, seconds and
    unsure marks without a counter), and the study's near-duplicate marks (a new mark is a new
    row, a withdrawal changes the count of those in force). One query for the last three.

    What no fingerprint sees: a renamed account (bounded by DASHBOARD_CACHE_SECONDS), and a
    write whose transaction began before and commits after another's newer id or time with no
    counter moving (a re-submit racing another write): the next write corrects it."""
    latest = _latest_writes(study)
    return hashlib.sha256(repr((rounds, counters, latest)).encode()).hexdigest()[:32]


def _annotator_tables(study: Study) -> dict[int, list[AnnotatorRow]]:
    """Each annotator's row of each round, by round id, from one grouped pass over the study's
    assignments (near-duplicates left out) joined to their annotations: the count by status,
    and the sum and number of the submitted annotations' seconds, whose quotient is the mean."""
    submitted = Q(annotation__status=Annotation.Status.SUBMITTED)
    groups = list(
        Assignment.objects.filter(item__study=study)
        .exclude(duplicate_of_study(study, "item__issue_id"))
        .values("item__round_id", "annotator_id", "status")
        .annotate(
            n=Count("pk"),
            seconds=Sum("annotation__seconds_spent", filter=submitted),
            timed=Count("annotation__pk", filter=submitted),
        )
        .order_by()
    )
    ids = {row["annotator_id"] for row in groups}
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    table: dict[tuple[int, int], AnnotatorRow] = {}
    seconds: dict[tuple[int, int], tuple[int, int]] = {}
    for row in groups:
        key = (row["item__round_id"], row["annotator_id"])
        entry = table.setdefault(key, AnnotatorRow(username=names.get(key[1], "?")))
        _count(entry, row["status"], row["n"])
        total, timed = seconds.get(key, (0, 0))
        seconds[key] = (total + (row["seconds"] or 0), timed + row["timed"])
    out: dict[int, list[AnnotatorRow]] = {}
    for (round_id, annotator_id), entry in sorted(table.items(), key=lambda kv: kv[1].username):
        total, timed = seconds[(round_id, annotator_id)]
        entry.avg_seconds = total / timed if timed else None
        out.setdefault(round_id, []).append(entry)
    return out


def _count(entry: AnnotatorRow, status: str, n: int) -> None:
    attribute = {
        Status.SUBMITTED: "submitted",
        Status.SKIPPED: "skipped",
        Status.ASSIGNED: "in_progress",
        Status.EXPIRED: "timed_out",
    }[Status(status)]
    setattr(entry, attribute, n)
