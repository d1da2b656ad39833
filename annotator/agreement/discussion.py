# ruff: noqa: RUF002, RUF003 -- α is the notation of the statistics.
"""Agreement after discussion, reported apart from the blind agreement.

Once an item is released for discussion its annotators read each other's labels; what they
submit afterwards is a revision beside their blind labels (`Annotation.revision`), never a
change to them. Every agreement run, the disagreement queue, decisions and exports read the
blind labels. This module compares, on the released items alone, the blind labels with the
labels after discussion (an annotator's revision, or their blind labels where they revised
nothing): per facet, the items, how many an annotator revised in that facet, the share of
items on which all annotators agree and Krippendorff's α (nominal; MASI for multi-choice
facets, as the runs' headline), before and after.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, Study

from .stats import krippendorff_alpha

Cell = Any  # a code, a frozenset of codes (multi-choice) or None (not labelled)


@dataclass(frozen=True)
class Side:
    unanimous: int  # items on which every annotator who labelled the facet gave the same label
    alpha: float | None  # None: undefined (too few items or no variation)
    alpha_reason: str


@dataclass(frozen=True)
class FacetAfterDiscussion:
    key: str
    name: str
    items: int  # released items with labels of two annotators or more in this facet
    revised: int  # of which an annotator changed this facet after discussion
    blind: Side
    after: Side


def after_discussion(study: Study) -> list[FacetAfterDiscussion]:
    """Per facet of the study's codebook version, blind against after-discussion agreement on
    the items released for discussion; empty when no item was released."""
    annotations = list(
        Annotation.objects.filter(
            assignment__item__study=study,
            assignment__item__released_at__isnull=False,
            status=Annotation.Status.SUBMITTED,
        ).values_list("pk", "assignment__item_id", "assignment__annotator_id", "revision")
    )
    if not annotations:
        return []
    blind: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    rows = AnnotationLabel.objects.filter(annotation__in=[a[0] for a in annotations])
    for annotation_id, key, code in rows.values_list(
        "annotation_id", "facet__key", "category__code"
    ):
        blind[annotation_id][key].append(code)
    schema = codebook_schema(study.codebook_version)
    out = []
    for facet in schema.facets:
        before: dict[int, dict[int, Cell]] = defaultdict(dict)
        after: dict[int, dict[int, Cell]] = defaultdict(dict)
        changed: set[int] = set()
        for pk, item, annotator, revision in annotations:
            first = _cell(blind[pk].get(facet.key, []), facet.is_multi)
            now = first
            if revision:
                now = _cell(revision["labels"].get(facet.key, []), facet.is_multi)
            before[item][annotator], after[item][annotator] = first, now
            if now != first:
                changed.add(item)
        items = [i for i in before if sum(c is not None for c in before[i].values()) >= 2]
        raters = sorted({a for i in items for a in before[i]})
        out.append(
            FacetAfterDiscussion(
                key=facet.key,
                name=facet.name,
                items=len(items),
                revised=len(changed & set(items)),
                blind=_side(before, items, raters, facet.is_multi),
                after=_side(after, items, raters, facet.is_multi),
            )
        )
    return out


def _cell(codes: list[str], multi: bool) -> Cell:
    if not codes:
        return None
    return frozenset(codes) if multi else sorted(codes)[0]


def _side(
    cells: dict[int, dict[int, Cell]], items: list[int], raters: list[int], multi: bool
) -> Side:
    unanimous = sum(len({c for c in cells[i].values() if c is not None}) == 1 for i in items)
    if not items:
        return Side(unanimous=0, alpha=None, alpha_reason="no released item with two labels")
    table = [[cells[i].get(r) for r in raters] for i in items]
    result = krippendorff_alpha(table, distance="masi" if multi else None)
    return Side(unanimous=unanimous, alpha=result.value, alpha_reason=result.undefined_reason or "")
