"""The side-by-side table of the adjudicate page: per facet, each annotator's labels, with the
labels not everyone chose marked, built from already-loaded rows (no queries)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotator.studies.codebook import CodebookSchema, FacetNode
from annotator.studies.models import Annotation


@dataclass
class Cell:
    index: int  # the annotator's column, 1-based: the key that takes their labels
    ids: list[int]
    labels: list[tuple[str, str, bool]] = field(default_factory=list)  # code, name, not shared
    unsure: bool = False  # the annotator marked this facet unsure

    @property
    def ids_text(self) -> str:
        return ",".join(map(str, self.ids))


@dataclass
class Row:
    facet: FacetNode
    cells: list[Cell]
    differs: bool

    @property
    def agreed(self) -> list[int]:
        return [] if self.differs or not self.cells else self.cells[0].ids


def compare(schema: CodebookSchema, annotations: Sequence[Annotation]) -> list[Row]:
    """One row per facet of the codebook (plus facets only old labels use, e.g. of a version
    the study left); `annotations` must have `labels` prefetched with facet and category."""
    by_facet: dict[int, list[list[Any]]] = {}
    extra: dict[int, Any] = {}
    for column, annotation in enumerate(annotations):
        for label in annotation.labels.all():
            columns = by_facet.setdefault(label.facet_id, [[] for _ in annotations])
            columns[column].append(label)
            if schema.facet(label.facet_id) is None:
                extra.setdefault(label.facet_id, label.facet)
    rows: list[Row] = []
    facets: list[Any] = [*schema.facets, *extra.values()]
    for facet in facets:
        node = facet if isinstance(facet, FacetNode) else _loose(facet)
        columns = by_facet.get(node.id, [[] for _ in annotations])
        sets = [frozenset(label.category_id for label in column) for column in columns]
        shared = frozenset.intersection(*sets) if sets else frozenset()
        cells = [
            Cell(
                index=i + 1,
                ids=sorted(sets[i]),
                labels=[
                    (lb.category.code, lb.category.name, lb.category_id not in shared)
                    for lb in column
                ],
                unsure=node.key in annotations[i].unsure,
            )
            for i, column in enumerate(columns)
        ]
        rows.append(Row(facet=node, cells=cells, differs=len(set(sets)) > 1))
    return rows


def _loose(facet: Any) -> FacetNode:
    return FacetNode(
        id=facet.pk,
        key=facet.key,
        name=f"{facet.name} (earlier codebook version)",
        kind=facet.kind,
        required=False,
        help="",
        categories=(),
        other_id=None,
    )
