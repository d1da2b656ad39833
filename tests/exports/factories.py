"""A small study with submitted labels and decisions, for the export, analysis and API tests."""

from __future__ import annotations

from typing import Any

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Repository
from annotator.studies.models import Item
from annotator.studies.services import next_assignment, submit_annotation
from tests.factories import IssueFactory
from tests.studies.factories import World, make_world

# Per item (in position order): each annotator's labels, then the decision (or None).
LABELS: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None, str]] = [
    (
        {"screening": "relevant", "symptom": "hang", "fix": ["config"]},
        {"screening": "relevant", "symptom": "hang", "fix": ["config"]},
        {"screening": "relevant", "symptom": "hang", "fix": ["config"]},
        "unanimous",
    ),
    (
        {"screening": "relevant", "symptom": "oom", "fix": ["version", "config"]},
        {"screening": "relevant", "symptom": "crash", "fix": ["version"]},
        {"screening": "relevant", "symptom": "oom", "fix": ["version", "config"]},
        "adjudicated",
    ),
    (
        {"screening": "relevant", "symptom": "slow", "fix": []},
        {"screening": "relevant", "symptom": "slow", "fix": ["version"]},
        {"screening": "relevant", "symptom": "slow", "fix": ["version"]},
        "adjudicated",
    ),
    (
        {"screening": "not-a-bug"},
        {"screening": "not-a-bug"},
        {"screening": "not-a-bug"},
        "unanimous",
    ),
    ({"screening": "relevant", "symptom": "hang"}, {"screening": "not-a-bug"}, None, ""),
]


def exported_world() -> World:
    """Five issues (four in hpcaitech/ColossalAI, the last moved to microsoft/DeepSpeed), each
    labelled by both annotators; four decided."""
    world = make_world(items=len(LABELS))
    other = Repository.objects.create(owner="microsoft", name="DeepSpeed")
    items = list(Item.objects.filter(study=world.study).order_by("position", "pk"))
    last = items[-1].issue
    moved = IssueFactory(repository=other, number=last.number)
    Item.objects.filter(pk=items[-1].pk).update(issue=moved)
    order = {item.pk: n for n, item in enumerate(items)}
    for n, person in enumerate(world.annotators):
        for _ in items:
            assignment = next_assignment(study=world.study, annotator=person)
            assert assignment is not None
            chosen = LABELS[order[assignment.item_id]][n]
            submit_annotation(assignment=assignment, user=person, labels=world.labels(**chosen))
    for item in items:
        _, _, final, source = LABELS[order[item.pk]]
        decide(world, item, final, source)
    return world


def decide(world: World, item: Item, final: dict[str, Any] | None, source: str) -> None:
    Decision.objects.filter(item=item).delete()
    if final is None:
        return
    reason = "annotator-slip" if source == "adjudicated" else ""
    decision = Decision.objects.create(
        item=item, source=source, reason=reason, decided_by=world.owner
    )
    for facet_id, category_ids in world.labels(**final).items():
        for category_id in category_ids:
            DecisionLabel.objects.create(
                decision=decision, facet_id=facet_id, category_id=category_id
            )
