"""Two annotators and an adjudicator acting on the same item at once, on real PostgreSQL.

Each step starts its threads on a barrier: both annotators submit (first submits, then
re-submits that change their labels, which re-apply the automatic rules), and in some steps the
adjudicator decides the item at the same moment with the decision version they saw. Whatever
the interleaving, nothing may be lost: both annotations hold exactly
the labels last sent, the item has one decision, an automatic decision is the rules' verdict on
the annotations as they finally are, an adjudicated one is the adjudicator's, the decision's
audit trail is one unbroken chain, and a refused decision (DecisionConflict) was refused because
someone else had written the decision.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection

from annotator.adjudication.models import Change, Decision, DecisionLabel, ItemAgreement
from annotator.adjudication.services import DecisionConflict, adjudicate_item
from annotator.adjudication.services.history import decision_snapshot
from annotator.adjudication.services.rules import decide, item_agreement
from annotator.adjudication.sql import submitted_label_sets
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item
from annotator.studies.services import next_assignment, submit_annotation
from taxonomy_app.models import Category, Facet
from tests.adjudication.helpers import Scene, make_scene

pytestmark = pytest.mark.django_db(transaction=True)

ITEMS = 8
# Steps on one item, each at once: the symptom code annotator 0 and annotator 1 submit (first
# submits, then re-submits), and the one the adjudicator decides (None: not this time).
SCENARIOS = [
    [("hang", "oom", None), ("oom", "oom", None), ("hang", "oom", "hang"), ("oom", "oom", "oom")],
    [("hang", "hang", "oom"), ("oom", "hang", "hang")],
    [("hang", "hang", None), ("oom", "hang", None), ("oom", "oom", "hang")],
    [("oom", "hang", None), ("hang", "oom", None), ("hang", "hang", None)],
]
Codes = tuple[str, str, str | None]


@dataclass
class Outcome:
    errors: list[BaseException] = field(default_factory=list)
    adjudicated: Decision | None = None
    refused: bool = False


def test_two_annotators_and_an_adjudicator_on_one_item_lose_nothing():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    # One item more than labelled here: the round never completes, so it never closes (a
    # closed round refuses the re-submits each step makes).
    scene = make_scene(items=ITEMS + 1, k=2)
    for i in range(ITEMS):
        assignments = [next_assignment(study=scene.study, annotator=u) for u in scene.annotators]
        item = Item.objects.get(pk=assignments[0].item_id)
        assert assignments[1].item_id == item.pk
        for codes in SCENARIOS[i % len(SCENARIOS)]:
            seen = Decision.objects.filter(item=item).values_list("version", flat=True).first()
            outcome = _at_once(scene, item, assignments, codes, seen or 0)
            assert not outcome.errors, outcome.errors
            _check(scene, item, assignments, codes, seen or 0, outcome)


def _at_once(
    scene: Scene, item: Item, assignments: list[Assignment], codes: Codes, seen: int
) -> Outcome:
    outcome = Outcome()
    start = threading.Barrier(3 if codes[2] else 2)

    def annotate(assignment: Assignment, user: Any, code: str) -> None:
        start.wait()
        labels = scene.world.labels(screening="relevant", symptom=code)
        submit_annotation(assignment=assignment, user=user, labels=labels, notes=f"{code} note")

    def adjudicate(code: str) -> None:
        start.wait()
        labels = scene.world.labels(screening="relevant", symptom=code)
        try:
            outcome.adjudicated = adjudicate_item(
                item=item,
                user=scene.adjudicator,
                labels=labels,
                reason="annotator-slip",
                comment=f"chose {code}",
                version=seen,
            )
        except DecisionConflict:
            outcome.refused = True

    def run(work: Any, *args: Any) -> None:
        try:
            work(*args)
        except BaseException as error:
            outcome.errors.append(error)
        finally:
            connection.close()

    threads = [
        threading.Thread(
            target=run, args=(annotate, assignments[0], scene.annotators[0], codes[0])
        ),
        threading.Thread(
            target=run, args=(annotate, assignments[1], scene.annotators[1], codes[1])
        ),
    ]
    if codes[2]:
        threads.append(threading.Thread(target=run, args=(adjudicate, codes[2])))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (deadlock?)"
    return outcome


def _check(
    scene: Scene,
    item: Item,
    assignments: list[Assignment],
    codes: Codes,
    seen: int,
    outcome: Outcome,
) -> None:
    # No lost write: each annotation holds exactly what its annotator sent last.
    for assignment, code in zip(assignments, codes[:2], strict=False):
        annotation = Annotation.objects.get(assignment=assignment)
        assert (annotation.status, annotation.notes) == ("submitted", f"{code} note")
        assert _labels(AnnotationLabel.objects.filter(annotation=annotation)) == _sent(scene, code)
    assert Item.objects.get(pk=item.pk).submitted_count == 2
    # One decision, and the right one.
    decisions = list(Decision.objects.filter(item=item))
    assert len(decisions) <= 1
    decision = decisions[0] if decisions else None
    facets = list(
        Facet.objects.filter(version=scene.world.version)
        .order_by("order", "pk")
        .values_list("pk", flat=True)
    )
    final_sets = submitted_label_sets(item.pk)
    verdict = decide(final_sets, facets, majority=False)
    if codes[2] is not None:
        _check_adjudicator(scene, codes[2], seen, outcome, decision)
    if decision is None or decision.is_automatic:
        # An automatic decision is the rules' verdict on the annotations as they are now.
        assert (decision.source if decision else None) == verdict.source
        if decision is not None:
            expected = {(f, c) for f, cs in verdict.labels.items() for c in cs}
            assert (
                set(
                    DecisionLabel.objects.filter(decision=decision).values_list(
                        "facet_id", "category_id"
                    )
                )
                == expected
            )
    agreement = ItemAgreement.objects.get(item=item)
    assert agreement.value == pytest.approx(item_agreement(final_sets, facets))
    _check_history(item, decision)


def _check_adjudicator(
    scene: Scene, code: str, seen: int, outcome: Outcome, decision: Decision | None
) -> None:
    if outcome.adjudicated is not None:
        # The adjudicator's compare-and-set moved the version they saw one step on, and no
        # automatic rule overwrote their decision afterwards.
        assert outcome.adjudicated.version == seen + 1
        assert decision is not None and decision.source == "adjudicated"
        assert decision.decided_by_id == scene.adjudicator.pk
        assert _labels(DecisionLabel.objects.filter(decision=decision)) == _sent(scene, code)
    else:
        # Refused only because someone else wrote (or withdrew) the decision since the
        # version seen.
        assert outcome.refused
        assert decision is None or decision.version != seen


def _check_history(item: Item, decision: Decision | None) -> None:
    """The decision's audit trail is one chain: each change starts where the last one ended,
    and the last one ends at the decision as it is."""
    changes = list(
        Change.objects.filter(item=item, subject=Change.Subject.DECISION).order_by("at", "pk")
    )
    previous = None
    for change in changes:
        assert change.before == previous, "two writers recorded from the same state"
        previous = change.after
    assert previous == decision_snapshot(decision)


def _labels(rows: Any) -> set[tuple[str, str]]:
    return set(rows.values_list("facet__key", "category__code"))


def _sent(scene: Scene, code: str) -> set[tuple[str, str]]:
    labels = scene.world.labels(screening="relevant", symptom=code)
    ids = [c for cs in labels.values() for c in cs]
    rows = Category.objects.filter(pk__in=ids)
    return set(rows.values_list("facet__key", "code"))
