"""Gold answers: an owner's answer for an item, the feedback a training round gives right after
a submit (never before), and each annotator's accuracy against gold.

A label matches gold on a facet when the annotator chose exactly the gold categories there (the
same set; both empty counts as a match). Labels are compared by category code, so an
annotation made on an earlier codebook version is judged by the codes it carries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ..codebook import codebook_schema
from ..errors import LabelErrors, StudyError
from ..models import Annotation, AnnotationLabel, Assignment, GoldAnswer, Item, Round, Study


@transaction.atomic
def set_gold(
    *, item: Item, user: Any, labels: Mapping[int, Sequence[int]], rationale: str = ""
) -> GoldAnswer:
    """Set (or replace) `item`'s gold answer: category ids by facet id, validated like a submit
    (required facets, one category in a single-choice facet, the label rules), and the
    rationale annotators read after submitting. LabelErrors by facet key; nothing written.
    A closed round's gold answers never change (StudyError)."""
    _check_open(item)
    schema = codebook_schema(item.study.codebook_version)
    rows, errors = schema.validate_labels(labels, require=True)
    if len(rationale) > 10_000:
        errors["rationale"] = "at most 10,000 characters"
    if errors:
        raise LabelErrors(errors)
    gold, _ = GoldAnswer.objects.update_or_create(
        item=item,
        defaults={"labels": schema.codes(rows), "rationale": rationale.strip(), "set_by": user},
    )
    return gold


def clear_gold(*, item: Item) -> bool:
    """Remove `item`'s gold answer; False when it had none. Not in a closed round."""
    _check_open(item)
    deleted, _ = GoldAnswer.objects.filter(item=item).delete()
    return bool(deleted)


def gold_item_ids(study_id: int, round_id: int | None = None) -> set[int]:
    """Ids of the study's (or one round's) items with a gold answer."""
    golds = GoldAnswer.objects.filter(item__study_id=study_id)
    if round_id is not None:
        golds = golds.filter(item__round_id=round_id)
    return set(golds.values_list("item_id", flat=True))


def gold_after_submit(item_id: int) -> bool:
    """Whether a submit on this item leads to its gold answer (a training round's item with
    one): one query, on every submit."""
    return GoldAnswer.objects.filter(
        item_id=item_id, item__round__kind=Round.Kind.TRAINING
    ).exists()


@dataclass(frozen=True)
class FacetFeedback:
    key: str
    name: str
    mine: list[str]  # "CODE · name" of the categories the annotator chose
    gold: list[str]
    match: bool


@dataclass(frozen=True)
class Feedback:
    assignment: Assignment
    facets: list[FacetFeedback]
    rationale: str

    @property
    def matched(self) -> int:
        return sum(f.match for f in self.facets)


def feedback(assignment: Assignment) -> Feedback | None:
    """What a training round shows the annotator after their submit: their labels beside the
    gold answer per facet, and its rationale. None unless the round is a training round, the
    item has a gold answer and the assignment is submitted: before the submit, never."""
    item = assignment.item
    if assignment.status != Assignment.Status.SUBMITTED:
        return None
    if not Round.objects.filter(pk=item.round_id, kind=Round.Kind.TRAINING).exists():
        return None
    gold = GoldAnswer.objects.filter(item=item).first()
    if gold is None:
        return None
    mine = _codes_of([assignment.pk]).get(assignment.pk, {})
    schema = codebook_schema(item.study.codebook_version)
    names = {f.key: {c.code: c.name for c in f.categories} for f in schema.facets}
    facets = []
    for facet in schema.facets:
        chosen, answer = mine.get(facet.key, []), gold.labels.get(facet.key, [])
        words = names[facet.key]
        facets.append(
            FacetFeedback(
                key=facet.key,
                name=facet.name,
                mine=[f"{c} · {words.get(c, c)}" for c in chosen],
                gold=[f"{c} · {words.get(c, c)}" for c in answer],
                match=set(chosen) == set(answer),
            )
        )
    return Feedback(assignment=assignment, facets=facets, rationale=gold.rationale)


def _codes_of(assignment_ids: Sequence[int]) -> dict[int, dict[str, list[str]]]:
    """{assignment id: {facet key: sorted codes}} of the annotations of these assignments."""
    rows = AnnotationLabel.objects.filter(annotation__assignment_id__in=assignment_ids).values_list(
        "annotation__assignment_id", "facet__key", "category__code"
    )
    out: dict[int, dict[str, list[str]]] = defaultdict(dict)
    for assignment, key, code in rows:
        out[assignment].setdefault(key, []).append(code)
    for labels in out.values():
        for codes in labels.values():
            codes.sort()
    return dict(out)


@dataclass
class AnnotatorAccuracy:
    username: str
    items: int = 0  # gold items the annotator submitted
    exact: int = 0  # of them, every facet matching
    by_facet: dict[str, list[int]] = field(default_factory=dict)  # key → [matched, items]

    @property
    def exact_share(self) -> float | None:
        return self.exact / self.items if self.items else None

    def facet_share(self, key: str) -> float | None:
        matched, items = self.by_facet.get(key, [0, 0])
        return matched / items if items else None


@dataclass(frozen=True)
class GoldAccuracy:
    gold_items: int
    facets: list[tuple[str, str]]  # (key, name) in the codebook's order
    annotators: list[AnnotatorAccuracy]

    def rows(self) -> list[tuple[AnnotatorAccuracy, list[tuple[float | None, int, int]]]]:
        """Per annotator: (share, matched, items) per facet, in `facets` order."""
        out = []
        for a in self.annotators:
            cells = []
            for key, _ in self.facets:
                matched, items = a.by_facet.get(key, [0, 0])
                cells.append((a.facet_share(key), matched, items))
            out.append((a, cells))
        return out


def gold_accuracy(*, study: Study) -> GoldAccuracy:
    """Each annotator's accuracy against gold over the study's gold items they submitted (every
    round): per facet, the share of items where they chose exactly the gold categories, and the
    share with every facet right. Three queries whatever the study's size."""
    golds = dict(GoldAnswer.objects.filter(item__study=study).values_list("item_id", "labels"))
    schema = codebook_schema(study.codebook_version)
    facets = [(f.key, f.name) for f in schema.facets]
    submitted = list(
        Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED, assignment__item_id__in=list(golds)
        ).values_list("assignment_id", "assignment__item_id", "assignment__annotator__username")
    )
    codes = _codes_of([a for a, _, _ in submitted]) if submitted else {}
    people: dict[str, AnnotatorAccuracy] = {}
    for assignment, item, username in submitted:
        row = people.setdefault(username, AnnotatorAccuracy(username))
        mine, gold = codes.get(assignment, {}), golds[item]
        row.items += 1
        right = 0
        for key, _ in facets:
            match = sorted(mine.get(key, [])) == sorted(gold.get(key, []))
            counts = row.by_facet.setdefault(key, [0, 0])
            counts[0] += match
            counts[1] += 1
            right += match
        row.exact += right == len(facets)
    return GoldAccuracy(
        gold_items=len(golds), facets=facets, annotators=sorted(people.values(), key=_by_name)
    )


def _by_name(row: AnnotatorAccuracy) -> str:
    return row.username


def _check_open(item: Item) -> None:
    """Gold answers change only while the item's round is open: a closed round never changes
    (what its annotators were shown, and the accuracy measured on it, stay as they were)."""
    number = (
        Round.objects.filter(pk=item.round_id, closed_at__isnull=False)
        .values_list("number", flat=True)
        .first()
    )
    if number is not None:
        raise StudyError(f"round {number} is closed; its gold answers no longer change")
