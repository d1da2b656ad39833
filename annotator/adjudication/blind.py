"""Blind adjudication: with the study's `AdjudicationSettings.blind` on, an item's annotators
read as "Annotator A", "Annotator B"… until the item has a decision, on every page and API
route that shows who labelled it (adjudicate, discussion, history, the item page). Letters
follow the order the item was handed out (assignment time, then id), the order the adjudicate
page's columns and keys 1…9 follow, so A is the first column. Once decided, names show.

The person viewing keeps their own name ("you" knows who they are), and people who are not the
item's annotators (the adjudicator, an owner commenting) keep theirs: only annotators are hidden.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from typing import Any

from annotator.studies.models import Assignment, Item

from .models import AdjudicationSettings, Decision


class Names:
    """How to write a user of one item: `of(user)` gives their name or pseudonym."""

    def __init__(
        self, pseudonyms: dict[int, str], viewer_id: int | None, ids: dict[str, int] | None = None
    ) -> None:
        self.pseudonyms = pseudonyms
        self.viewer_id = viewer_id
        self.ids = ids or {}  # the hidden annotators' usernames → ids

    @property
    def hidden(self) -> bool:
        return bool(self.pseudonyms)

    def of(self, user: Any) -> str:
        if user is None:
            return ""
        if user.pk != self.viewer_id and user.pk in self.pseudonyms:
            return self.pseudonyms[user.pk]
        return str(user.get_username())

    def of_name(self, username: str | None) -> str | None:
        """A username as snapshots and API outputs carry it."""
        if username is None:
            return None
        user_id = self.ids.get(username)
        if user_id is not None and user_id != self.viewer_id and user_id in self.pseudonyms:
            return self.pseudonyms[user_id]
        return username


def letter(index: int) -> str:
    """A, B, … Z, AA, AB …"""
    letters = string.ascii_uppercase
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = letters[rest] + name
    return name


def is_blind(study_id: int) -> bool:
    return AdjudicationSettings.objects.filter(study=study_id, blind=True).exists()


def names_for(
    item: Item, viewer: Any, *, blind: bool | None = None, decided: bool | None = None
) -> Names:
    """The item's names for `viewer`: pseudonyms while the study is blind and the item has no
    decision, else nobody hidden. A caller that has read the settings or the decision says
    so (`blind`, `decided`), saving the query."""
    viewer_id = getattr(viewer, "pk", None)
    if not (is_blind(item.study_id) if blind is None else blind):
        return Names({}, viewer_id)
    if Decision.objects.filter(item=item).exists() if decided is None else decided:
        return Names({}, viewer_id)
    annotators = (
        Assignment.objects.filter(item=item)
        .order_by("assigned_at", "pk")
        .values_list("annotator_id", "annotator__username")
    )
    pseudonyms: dict[int, str] = {}
    ids: dict[str, int] = {}
    for annotator_id, username in annotators:
        pseudonyms.setdefault(annotator_id, f"Annotator {letter(len(pseudonyms))}")
        ids[username] = annotator_id
    return Names(pseudonyms, viewer_id, ids)


def name_annotations(annotations: Iterable[Any], names: Names) -> None:
    """Set `shown_name` on each annotation (its annotator as the viewer may read them)."""
    for annotation in annotations:
        annotation.shown_name = names.of(annotation.assignment.annotator)


def name_comments(comments: Iterable[Any], names: Names) -> None:
    for comment in comments:
        comment.shown_author = names.of(comment.author)


def name_changes(changes: Iterable[Any], names: Names) -> list[Any]:
    """The history's changes with `shown_user` set and the snapshots' `annotator` written as
    the viewer may read it (copies: the stored snapshots are not touched)."""
    changes = list(changes)
    for change in changes:
        change.shown_user = names.of(change.user) if change.user is not None else None
        if not names.hidden:
            continue
        for side in ("before", "after"):
            state = getattr(change, side)
            if isinstance(state, dict) and "annotator" in state:
                setattr(change, side, {**state, "annotator": names.of_name(state["annotator"])})
    return changes
