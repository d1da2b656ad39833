"""When the owner and adjudicators see a machine rater's labels for an item: only once every
human label the item needs is submitted (its submitted count reached its quota), so nobody who
still labels or decides blind is steered by them; and not while they chose to hide them (a
toggle kept in their session, per study). Annotators never see them: no route gives them this.
Machine labels never decide an item: they are shown beside the humans', never taken into a
decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Item, Membership

from .models import MachineCall


def hidden_key(study_id: int) -> str:
    return f"machine-labels-hidden:{study_id}"


def humans_done(item: Item) -> bool:
    """Every human label the item needs is in (and it needs some)."""
    return item.quota > 0 and item.submitted_count >= item.quota


@dataclass
class ItemMachineLabels:
    """What an item page shows of machine answers: nothing, a note, or the answers."""

    exists: bool
    humans_done: bool
    hidden: bool
    answers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def shown(self) -> bool:
        return self.exists and self.humans_done and not self.hidden


def item_machine_labels(
    item: Item, membership: Membership, session: Any
) -> ItemMachineLabels | None:
    """For an owner or adjudicator: the item's kept machine answers, when they may be shown;
    None for anyone else (an annotator) and for an item no rater answered."""
    if not membership.sees_all_labels:
        return None
    calls = MachineCall.objects.filter(item=item).exclude(outcome=MachineCall.Outcome.FAILED)
    done = humans_done(item)
    hidden = bool(session.get(hidden_key(item.study_id)))
    if not done or hidden:
        exists = calls.exists()
        return ItemMachineLabels(exists, done, hidden) if exists else None
    rows = list(calls.select_related("rater").order_by("rater__name", "sample"))
    if not rows:
        return None
    names = _names(item)
    answers = [_answer(call, names) for call in rows]
    return ItemMachineLabels(True, done, hidden, answers)


def _names(item: Item) -> dict[tuple[str, str], str]:
    schema = codebook_schema(item.study.codebook_version)
    facets = {(f.key, ""): f.name for f in schema.facets}  # first: they keep the facet order
    return facets | {(f.key, c.code): c.name for f in schema.facets for c in f.categories}


def _answer(call: MachineCall, names: dict[tuple[str, str], str]) -> dict[str, Any]:
    given = call.labels or {}
    order = [key for key, code in names if code == ""]  # the codebook's facet order
    keys = [k for k in order if k in given] + sorted(set(given) - set(order))
    labels = [
        (names.get((key, ""), key), [names.get((key, code), code) for code in given[key]])
        for key in keys
    ]
    return {"call": call, "rater": call.rater, "labels": labels}
