"""Figures of the "unsure" marks for the dashboard and the progress API (read-only): per round,
how many submitted annotations marked each facet unsure, and per annotator how many of theirs
marked any. Drafts never count: a mark counts once it is submitted. Items whose issue is a
marked near-duplicate are left out, as from the dashboard's other figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..codebook import codebook_schema
from ..models import Annotation, Study
from .progress import duplicate_of_study


@dataclass(frozen=True)
class FacetUnsure:
    key: str
    name: str
    count: int  # submitted annotations that marked this facet unsure


@dataclass(frozen=True)
class UnsureFigures:
    facets: list[FacetUnsure]  # every facet of the study's codebook, in its order
    by_annotator: dict[str, int] = field(default_factory=dict)  # username → annotations
    annotations: int = 0  # submitted annotations with at least one facet marked unsure


def unsure_figures(*, study: Study) -> dict[int, UnsureFigures]:
    """By round id, for every round of the study: the unsure marks of its submitted
    annotations (near-duplicates left out). One query, over the annotations that carry a mark."""
    marked = (
        Annotation.objects.filter(assignment__item__study=study, status=Annotation.Status.SUBMITTED)
        .exclude(unsure=[])
        .exclude(duplicate_of_study(study, "assignment__item__issue_id"))
        .values_list("assignment__item__round_id", "assignment__annotator__username", "unsure")
    )
    facets: dict[int, Counter[str]] = {}
    people: dict[int, Counter[str]] = {}
    for round_id, username, keys in marked.iterator(chunk_size=2000):
        facets.setdefault(round_id, Counter()).update(set(keys))
        people.setdefault(round_id, Counter())[username] += 1
    schema = codebook_schema(study.codebook_version)
    return {
        round_id: UnsureFigures(
            facets=[
                FacetUnsure(f.key, f.name, facets.get(round_id, Counter())[f.key])
                for f in schema.facets
            ],
            by_annotator=dict(people.get(round_id, {})),
            annotations=sum(people.get(round_id, Counter()).values()),
        )
        for round_id in study.rounds.values_list("pk", flat=True)
    }
