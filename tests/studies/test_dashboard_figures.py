"""The dashboard, the progress API and My items at any size: the same figures as the per-round
computation they replaced (kept here as the oracle), a number of queries that does not grow with
the rounds or the items, and near-duplicates left out of the counts and said so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import Avg, Count
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotator.issues.models import Issue, Repository
from annotator.similarity.models import DuplicateMark
from annotator.similarity.services import mark_issue, withdraw_mark
from annotator.studies.models import Annotation, Assignment, Item, Membership, Round, Study
from annotator.studies.services import (
    add_member,
    create_round,
    next_assignment,
    release_stale_assignments,
    select_issues,
    skip_assignment,
    submit_annotation,
)
from annotator.studies.services.progress import (
    AnnotatorRow,
    Progress,
    RoundRow,
    annotator_share,
    annotator_shares,
    round_progress,
    rounds_progress,
    study_dashboard,
)
from annotator.studies.services.unsure import unsure_figures
from tests.factories import IssueFactory, UserFactory
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db
Status = Assignment.Status


# --- the oracle: the dashboard's figures as they were computed before ---------------------------
def old_dashboard(study: Study) -> list[RoundRow]:
    rows = {r.pk: RoundRow(round=r) for r in study.rounds.all()}
    states = Item.objects.filter(study=study).with_state().values("round_id", "state")  # type: ignore[misc]
    for row in states.annotate(n=Count("pk")).order_by():
        setattr(rows[row["round_id"]], row["state"].replace(" ", "_"), row["n"])
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
    attribute = {
        Status.SUBMITTED: "submitted",
        Status.SKIPPED: "skipped",
        Status.ASSIGNED: "in_progress",
        Status.EXPIRED: "timed_out",
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
        setattr(entry, attribute[Status(row["status"])], row["n"])
    for (round_id, annotator_id), entry in sorted(table.items(), key=lambda kv: kv[1].username):
        entry.avg_seconds = seconds.get((round_id, annotator_id))
        rows[round_id].annotators.append(entry)
    return list(rows.values())


# --- planted data ------------------------------------------------------------------------------
def take(world: World, person) -> Assignment:  # type: ignore[no-untyped-def]
    assignment = next_assignment(study=world.study, annotator=person)
    assert assignment is not None
    return assignment


def submit(world: World, person, seconds: int, unsure: tuple[str, ...] = ()) -> None:  # type: ignore[no-untyped-def]
    labels = world.labels(screening="relevant", symptom="hang")
    submit_annotation(
        assignment=take(world, person),
        user=person,
        labels=labels,
        seconds_spent=seconds,
        unsure=unsure,
    )


def planted(rounds: int = 2, items: int = 6) -> World:
    """Three annotators over `rounds` rounds of `items` items (k = 2): submitted annotations
    with various times and unsure marks, a skip, a timeout, one in progress, untouched items."""
    world = make_world(items=items, k=2, annotators=3)
    repository = world.issues[0].repository
    for _ in range(rounds - 1):
        extra = create_round(study=world.study, kind=Round.Kind.MAIN)
        new = [IssueFactory(repository=repository) for _ in range(items)]
        world.issues.extend(new)
        select_issues(
            study=world.study,
            round=extra,
            filters={"repository": repository.pk},
            seed=2,
            user=world.owner,
        )
    a, b, c = world.annotators
    for n, person in enumerate([a, b, a, c, b, a, c, a, b]):
        submit(world, person, seconds=7 * n + 3, unsure=("symptom",) if n % 3 == 0 else ())
    skip_assignment(assignment=take(world, b), user=b, reason="not sure it is a bug")
    expired = take(world, c)
    Assignment.objects.filter(pk=expired.pk).update(status=Status.EXPIRED)
    take(world, a)  # in progress
    return world


def as_dicts(rows: list[RoundRow]) -> list[dict[str, object]]:
    return [
        {
            "round": row.round.pk,
            "states": (row.unassigned, row.in_progress, row.complete),
            "annotators": [vars(x) for x in row.annotators],
            "unsure": row.unsure,
        }
        for row in rows
    ]


def old_figures(study: Study) -> list[dict[str, object]]:
    rows = old_dashboard(study)
    unsure = unsure_figures(study=study)
    for row in rows:
        row.unsure = unsure[row.round.pk]
    return as_dicts(rows)


def test_the_dashboard_figures_equal_the_per_round_computation_they_replace():
    world = planted(rounds=3)
    new = study_dashboard(study=world.study)
    assert as_dicts(new) == old_figures(world.study)
    assert as_dicts(study_dashboard(study=world.study)) == as_dicts(new)  # from the cache
    assert sum(len(row.annotators) for row in new) >= 3  # the data exercise the table
    assert {row.duplicates for row in new} == {0}
    statuses = set(Assignment.objects.values_list("status", flat=True))
    assert statuses == {Status.SUBMITTED, Status.SKIPPED, Status.EXPIRED, Status.ASSIGNED}


def test_my_items_shares_equal_each_rounds_share_and_count_the_history():
    world = planted(rounds=3)
    for person in world.annotators:
        shares, held = annotator_shares(study=world.study, annotator=person)
        assert [(r.pk, s) for r, s in shares] == [
            (r.pk, annotator_share(round_id=r.pk, annotator=person))
            for r in world.study.rounds.all()
        ]
        mine = Assignment.objects.filter(item__study=world.study, annotator=person)
        assert held == mine.count() > 0


@contextmanager
def counted() -> Iterator[CaptureQueriesContext]:
    with CaptureQueriesContext(connection) as queries:
        yield queries


@pytest.mark.parametrize(
    ("route", "role"),
    [
        ("studies:dashboard", "owner"),
        ("api-progress", "owner"),
        ("studies:mine", "annotator"),
        ("studies:detail", "owner"),
        ("studies:detail", "annotator"),
    ],
)
def test_the_query_count_does_not_grow_with_rounds_or_items(client, route, role):
    counts = []
    for rounds, items in ((1, 8), (4, 12)):
        world = planted(rounds=rounds, items=items)
        viewer = world.annotators[0] if role == "annotator" else world.owner
        client.force_login(viewer)
        url = reverse(route, args=[world.study.pk])
        client.get(url)  # sessions, caches
        with counted() as queries:
            assert client.get(url).status_code == 200
        counts.append(len(queries))
        Study.objects.all().delete()  # the next world reuses the names
        get_user_model().objects.all().delete()
        Issue.objects.all().delete()
        Repository.objects.all().delete()
    assert counts[0] == counts[1], counts


# --- near-duplicates ---------------------------------------------------------------------------
def text(response) -> str:  # type: ignore[no-untyped-def]
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", response.content.decode(), flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def duplicate_item(world: World) -> Item:
    """Mark the issue of an item with submitted annotations a duplicate of another issue."""
    item = Item.objects.filter(study=world.study, submitted_count__gt=0).order_by("pk").first()
    assert item is not None
    other = next(i for i in world.issues if i.pk != item.issue_id)
    mark_issue(
        study=world.study, issue=item.issue, decision="duplicate", duplicate_of=other,
        user=world.owner,
    )  # fmt: skip
    return item


def test_a_marked_duplicate_leaves_the_dashboard_and_progress_counts(client):
    world = planted(rounds=2)
    before = {row.round.pk: row for row in study_dashboard(study=world.study)}
    item = duplicate_item(world)
    after = {row.round.pk: row for row in study_dashboard(study=world.study)}
    was, now = before[item.round_id], after[item.round_id]
    assert (now.items, now.duplicates) == (was.items - 1, 1)
    assert now.complete + now.in_progress == was.complete + was.in_progress - 1
    # The annotators' rows lose exactly that item's assignments.
    lost = Assignment.objects.filter(item=item).count()
    total = sum(x.submitted + x.skipped + x.in_progress + x.timed_out for x in was.annotators)
    left = sum(x.submitted + x.skipped + x.in_progress + x.timed_out for x in now.annotators)
    assert left == total - lost
    # The same as the old computation over the study without the item.
    Item.objects.filter(pk=item.pk).delete()
    assert as_dicts(list(after.values())) == old_figures(world.study)


def test_the_study_pages_round_figures_leave_a_marked_duplicate_out():
    world = planted(rounds=2)
    before = rounds_progress(study=world.study)
    item = duplicate_item(world)
    after = rounds_progress(study=world.study)
    was, now = before[item.round_id], after[item.round_id]
    assert now == Progress(done=was.done - item.submitted_count, total=was.total - item.quota)
    assert {k: v for k, v in after.items() if k != item.round_id} == {
        k: v for k, v in before.items() if k != item.round_id
    }


def test_the_dashboard_and_the_api_say_how_many_duplicates_were_left_out(client):
    world = planted(rounds=1)
    item = duplicate_item(world)
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    url = reverse("studies:dashboard", args=[world.study.pk])
    client.force_login(world.owner)
    response = client.get(url)
    page = text(response)
    assert "1 left out as near-duplicate (counted nowhere on this page: near-duplicates)" in page
    link = reverse("similarity:duplicates", args=[world.study.pk])
    assert f'href="{link}"' in response.content.decode()
    assert "(main, 5 items)" in page  # six selected, one left out
    client.force_login(adjudicator)  # sees the count; the near-duplicates page is the owners'
    page = text(client.get(url))
    assert "1 left out as near-duplicate (counted nowhere on this page)" in page
    client.force_login(world.owner)
    data = client.get(reverse("api-progress", args=[world.study.pk])).json()
    assert [r["duplicates_left_out"] for r in data] == [1]
    assert sum(r["unassigned"] + r["in_progress"] + r["complete"] for r in data) == 5
    assert item.round.number == data[0]["round"]


def test_a_duplicate_included_anyway_or_withdrawn_counts_again(client):
    world = planted(rounds=1)
    before = as_dicts(study_dashboard(study=world.study))
    item = duplicate_item(world)
    other = next(i for i in world.issues if i.pk != item.issue_id)
    mark_issue(
        study=world.study, issue=item.issue, decision="duplicate", duplicate_of=other,
        include=True, user=world.owner,
    )  # fmt: skip
    rows = study_dashboard(study=world.study)
    assert as_dicts(rows) == before and rows[0].duplicates == 0
    client.force_login(world.owner)
    assert "near-duplicate" not in text(
        client.get(reverse("studies:dashboard", args=[world.study.pk]))
    )


def test_unsure_marks_of_a_duplicate_leave_the_figures():
    world = planted(rounds=1)
    marked = Annotation.objects.filter(status="submitted").exclude(unsure=[]).first()
    assert marked is not None
    before = unsure_figures(study=world.study)[world.round.pk].annotations
    issue = marked.assignment.item.issue
    other = next(i for i in world.issues if i.pk != issue.pk)
    mark_issue(study=world.study, issue=issue, decision="duplicate", duplicate_of=other)
    on_item = Annotation.objects.filter(assignment__item__issue=issue, status="submitted")
    gone = on_item.exclude(unsure=[]).count()
    assert unsure_figures(study=world.study)[world.round.pk].annotations == before - gone


def test_the_study_pages_round_figures_equal_each_rounds_own():
    world = planted(rounds=3)
    progress = rounds_progress(study=world.study)
    every = {r.pk: round_progress(round_id=r.pk) for r in world.study.rounds.all()}
    assert progress == every
    assert sum(p.done for p in progress.values()) == 9


# --- the cache of the annotators' table: every write changes its key --------------------------
def fresh(study: Study) -> list[dict[str, object]]:
    cache.clear()
    return as_dicts(study_dashboard(study=study))


def test_the_annotators_table_comes_from_the_cache_until_a_write_changes_it():
    world = planted(rounds=2)
    cache.clear()
    with counted() as cold:
        study_dashboard(study=world.study)
    with counted() as warm:
        study_dashboard(study=world.study)
    assert len(warm) < len(cold)
    assert not any("studies_annotation" in q["sql"] for q in warm.captured_queries[:2])
    a, b, c = world.annotators
    submitted = Assignment.objects.filter(annotator=a, status=Status.SUBMITTED).first()

    def resubmit() -> None:  # same counters, other seconds and unsure marks
        submit_annotation(
            assignment=submitted,
            user=a,
            labels=world.labels(screening="relevant", symptom="hang"),
            seconds_spent=999,
            unsure=("screening",),
        )

    def expire() -> None:
        release_stale_assignments(now=timezone.now() + timedelta(days=2), minutes=1)

    def mark() -> None:
        issue = Assignment.objects.filter(status=Status.SUBMITTED).last().item.issue
        other = next(i for i in world.issues if i.pk != issue.pk)
        mark_issue(study=world.study, issue=issue, decision="duplicate", duplicate_of=other)

    def withdraw() -> None:
        withdraw_mark(study=world.study, mark_id=DuplicateMark.objects.get().pk)

    writes = [
        ("submit", lambda: submit(world, b, seconds=41)),
        ("re-submit", resubmit),
        ("skip", lambda: skip_assignment(assignment=take(world, c), user=c, reason="x")),
        ("timeout", expire),
        ("hand-out", lambda: take(world, c)),
        ("near-duplicate", mark),
        ("withdrawn", withdraw),
    ]
    for name, write in writes:
        before = as_dicts(study_dashboard(study=world.study))  # cached
        write()
        after = as_dicts(study_dashboard(study=world.study))
        assert after != before, name
        assert after == fresh(world.study), name


def test_my_shares_come_from_the_cache_until_a_write_changes_them():
    world = planted(rounds=2)
    a, _, c = world.annotators

    def uncached(person) -> list[object]:  # type: ignore[no-untyped-def]
        return [
            (r.pk, annotator_share(round_id=r.pk, annotator=person))
            for r in world.study.rounds.all()
        ]

    def shares(person) -> list[object]:  # type: ignore[no-untyped-def]
        world.study.refresh_from_db()
        return [(r.pk, s) for r, s in annotator_shares(study=world.study, annotator=person)[0]]

    def new_member() -> None:
        add_member(study=world.study, user=UserFactory(), role=Membership.Role.ANNOTATOR)

    def selection() -> None:
        IssueFactory.create_batch(3, repository=world.issues[0].repository)
        round_ = create_round(study=world.study, kind=Round.Kind.MAIN)
        select_issues(
            study=world.study,
            round=round_,
            filters={"repository": world.issues[0].repository.pk},
            seed=3,
            user=world.owner,
        )

    writes = [
        ("submit", lambda: submit(world, c, seconds=5)),
        ("hand-out", lambda: take(world, c)),
        ("member", new_member),
        ("selection", selection),
    ]
    for name, write in writes:
        assert shares(c) == uncached(c), name  # and now in the cache
        write()
        assert shares(c) == uncached(c), name
        assert shares(a) == uncached(a), name
