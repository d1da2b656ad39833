"""Builders for the adjudication tests: a study world plus an adjudicator, and a way to label
an item by several annotators (studies' submit path records the change and decides the item)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator.studies.models import Item, Membership
from annotator.studies.services import add_member, next_assignment, submit_annotation
from tests.factories import UserFactory
from tests.studies.factories import World, make_world


@dataclass
class Scene:
    world: World
    adjudicator: Any
    outsider: Any

    @property
    def study(self) -> Any:
        return self.world.study

    @property
    def owner(self) -> Any:
        return self.world.owner

    @property
    def annotators(self) -> list[Any]:
        return self.world.annotators


def make_scene(**world_options: Any) -> Scene:
    world = make_world(**world_options)
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    return Scene(world=world, adjudicator=adjudicator, outsider=UserFactory(username="outsider"))


def submit(scene: Scene, assignment: Any, user: Any, notes: str = "", **codes: Any) -> None:
    labels = scene.world.labels(screening="relevant", **codes)
    submit_annotation(assignment=assignment, user=user, labels=labels, notes=notes)


def label_next(scene: Scene, *per_annotator: dict[str, Any], notes: str = "") -> Item:
    """Each annotator in turn takes their next item and submits the given codes (breadth
    first, so they share the item). Returns that item."""
    item = None
    for user, codes in zip(scene.annotators, per_annotator, strict=False):
        assignment = next_assignment(study=scene.study, annotator=user)
        assert item is None or assignment.item_id == item.pk
        item = assignment.item
        submit(scene, assignment, user, notes=notes or f"notes of {user.username}", **codes)
    assert item is not None
    return Item.objects.get(pk=item.pk)
