"""Each statement of annotator/studies/sql.py gives what the ORM query it replaces gives, field by
field. Run on PostgreSQL here and again on SQLite by tests/test_sql_on_sqlite.py.

The ORM twins are module-level functions (`orm_*`) so that benchmarks/sql_vs_orm.py times the
same pairs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from annotator.issues.models import IssueComment
from annotator.studies import sql
from annotator.studies.models import (
    Annotation,
    AnnotationLabel,
    Assignment,
    Item,
    Membership,
    Round,
)
from annotator.studies.services import next_assignment, save_draft, submit_annotation
from tests.factories import IssueCommentFactory, UserFactory
from tests.studies.factories import World

pytestmark = pytest.mark.django_db
Status = Assignment.Status


def fields(instance: Any) -> dict[str, Any]:
    """Every loaded concrete field (deferred ones are not in __dict__)."""
    return {
        f.attname: getattr(instance, f.attname)
        for f in type(instance)._meta.concrete_fields
        if f.attname in instance.__dict__
    }


# --- the ORM twins ----------------------------------------------------------------------------
def orm_own_assignment(assignment_id: int, annotator_id: int, *, page: bool) -> Assignment | None:
    related = (
        ["item__issue__repository", "item__round__study__codebook_version", "annotation"]
        if page
        else ["item__study__codebook_version"]
    )
    return (
        Assignment.objects.select_related(*related)
        .filter(pk=assignment_id, annotator_id=annotator_id)
        .first()
    )


def orm_issue_comments(issue_id: int) -> list[IssueComment]:
    return list(
        IssueComment.objects.filter(issue_id=issue_id)
        .defer("raw", "content_hash", "key", "issue")
        .order_by("created_at", "id")
    )


def orm_annotation_labels(annotation_id: int) -> dict[int, list[int]]:
    labels: dict[int, list[int]] = {}
    rows = AnnotationLabel.objects.filter(annotation_id=annotation_id)
    for facet, category in rows.values_list("facet_id", "category_id"):
        labels.setdefault(facet, []).append(category)
    return labels


def orm_annotator_round_counts(round_id: int, annotator_id: int) -> tuple[int, int]:
    counts = Assignment.objects.filter(
        item__round_id=round_id, annotator_id=annotator_id
    ).aggregate(
        done=Count("pk", filter=Q(status=Status.SUBMITTED)),
        total=Count("pk", filter=Q(status__in=[Status.SUBMITTED, Status.ASSIGNED])),
    )
    return counts["done"], counts["total"]


def orm_lock_annotator(study_id: int, annotator_id: int) -> bool:
    return (
        Membership.objects.select_for_update()
        .filter(study_id=study_id, user_id=annotator_id, role=Membership.Role.ANNOTATOR)
        .exists()
    )


def orm_open_assignment(study_id: int, annotator_id: int) -> Assignment | None:
    return (
        Assignment.objects.filter(
            item__study_id=study_id, annotator_id=annotator_id, status=Status.ASSIGNED
        )
        .order_by("assigned_at", "pk")
        .first()
    )


def orm_free_item(study_id: int, annotator_id: int) -> int | None:
    return (
        Item.objects.select_for_update(skip_locked=True, of=("self",), no_key=True)
        .filter(study_id=study_id, active_count__lt=F("quota"), round__closed_at=None)
        .exclude(assignments__annotator_id=annotator_id)
        .order_by("stage", "round_id", "-submitted_count", "-active_count", "position")
        .values_list("pk", flat=True)
        .first()
    )


def orm_lock_assignment_row(assignment_id: int) -> tuple[int, str, bool] | None:
    row = (
        Assignment.objects.select_for_update(of=("self",))
        .filter(pk=assignment_id)
        .values_list("annotator_id", "status", "item__round__closed_at")
        .first()
    )
    return None if row is None else (row[0], row[1], row[2] is not None)


def orm_close_complete_round(item_id: int, now: Any) -> bool:
    incomplete = Item.objects.filter(round=OuterRef("pk"), submitted_count__lt=F("quota"))
    return bool(
        Round.objects.filter(items__pk=item_id, closed_at=None)
        .exclude(Exists(incomplete))
        .update(closed_at=now, closed_reason=Round.Closed.COMPLETE)
    )


# --- loads ------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", [True, False], ids=["page", "write"])
@pytest.mark.parametrize("draft", [False, True], ids=["no-annotation", "draft"])
def test_own_assignment_matches_select_related(world: World, page: bool, draft: bool) -> None:
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    if draft:
        save_draft(assignment=assignment, user=a, labels=world.labels(symptom="hang"))
    ours = sql.own_assignment(assignment.pk, a.pk, page=page)
    orm = orm_own_assignment(assignment.pk, a.pk, page=page)
    assert ours is not None and orm is not None
    pairs = [(ours, orm), (ours.item, orm.item), (ours.item.study, orm.item.study)]
    pairs.append((ours.item.study.codebook_version, orm.item.study.codebook_version))
    if page:
        pairs += [
            (ours.item.round, orm.item.round),
            (ours.item.issue.repository, orm.item.issue.repository),
        ]
        shown = fields(ours.item.issue)
        assert shown == {k: v for k, v in fields(orm.item.issue).items() if k in shown}
        assert set(fields(orm.item.issue)) - set(shown) == {"raw", "search_vector"}
        if draft:
            pairs.append((ours.annotation, orm.annotation))
    for mine, theirs in pairs:
        assert fields(mine) == fields(theirs), type(mine).__name__
    assert sql.own_assignment(assignment.pk, world.annotators[1].pk, page=page) is None
    assert orm_own_assignment(assignment.pk, world.annotators[1].pk, page=page) is None


def test_issue_comments_match_the_orm_in_thread_order(world: World) -> None:
    issue = world.issues[0]
    now = timezone.now()
    for hours in (3, 1, 2, 1):  # two at the same time: the id breaks the tie
        IssueCommentFactory(issue=issue, created_at=now - timedelta(hours=hours))
    IssueCommentFactory(issue=world.issues[1])
    ours, orm = sql.issue_comments(issue.pk), orm_issue_comments(issue.pk)
    assert [c.pk for c in ours] == [c.pk for c in orm] and len(ours) == 4
    assert [fields(c) for c in ours] == [fields(c) for c in orm]
    assert "raw" not in fields(ours[0])


def test_annotation_labels_match_the_orm(world: World) -> None:
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    labels = world.labels(screening="relevant", symptom="hang")
    annotation = save_draft(assignment=assignment, user=a, labels=labels)
    ours = sql.annotation_labels(annotation.pk)
    assert ours == orm_annotation_labels(annotation.pk)
    assert sorted(c for cs in ours.values() for c in cs) == sorted(
        c for cs in labels.values() for c in cs
    )


def test_annotator_round_counts_match_the_orm(world: World) -> None:
    a, b = world.annotators
    first = next_assignment(study=world.study, annotator=a)
    submit_annotation(assignment=first, user=a, labels=world.labels(screening="relevant"))
    next_assignment(study=world.study, annotator=a)  # in progress
    next_assignment(study=world.study, annotator=b)
    for annotator in (a, b, UserFactory()):
        ours = sql.annotator_round_counts(world.round.pk, annotator.pk)
        assert ours == orm_annotator_round_counts(world.round.pk, annotator.pk)
    assert sql.annotator_round_counts(world.round.pk, a.pk) == (1, 2)


# --- next item --------------------------------------------------------------------------------
def test_lock_annotator_matches_the_orm(world: World) -> None:
    for user in (world.annotators[0], world.owner, UserFactory()):
        ours = sql.lock_annotator(world.study.pk, user.pk)
        assert ours == orm_lock_annotator(world.study.pk, user.pk)
    assert sql.lock_annotator(world.study.pk, world.annotators[0].pk) is True
    assert sql.lock_annotator(world.study.pk, world.owner.pk) is False


def test_open_assignment_matches_the_orm(world: World) -> None:
    a = world.annotators[0]
    assert sql.open_assignment(world.study.pk, a.pk) is None
    assert orm_open_assignment(world.study.pk, a.pk) is None
    first = next_assignment(study=world.study, annotator=a)
    second = sql.create_assignment(sql.free_item(world.study.pk, a.pk) or 0, a.pk)
    Assignment.objects.filter(pk=second.pk).update(assigned_at=first.assigned_at)  # a tie
    ours = sql.open_assignment(world.study.pk, a.pk)
    orm = orm_open_assignment(world.study.pk, a.pk)
    assert ours is not None and orm is not None
    assert fields(ours) == fields(orm) and ours.pk == first.pk


def test_free_item_follows_the_orms_order(world: World) -> None:
    a, b = world.annotators
    seen = []
    for annotator in (a, b, a, b, a):
        ours = sql.free_item(world.study.pk, annotator.pk)
        assert ours == orm_free_item(world.study.pk, annotator.pk)
        seen.append(ours)
        sql.create_assignment(ours or 0, annotator.pk)  # as next_assignment does
    assert seen[0] == seen[1] and seen[2] == seen[3] and seen[0] != seen[2]  # breadth first
    full = Item.objects.filter(study=world.study).update(active_count=F("quota"))
    assert full == 4 and sql.free_item(world.study.pk, a.pk) is None
    assert orm_free_item(world.study.pk, a.pk) is None


def test_free_item_passes_over_closed_rounds(world: World) -> None:
    a = world.annotators[0]
    first = sql.free_item(world.study.pk, a.pk)
    assert first is not None and first == orm_free_item(world.study.pk, a.pk)
    Round.objects.filter(study=world.study).update(
        closed_at=timezone.now(), closed_reason=Round.Closed.OWNER
    )
    assert sql.free_item(world.study.pk, a.pk) is None
    assert orm_free_item(world.study.pk, a.pk) is None


def test_close_complete_round_matches_the_orms_update(world: World) -> None:
    items = list(Item.objects.filter(study=world.study).order_by("position"))
    now = timezone.now()
    assert not sql.close_complete_round(items[0].pk, now)  # nothing submitted yet
    assert not orm_close_complete_round(items[0].pk, now)
    Item.objects.filter(pk__in=[i.pk for i in items[:-1]]).update(
        active_count=F("quota"), submitted_count=F("quota")
    )
    assert not sql.close_complete_round(items[0].pk, now)  # the last item still waits
    assert not orm_close_complete_round(items[0].pk, now)
    Item.objects.filter(pk=items[-1].pk).update(active_count=F("quota"), submitted_count=F("quota"))
    with transaction.atomic():
        assert orm_close_complete_round(items[0].pk, now)
        orm = Round.objects.values("closed_at", "closed_reason").get(pk=items[0].round_id)
        transaction.set_rollback(True)
    assert sql.close_complete_round(items[0].pk, now)
    ours = Round.objects.values("closed_at", "closed_reason").get(pk=items[0].round_id)
    assert ours == orm == {"closed_at": now, "closed_reason": "complete"}
    assert not sql.close_complete_round(items[0].pk, timezone.now())  # closed once
    assert not orm_close_complete_round(items[0].pk, timezone.now())


def test_create_assignment_stores_what_the_orm_would(world: World) -> None:
    a, b = world.annotators
    item = Item.objects.filter(study=world.study).order_by("position").first()
    assert item is not None
    ours = sql.create_assignment(item.pk, a.pk)
    theirs = Assignment.objects.create(item_id=item.pk, annotator_id=b.pk)
    Item.objects.filter(pk=item.pk).update(active_count=F("active_count") + 1)
    ours_row, theirs_row = (fields(Assignment.objects.get(pk=x.pk)) for x in (ours, theirs))
    for row in (ours_row, theirs_row):
        del row["id"], row["annotator_id"]
        row["assigned_at"] = row["touched_at"] = None  # each its own time
    assert ours_row == theirs_row
    assert fields(ours)["status"] == Status.ASSIGNED
    assert Item.objects.get(pk=item.pk).active_count == 2


# --- writing an annotation --------------------------------------------------------------------
def test_lock_assignment_row_matches_the_orm(world: World) -> None:
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    assert sql.lock_assignment_row(assignment.pk) == orm_lock_assignment_row(assignment.pk)
    assert sql.lock_assignment_row(assignment.pk) == (a.pk, Status.SUBMITTED, False)
    Round.objects.filter(pk=assignment.item.round_id).update(
        closed_at=timezone.now(), closed_reason=Round.Closed.OWNER
    )
    assert sql.lock_assignment_row(assignment.pk) == orm_lock_assignment_row(assignment.pk)
    assert sql.lock_assignment_row(assignment.pk) == (a.pk, Status.SUBMITTED, True)
    assert sql.lock_assignment_row(assignment.pk + 1000) is None
    assert orm_lock_assignment_row(assignment.pk + 1000) is None


def test_mark_submitted_sets_what_the_orms_update_sets(world: World) -> None:
    a, b = world.annotators
    ours = next_assignment(study=world.study, annotator=a)
    theirs = next_assignment(study=world.study, annotator=b)
    now = timezone.now()
    sql.mark_submitted(ours.pk, now)
    Assignment.objects.filter(pk=theirs.pk).update(
        status=Status.SUBMITTED, finished_at=now, touched_at=now
    )
    columns = Assignment.objects.values("status", "finished_at", "touched_at")
    written = [columns.get(pk=x.pk) for x in (ours, theirs)]
    assert (
        written[0] == written[1] == {"status": "submitted", "finished_at": now, "touched_at": now}
    )


def test_count_submit_matches_the_orms_update_and_count(world: World) -> None:
    item = Item.objects.filter(study=world.study).order_by("position").first()
    twin = Item.objects.filter(study=world.study).order_by("position")[1]
    assert item is not None and item.quota == 2 == twin.quota
    Item.objects.filter(pk__in=[item.pk, twin.pk]).update(active_count=2)  # both slots taken
    for _ in range(2):
        ours = sql.count_submit(item.pk)
        Item.objects.filter(pk=twin.pk).update(submitted_count=F("submitted_count") + 1)
        twin.refresh_from_db()
        assert ours == (twin.submitted_count >= twin.quota)
    item.refresh_from_db()
    assert item.submitted_count == twin.submitted_count == 2


@pytest.mark.parametrize("existing", [False, True], ids=["insert", "update"])
def test_upsert_annotation_stores_what_save_would(world: World, existing: bool) -> None:
    a, b = world.annotators
    ours_assignment = next_assignment(study=world.study, annotator=a)
    theirs_assignment = next_assignment(study=world.study, annotator=b)
    version = world.study.codebook_version_id
    now = timezone.now()

    def new(assignment: Assignment, status: str, notes: str) -> Annotation:
        values = {"status": status, "notes": notes, "created_at": now, "updated_at": now}
        return Annotation(
            assignment=assignment, codebook_version_id=version, seconds_spent=12, **values
        )

    if existing:
        sql.upsert_annotation(new(ours_assignment, "draft", "first"), update=["notes"])
        new(theirs_assignment, "draft", "first").save()
    update = ["status", "notes", "seconds_spent", "updated_at"]
    ours = sql.upsert_annotation(new(ours_assignment, "submitted", "second"), update=update)
    if existing:
        theirs = Annotation.objects.get(assignment=theirs_assignment)
        theirs.status, theirs.notes, theirs.updated_at = "submitted", "second", now
        theirs.save(update_fields=update)
    else:
        theirs = new(theirs_assignment, "submitted", "second")
        theirs.save()
    rows = [fields(Annotation.objects.get(pk=x.pk)) for x in (ours, theirs)]
    for row in rows:
        del row["id"], row["assignment_id"]
        row["created_at"] = row["updated_at"] = None  # auto_now(_add): the time of each write
    assert rows[0] == rows[1]
    assert Annotation.objects.filter(assignment=ours_assignment).count() == 1


def test_replace_annotation_labels_leaves_the_rows_the_orm_would(world: World) -> None:
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    annotation = save_draft(assignment=assignment, user=a, labels=world.labels(symptom="hang"))
    wanted = [
        (facet, category)
        for facet, categories in world.labels(screening="relevant", symptom="crash").items()
        for category in categories
    ]
    sql.replace_annotation_labels(annotation.pk, wanted)
    ours = sorted(
        AnnotationLabel.objects.filter(annotation=annotation).values_list("facet_id", "category_id")
    )
    assert ours == sorted(wanted)
    sql.replace_annotation_labels(annotation.pk, [])
    assert not AnnotationLabel.objects.filter(annotation=annotation).exists()


# --- selection --------------------------------------------------------------------------------
@pytest.mark.postgresql_only
def test_analyze_items_refreshes_the_planners_row_count(world: World) -> None:
    """ANALYZE has no ORM form: what it does is set pg_class.reltuples to the table's rows."""
    table = Item._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("UPDATE pg_class SET reltuples = 0 WHERE relname = %s", [table])
    sql.analyze_items()
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        (estimate,) = cursor.fetchone()
    assert estimate == Item.objects.count() == 4
