"""The automatic decision rules and per-item agreement, on plain data (no ORM).

An item's labels arrive as one mapping per submitted annotation: facet id → set of category
ids (an empty set where the annotator chose nothing). "Unsure" marks (facet keys) do not enter
the agreement: they only decide whether an automatic decision may stand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from annotator.agreement.stats import masi_distance

LabelSets = Mapping[int, frozenset[int]]


@dataclass(frozen=True)
class Outcome:
    agreement: float
    disagreeing: tuple[int, ...]  # facet ids where the annotations differ
    source: str | None  # "unanimous", "majority", "single" or None: the item goes to the queue
    labels: dict[int, frozenset[int]] = field(default_factory=dict)
    unsure: tuple[str, ...] = ()  # keys of the facets some annotator marked unsure


def item_agreement(annotations: Sequence[LabelSets], facets: Sequence[int]) -> float:
    """Mean over facets of the mean pairwise agreement 1 - MASI distance (for a single-choice
    facet, p_o: the share of annotator pairs that chose the same category). Facets nobody
    labeled do not count; with none left the item agrees fully."""
    values = []
    for facet in facets:
        sets = [a.get(facet, frozenset()) for a in annotations]
        if not any(sets):
            continue
        pairs = [1.0 - masi_distance(x, y) for x, y in combinations(sets, 2)]
        values.append(sum(pairs) / len(pairs) if pairs else 1.0)
    return sum(values) / len(values) if values else 1.0


def decide(
    annotations: Sequence[LabelSets],
    facets: Sequence[int],
    *,
    majority: bool,
    unsure: Sequence[str] = (),
    route_unsure: bool = False,
) -> Outcome:
    """Unanimous where every annotation has the same labels in every facet; with `majority`
    and k ≥ 3, decided where in every facet more than half chose the same labels; otherwise
    undecided (the disagreement queue). `unsure`: the facets (keys) some annotator marked
    unsure; with `route_unsure` any of them leaves the item undecided, as a disagreement does
    (a person decides), whatever the labels. The agreement value ignores them."""
    agreement = item_agreement(annotations, facets)
    per_facet = {f: Counter(a.get(f, frozenset()) for a in annotations) for f in facets}
    disagreeing = tuple(f for f, counts in per_facet.items() if len(counts) > 1)
    if unsure and route_unsure:
        outcome = Outcome(agreement, disagreeing, None)
    else:
        outcome = _automatic(annotations, per_facet, disagreeing, agreement, majority=majority)
    return replace(outcome, unsure=tuple(unsure))


def _automatic(
    annotations: Sequence[LabelSets],
    per_facet: dict[int, Counter[frozenset[int]]],
    disagreeing: tuple[int, ...],
    agreement: float,
    *,
    majority: bool,
) -> Outcome:
    """The unanimous or majority decision the labels allow, else none; one annotation (a
    single-annotator item) stands as it is, as "single"."""
    if len(annotations) == 1:
        labels = {f: next(iter(c)) for f, c in per_facet.items()}
        return Outcome(agreement, disagreeing, "single", labels)
    if not disagreeing:
        labels = {f: next(iter(c)) for f, c in per_facet.items()}
        return Outcome(agreement, disagreeing, "unanimous", labels)
    if majority and len(annotations) >= 3:
        top = {f: c.most_common(1)[0] for f, c in per_facet.items()}
        if all(n * 2 > len(annotations) for _, n in top.values()):
            labels = {f: sets for f, (sets, _) in top.items()}
            return Outcome(agreement, disagreeing, "majority", labels)
    return Outcome(agreement, disagreeing, None)
