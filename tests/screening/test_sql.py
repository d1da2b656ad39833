"""The screening statements give what the ORM queries they replace give: the next item's slot
with its rank, the top-ranked free item, the rewrite of a round's ranks, the submit counter
that names the round's kind."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import F

from annotator.screening import sql as screening_sql
from annotator.studies import sql
from annotator.studies.models import Assignment, Item, Round, ScreeningRank
from tests.screening.world import screening_world
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
