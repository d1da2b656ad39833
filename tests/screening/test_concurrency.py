"""Screeners working while the model is retrained and the ranks rewritten, on real PostgreSQL:
no decision is lost, no item goes to more than k screeners, none to one screener twice."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count

from annotator.screening.models import ScreeningAudit, ScreeningModel
from annotator.screening.retrain import retrain
from annotator.screening.services import draw_audit
from annotator.studies.models import Annotation, Assignment, Item, ScreeningRank
from tests.screening.world import screening_world

pytestmark = pytest.mark.django_db(transaction=True)

SCREENERS = 6
ITEMS = 120
K = 2


def in_thread(
    work: Callable[..., object], errors: list[BaseException], *args: Any
) -> threading.Thread:
    """A thread running `work(*args)` on a database connection of its own, closed at the end;
    what it raises is appended to `errors` for the test to assert on."""

    def run() -> None:
        try:
            work(*args)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    return threading.Thread(target=run)


def test_retraining_while_screeners_work_loses_nothing_and_keeps_k() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED and row locks need PostgreSQL")
    sw = screening_world(n=ITEMS, share=0.2, k=K, screeners=SCREENERS, retrain_every=5)
    start = threading.Barrier(SCREENERS + 1)
    done = threading.Event()
    errors: list[BaseException] = []
    submitted: Counter[int] = Counter()

    def screen(person) -> None:  # type: ignore[no-untyped-def]
        start.wait()
        while sw.screen(person) is not None:
            submitted[person.pk] += 1

    def retrain_all_the_time() -> None:
        start.wait()
        drawn = False
        while not done.is_set():
            if Annotation.objects.filter(status="submitted").count() >= 2:
                retrain(sw.world.round.pk)
            if not drawn and Item.objects.filter(submitted_count=K).count() >= ITEMS // 2:
                draw_audit(round=sw.world.round, size=10, seed=1)
                drawn = True

    trainer = in_thread(retrain_all_the_time, errors)
    threads = [in_thread(screen, errors, p) for p in sw.screeners]
    trainer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    done.set()
    trainer.join(timeout=120)

    assert not errors, errors
    # A screener who found every free item locked for a moment by the others (SKIP LOCKED, at
    # the end of the pile) stopped; each comes back once, one after the other, as after a
    # break. A rewrite of the ranks must never hide the pile: few items are left for this.
    left = Item.objects.filter(round=sw.world.round, submitted_count__lt=K).count()
    assert left <= 2 * SCREENERS, f"{left} items left when the screeners were told none was"
    for person in sw.screeners:
        while sw.screen(person) is not None:
            submitted[person.pk] += 1
    assert ScreeningModel.objects.filter(round=sw.world.round).count() >= 2
    # Every item screened by exactly k, every decision kept, nobody given an item twice.
    items = Item.objects.filter(round=sw.world.round)
    assert set(items.values_list("submitted_count", flat=True)) == {K}
    annotations = Annotation.objects.filter(
        status="submitted", assignment__item__round=sw.world.round
    )
    assert annotations.count() == ITEMS * K == sum(submitted.values())
    per_item = Counter(annotations.values_list("assignment__item_id", flat=True))
    assert set(per_item.values()) == {K}
    pairs = Assignment.objects.values("item", "annotator").annotate(n=Count("pk"))
    assert max(p["n"] for p in pairs) == 1
    # Items handed out from the ranks carry them.
    assert Assignment.objects.filter(screening_rank__isnull=False).exists()


def test_an_audit_drawn_while_the_model_trains_stays_first_in_the_ranks() -> None:
    """The retrain ranks the items, then writes the ranks. An audit drawn in between would be
    overwritten by a model that never saw it, and screeners would be handed the model's order
    instead of the audit's items: the retrain waits for the draw and puts the audit first."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    sw = screening_world(n=60, share=0.2, k=1, screeners=1)
    for _ in range(20):
        sw.screen(sw.screeners[0])
    drawn, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def draw_and_hold() -> None:
        with transaction.atomic():
            draw_audit(round=sw.world.round, size=10, seed=3)
            drawn.set()
            release.wait(timeout=30)

    drawer = in_thread(draw_and_hold, errors)
    trainer = in_thread(retrain, errors, sw.world.round.pk)
    drawer.start()
    assert drawn.wait(timeout=30)
    trainer.start()
    # The retrain has trained and now waits on a lock the uncommitted draw holds.
    assert _a_session_waits_on_a_lock(timeout=30)
    release.set()
    drawer.join(timeout=30)
    trainer.join(timeout=60)
    assert not errors, errors

    audit = ScreeningAudit.objects.get(round=sw.world.round)
    unscreened = set(
        Item.objects.filter(round=sw.world.round, submitted_count=0).values_list("pk", flat=True)
    )
    expected = [pk for pk in audit.item_ids if pk in unscreened]
    ranked = list(
        ScreeningRank.objects.filter(round=sw.world.round)
        .order_by("rank")
        .values_list("item_id", flat=True)
    )
    assert expected and ranked[: len(expected)] == expected


def _a_session_waits_on_a_lock(timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.05)
    return False
