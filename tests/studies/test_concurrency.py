"""Many annotators asking for their next item at once, on real PostgreSQL."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count

from annotator.studies.models import Assignment, Item
from annotator.studies.services import next_assignment, skip_assignment, submit_annotation
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db(transaction=True)

ANNOTATORS = 24
ITEMS = 40
K = 3


def test_concurrent_next_item_never_exceeds_k_nor_repeats_an_item():
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED and row locks need PostgreSQL")
    world = make_world(items=ITEMS, k=K, annotators=ANNOTATORS)
    labels = world.labels(screening="relevant")
    start = threading.Barrier(ANNOTATORS * 2)  # two "tabs" per annotator
    errors: list[BaseException] = []

    def work(person, seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
                if assignment.status != "assigned":
                    continue
                try:
                    if rng.random() < 0.1:
                        skip_assignment(assignment=assignment, user=person, reason="unclear")
                    else:
                        submit_annotation(assignment=assignment, user=person, labels=labels)
                except Exception as error:
                    # The other tab may have finished it first, and with it the round (the
                    # last item complete closes it).
                    if not any(w in str(error) for w in ("skipped", "submitted", "is closed")):
                        raise
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=work, args=(person, i * 2 + tab))
        for i, person in enumerate(world.annotators)
        for tab in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors, errors
    # A tab that found nothing free stopped; an item skipped after every other annotator's tabs
    # had stopped is back in the pool. Each annotator comes back once, one after the other.
    for person in world.annotators:
        while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
            submit_annotation(assignment=assignment, user=person, labels=labels)
    submitted = Assignment.objects.filter(status="submitted")
    per_item = Counter(submitted.values_list("item_id", flat=True))
    assert max(per_item.values()) <= K
    assert all(per_item[i.pk] == i.submitted_count for i in Item.objects.all())
    # every item completes: with 24 annotators there is always someone who has not seen it
    assert Item.objects.filter(submitted_count=K).count() == ITEMS
    pairs = Assignment.objects.values("item", "annotator").annotate(n=Count("pk"))
    assert max(p["n"] for p in pairs) == 1
    assert not Assignment.objects.filter(status="assigned").exists()
