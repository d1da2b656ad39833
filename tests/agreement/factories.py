# ruff: noqa: RUF002, RUF003 -- α, κ and × are the notation of the statistics.
"""A study whose annotators have submitted labels, for the agreement job and page tests."""

from __future__ import annotations

import random
from typing import Any

from annotator.studies.models import Annotation, AnnotationLabel
from annotator.studies.services import next_assignment, submit_annotation
from tests.studies.factories import World, make_world

SCREENING = ["relevant", "not-a-bug"]
SYMPTOMS = ["failure", "hang", "oom", "crash", "slow", "other"]
FIXES = ["version", "config"]


def labelled_world(
    *,
    items: int = 12,
    annotators: int = 3,
    seed: int = 0,
    skip_last: int = 0,
    agreement: float = 0.7,
) -> World:
    """`items` issues, each labelled by every annotator (k = annotators) through the studies
    services, with agreement neither perfect nor absent (each label set copies the item's
    "true" one with probability `agreement`, else is drawn afresh); the last annotator leaves
    `skip_last` items unlabelled."""
    world = make_world(items=items, k=annotators, annotators=annotators)
    rng = random.Random(seed)
    truth = {issue.pk: _draw(rng) for issue in world.issues}
    for n, person in enumerate(world.annotators):
        todo = items - (skip_last if n == len(world.annotators) - 1 else 0)
        for _ in range(todo):
            assignment = next_assignment(study=world.study, annotator=person)
            assert assignment is not None
            chosen = truth[assignment.item.issue_id] if rng.random() < agreement else _draw(rng)
            submit_annotation(assignment=assignment, user=person, labels=world.labels(**chosen))
    return world


def _draw(rng: random.Random) -> dict[str, Any]:
    labels: dict[str, Any] = {"screening": rng.choice(SCREENING)}
    if rng.random() < 0.9:
        labels["symptom"] = rng.choice(SYMPTOMS)
    labels["fix"] = rng.sample(FIXES, rng.choice([0, 1, 1, 2]))
    return labels


def direct_tables(world: World) -> dict[str, tuple[list[list[Any]], list[str]]]:
    """facet key → (units × raters rows, declared categories), read row by row through the ORM
    (the slow obvious way), to check the bridge against."""
    raters = sorted(a.pk for a in world.annotators)
    cells: dict[str, dict[int, dict[int, Any]]] = {}
    labels = AnnotationLabel.objects.filter(
        annotation__status=Annotation.Status.SUBMITTED,
        annotation__assignment__item__study=world.study,
    ).select_related("facet", "category", "annotation__assignment")
    for label in labels:
        assignment = label.annotation.assignment
        unit = cells.setdefault(label.facet.key, {}).setdefault(assignment.item_id, {})
        if label.facet.kind == "multi":
            unit.setdefault(assignment.annotator_id, set()).add(label.category.code)
        else:
            unit[assignment.annotator_id] = label.category.code
    out = {}
    for facet in world.study.codebook_version.facets.order_by("order", "pk"):
        declared = list(facet.categories.filter(archived=False).values_list("code", flat=True))
        units = cells.get(facet.key, {})
        rows = [[units[item].get(r) for r in raters] for item in sorted(units)]
        out[facet.key] = (rows, declared)
    return out
