"""The screening statements give what the ORM queries they replace give: the next item's slot
with its rank, the top-ranked free item, the rewrite of a round's ranks, the submit counter
that names the round's kind, the stopping panel's screened items."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import F

from annotator.adjudication.services import adjudicate_item
from annotator.screening import decisions
from annotator.screening import sql as screening_sql
from annotator.screening.decisions import round_items, screened_items
from annotator.screening.models import ScreeningPlan
from annotator.studies import sql
from annotator.studies.models import Assignment, Item, Round, ScreeningRank
from annotator.studies.services import next_assignment, submit_annotation
from tests.screening.world import ScreeningWorld, screening_world
from tests.studies.test_sql import orm_free_item

pytestmark = pytest.mark.django_db


def orm_free_slot(study_id: int, annotator_id: int) -> sql.FreeSlot | None:
    item_id = orm_free_item(study_id, annotator_id)
    if item_id is None:
        return None
    item = Item.objects.get(pk=item_id)
    rank = ScreeningRank.objects.filter(item_id=item_id).values_list("rank", flat=True).first()
    ranked = ScreeningRank.objects.filter(round_id=item.round_id).exists()
    return sql.FreeSlot(item_id, item.round_id, item.active_count, rank, ranked)


def orm_top_ranked_item(round_id: int, annotator_id: int) -> tuple[int, int] | None:
    row = (
        Item.objects.select_for_update(skip_locked=True, of=("self",), no_key=True)
        .filter(screening_rank__round_id=round_id, active_count__lt=F("quota"))
        .exclude(assignments__annotator_id=annotator_id)
        .order_by("screening_rank__rank")
        .values_list("pk", "screening_rank__rank")
        .first()
    )
    return None if row is None else (row[0], row[1])


def orm_write_ranks(round_id: int, item_ids: list[int]) -> list[tuple[int, int]]:
    ScreeningRank.objects.filter(round_id=round_id).delete()
    ScreeningRank.objects.bulk_create(
        ScreeningRank(item_id=pk, round_id=round_id, rank=n) for n, pk in enumerate(item_ids, 1)
    )
    return ranks(round_id)


def ranks(round_id: int) -> list[tuple[int, int]]:
    return list(
        ScreeningRank.objects.filter(round_id=round_id)
        .order_by("rank")
        .values_list("item_id", "rank")
    )


def test_write_ranks_equals_the_orm_and_replaces_the_old_order() -> None:
    sw = screening_world(n=12)
    ids = list(Item.objects.filter(round=sw.world.round).values_list("pk", flat=True))
    with transaction.atomic():
        expected = orm_write_ranks(sw.world.round.pk, ids[::-1])
        transaction.set_rollback(True)
    assert screening_sql.write_ranks(sw.world.round.pk, ids[::-1]) == 12
    assert ranks(sw.world.round.pk) == expected
    screening_sql.write_ranks(sw.world.round.pk, ids[:3])
    assert ranks(sw.world.round.pk) == [(ids[0], 1), (ids[1], 2), (ids[2], 3)]


def test_free_slot_and_top_ranked_item_equal_the_orm_as_screening_goes() -> None:
    sw = screening_world(n=15, share=0.3)
    a, b = sw.screeners
    round_id = sw.world.round.pk
    for person in (a, b):
        assert sql.free_slot(sw.study.pk, person.pk) == orm_free_slot(sw.study.pk, person.pk)
        assert sql.top_ranked_item(round_id, person.pk) is None  # no ranks yet
    ids = list(
        Item.objects.filter(round=sw.world.round).order_by("-pk").values_list("pk", flat=True)
    )
    screening_sql.write_ranks(round_id, ids)
    for step in range(12):
        person = (a, b)[step % 2]
        slot = sql.free_slot(sw.study.pk, person.pk)
        assert slot == orm_free_slot(sw.study.pk, person.pk)
        assert slot is not None and slot.ranked
        top = sql.top_ranked_item(round_id, person.pk)
        assert top == orm_top_ranked_item(round_id, person.pk)
        sw.screen(person)


def test_count_submit_in_names_a_screening_round() -> None:
    sw = screening_world(n=3)
    item = Item.objects.filter(round=sw.world.round).first()
    assert item is not None
    Item.objects.filter(pk=item.pk).update(active_count=2)
    assert sql.count_submit_in(item.pk) == (False, sw.world.round.pk, True)
    assert sql.count_submit_in(item.pk) == (True, sw.world.round.pk, True)
    main = sw.study.rounds.get(kind=Round.Kind.MAIN)
    other = Item.objects.create(
        study=sw.study, round=main, issue=item.issue, quota=1, active_count=1
    )
    assert sql.count_submit_in(other.pk) == (True, main.pk, False)
    assert not Assignment.objects.filter(item=other).exists()


# --- the stopping panel's screened items -----------------------------------------------------------
def mixed_round() -> ScreeningWorld:
    """A round of 16 with every state an item can be in: screened alike (relevant or not), a
    disagreement undecided, one adjudicated relevant and one adjudicated not, one screened
    by one of its two screeners, the rest untouched."""
    sw = screening_world(n=16, share=0.5, seed=2)
    a, b = sw.screeners
    for _ in range(5):
        sw.screen(a), sw.screen(b)
    relevant, other = sw.world.labels(screening="relevant"), sw.world.labels(screening="not-a-bug")
    split = []
    for _ in range(3):  # a says relevant, b says not
        first = next_assignment(study=sw.study, annotator=a)
        second = next_assignment(study=sw.study, annotator=b)
        assert first is not None and second is not None and first.item_id == second.item_id
        submit_annotation(assignment=first, user=a, labels=relevant)
        submit_annotation(assignment=second, user=b, labels=other)
        split.append(first.item)
    for item, labels in ((split[0], relevant), (split[1], other)):
        adjudicate_item(
            item=item, user=sw.world.owner, labels=labels, reason="ambiguous-report", version=0
        )
    sw.screen(a)  # half screened: not in the panel's figures
    return sw


@pytest.mark.postgresql_only  # screened_rows is PostgreSQL's (LATERAL); SQLite reads by the ORM
def test_screened_rows_equal_the_orm_in_every_state_an_item_can_be_in() -> None:
    sw = mixed_round()
    plan = ScreeningPlan.objects.get(round=sw.world.round)
    expected = [s for s in round_items(plan) if s.complete]
    assert len(expected) == 8 and any(s.relevant for s in expected)
    assert not all(s.relevant for s in expected)
    assert screened_items(plan) == expected  # PostgreSQL: sql.screened_rows
    assert decisions._states(plan, screened_only=True) == expected  # SQLite's path
    rows = screening_sql.screened_rows(plan.round_id, plan.relevant_category_id)
    assert [r[0] for r in rows] == [s.item_id for s in expected]
    # The decision stands over the screeners: chosen by a, adjudicated not relevant.
    by_id = {s.item_id: s for s in screened_items(plan)}
    split = list(Item.objects.filter(round=sw.world.round, agreement__value__lt=1).order_by("pk"))
    assert len(split) == 3
    assert [by_id[item.pk].relevant for item in split].count(True) == 2  # adjudicated + undecided
