# ruff: noqa: RUF002, RUF003 -- α, κ and × are the notation of the statistics.
"""The ORM → numpy bridge: submitted labels of a study as one units × raters table per facet.

Two SQL statements read the scope (see `_fetch`; they live in sql.py; on SQLite, the local
demo, two plain querysets instead). PostgreSQL packs each column into one
`bytea` (`string_agg(int8send(id))`), so 1.2 million labels arrive as a few buffers that
`numpy.frombuffer` reads without a Python object per row; every aggregate of one query sees the
rows in the same order, so the columns stay aligned. Tables are then built in numpy:
units are items, raters are annotators (the same columns in every facet).

Conventions (recorded in each run's `inputs`):
- only submitted annotations on the run's codebook version count; drafts never do;
- a facet an annotator left empty is a missing rating (not an empty set);
- a multi-choice facet's cell is the set of categories chosen; a single-choice facet's the one;
- the declared categories are the codebook version's active categories of the facet, in
  display order (plus any archived one somebody used, so nothing is silently dropped).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from django.contrib.auth import get_user_model
from django.db import connection

from annotator.studies.codebook import CategoryNode, FacetNode, codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, GoldAnswer, Item, Round
from taxonomy_app.models import Category, CodebookVersion

from .sql import label_columns, submitted_annotation_columns
from .stats import RatingTable

IntArray = npt.NDArray[np.int64]
CONVENTIONS = [
    "only submitted annotations on the run's codebook version count",
    "a facet an annotator left empty is a missing rating",
    "a multi-choice facet's rating is the set of categories chosen",
    "declared categories: the codebook version's active categories of the facet",
    "units are items, raters are annotators",
    "items with a gold answer are left out unless the study counts them",
]


@dataclass(frozen=True)
class FacetTable:
    """One facet's units × raters table, with what the report shows beside it."""

    key: str
    name: str
    kind: str
    table: RatingTable
    items: IntArray  # item id of each unit (row)
    categories: list[dict[str, Any]]  # code, name, parent code, in declared order
    parent: dict[str, str | None] | None  # the hierarchy, when the facet has one

    @property
    def multilabel(self) -> bool:
        return self.table.multilabel


@dataclass(frozen=True)
class LabelTable:
    facets: list[FacetTable]
    raters: list[dict[str, Any]]  # {"id", "username"} per column
    labels: int
    digest: str
    counts: dict[str, int] = field(default_factory=dict)
    # facet key → values an import left out of the labels (prior_left_out): missing ratings
    # that are the import's choice, not the annotators'.
    left_out: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_label_table(
    *,
    study_id: int,
    version: CodebookVersion,
    round_id: int | None = None,
    facet_keys: Sequence[str] = (),
) -> LabelTable:
    """Every submitted label of the study (or one round) on `version`, as numpy tables."""
    schema = codebook_schema(version)
    facets = [f for f in schema.facets if not facet_keys or f.key in facet_keys]
    unknown = set(facet_keys) - {f.key for f in facets}
    if unknown:
        raise ValueError(f"unknown facet keys for codebook version {version.pk}: {sorted(unknown)}")
    columns, counts = _fetch(study_id, version.pk, round_id, [f.id for f in facets])
    item, rater, facet, category = columns
    rater_ids = _distinct(rater)
    extra = _archived_categories(set(_distinct(category).tolist()) - set(schema.facet_of))
    tables = [
        _facet_table(node, extra.get(node.id, []), item, rater, facet, category, rater_ids)
        for node in facets
    ]
    return LabelTable(
        facets=tables,
        raters=_raters(rater_ids),
        labels=len(item),
        digest=_digest(item, rater, facet, category),
        counts=counts,
        left_out=prior_left_out(study_id, round_id, [f.key for f in facets]),
    )


def prior_left_out(
    study_id: int, round_id: int | None, facet_keys: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per facet, the raw values the prior-label import of the round (or of each imported round
    of the study) mapped to "ignore" or "propose", so wrote as no label: {"values": [{"value",
    "mapped_to", "cells", "round"}], "ratings_removed": n}, from `Round.prior_import`
    (annotator/exports/prior.py import_record). Facets with nothing left out are not listed."""
    rounds = Round.objects.filter(study_id=study_id).exclude(prior_import={})
    if round_id is not None:
        rounds = rounds.filter(pk=round_id)
    out: dict[str, dict[str, Any]] = {}
    for number, record in rounds.order_by("number").values_list("number", "prior_import"):
        for key, entry in (record.get("left_out") or {}).items():
            if key not in facet_keys:
                continue
            found = out.setdefault(key, {"values": [], "ratings_removed": 0})
            found["values"] += [{**value, "round": number} for value in entry["values"]]
            found["ratings_removed"] += int(entry["ratings_removed"])
    return {key: out[key] for key in facet_keys if key in out}


def _fetch(
    study_id: int, version_id: int, round_id: int | None, facet_ids: list[int]
) -> tuple[tuple[IntArray, IntArray, IntArray, IntArray], dict[str, int]]:
    """(item, annotator, facet, category) per label, and the counts `inputs` records.

    Two statements: the scope's submitted annotations (a few hundred thousand rows), then the
    labels of the facets within their id range, matched to them in numpy. One four-way join
    made PostgreSQL probe 1.2 million label rows through three hash tables (~0.9 s at 100,000
    items); this reads the same rows in ~0.6 s.
    """
    annotation, version, item, annotator = _scope(study_id, round_id)
    gold = _gold_left_out(study_id, round_id)
    duplicates = _duplicates_left_out(study_id, round_id)
    if gold.size or duplicates.size:
        kept = ~np.isin(item, np.concatenate([gold, duplicates]))
        annotation, version, item, annotator = (
            c[kept] for c in (annotation, version, item, annotator)
        )
    on_version = version == version_id
    counts = {
        "gold_left_out": int(gold.size),
        "duplicates_left_out": int(duplicates.size),
        "items": _item_count(study_id, round_id),
        "annotations": len(annotation),
        "other_version": int((~on_version).sum()),
        "items_labelled": len(_distinct(item[on_version])),
    }
    annotation, item, annotator = annotation[on_version], item[on_version], annotator[on_version]
    if not len(annotation):
        empty = np.zeros(0, dtype=np.int64)
        return (empty, empty, empty, empty), counts
    label_annotation, facet, category = _labels(
        facet_ids, int(annotation.min()), int(annotation.max())
    )
    match = _positions(annotation, label_annotation)
    mine = match >= 0  # the id range may hold other studies' labels
    match = match[mine]
    return (item[match], annotator[match], facet[mine], category[mine]), counts


# Ids are looked up through a table indexed by id when their range is at most this many times
# their number (an array of that range), else by sorting.
DENSE_RANGE = 16


def _positions(ids: IntArray, wanted: IntArray) -> IntArray:
    """Where each of `wanted` is in `ids` (distinct), or -1 where it is not."""
    if not len(ids) or not len(wanted):
        return np.full(len(wanted), -1, dtype=np.int64)
    low, high = int(ids.min()), int(ids.max())
    if high - low + 1 <= DENSE_RANGE * len(ids):
        slot = np.full(high - low + 1, -1, dtype=np.int64)
        slot[ids - low] = np.arange(len(ids))
        inside = (wanted >= low) & (wanted <= high)
        out = np.full(len(wanted), -1, dtype=np.int64)
        out[inside] = slot[wanted[inside] - low]
        return out
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids, wanted, sorter=order), len(order) - 1)
    match = order[at]
    return np.where(ids[match] == wanted, match, -1)


def _distinct(values: IntArray) -> IntArray:
    """`np.unique(values)` for non-negative ids, by a table indexed by id when their range
    allows (DENSE_RANGE), without sorting or hashing."""
    if not len(values):
        return np.unique(values)
    low, high = int(values.min()), int(values.max())
    if high - low + 1 > DENSE_RANGE * len(values):
        return np.unique(values)
    present = np.zeros(high - low + 1, dtype=bool)
    present[values - low] = True
    return np.flatnonzero(present) + low


def _unique_inverse(values: IntArray) -> tuple[IntArray, IntArray]:
    """`np.unique(values, return_inverse=True)` for non-negative ids, by a table indexed by
    id when their range allows (DENSE_RANGE), without sorting."""
    if not len(values):
        return np.unique(values, return_inverse=True)
    low, high = int(values.min()), int(values.max())
    if high - low + 1 > DENSE_RANGE * len(values):
        return np.unique(values, return_inverse=True)
    present = np.zeros(high - low + 1, dtype=bool)
    present[values - low] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present) + low, rank[values - low]


def _gold_left_out(study_id: int, round_id: int | None) -> IntArray:
    """Ids of the items with a gold answer, unless the study counts them in agreement
    (Study.gold_in_agreement): chosen to teach or to check, not at random."""
    golds = GoldAnswer.objects.filter(item__study_id=study_id, item__study__gold_in_agreement=False)
    if round_id is not None:
        golds = golds.filter(item__round_id=round_id)
    return np.fromiter(golds.values_list("item_id", flat=True), dtype=np.int64)


def _duplicates_left_out(study_id: int, round_id: int | None) -> IntArray:
    """Ids of the items whose issue the study's owners marked a duplicate, not included anyway
    (annotator/similarity): one bug counted once."""
    from annotator.similarity.marks import duplicate_issue_ids

    issues = duplicate_issue_ids(study=study_id)
    if not issues:
        return np.zeros(0, dtype=np.int64)
    items = Item.objects.filter(study_id=study_id, issue_id__in=issues)
    if round_id is not None:
        items = items.filter(round_id=round_id)
    return np.fromiter(items.values_list("pk", flat=True), dtype=np.int64)


def _scope(study_id: int, round_id: int | None) -> list[IntArray]:
    if connection.vendor != "postgresql":  # the embedded SQLite demo: plain rows
        rows = Annotation.objects.filter(
            assignment__item__study_id=study_id, status=Annotation.Status.SUBMITTED
        )
        if round_id is not None:
            rows = rows.filter(assignment__item__round_id=round_id)
        fields = ("id", "codebook_version_id", "assignment__item_id", "assignment__annotator_id")
        return _row_columns(rows.values_list(*fields), len(fields))
    return submitted_annotation_columns(study_id=study_id, round_id=round_id)


def _labels(facet_ids: list[int], low: int, high: int) -> list[IntArray]:
    if connection.vendor != "postgresql":
        rows = AnnotationLabel.objects.filter(
            facet_id__in=facet_ids, annotation_id__gte=low, annotation_id__lte=high
        ).values_list("annotation_id", "facet_id", "category_id")
        return _row_columns(rows, 3)
    return label_columns(facet_ids=facet_ids, low=low, high=high)


def _row_columns(rows: Any, width: int) -> list[IntArray]:
    table = np.array(list(rows), dtype=np.int64).reshape(-1, width)
    return [np.ascontiguousarray(table[:, k]) for k in range(width)]


def _item_count(study_id: int, round_id: int | None) -> int:
    items = Item.objects.filter(study_id=study_id)
    return (items.filter(round_id=round_id) if round_id is not None else items).count()


def _facet_table(
    node: FacetNode,
    archived: list[CategoryNode],
    item: IntArray,
    rater: IntArray,
    facet: IntArray,
    category: IntArray,
    rater_ids: IntArray,
) -> FacetTable:
    declared = [*node.categories, *archived]
    mine = facet == node.id
    units, row = _unique_inverse(item[mine])
    column = np.searchsorted(rater_ids, rater[mine])
    ids = np.array([c.id for c in declared], dtype=np.int64)
    order = np.argsort(ids)
    position = order[np.searchsorted(ids, category[mine], sorter=order)]
    codes_of = [c.code for c in declared]
    shape = (len(units), len(rater_ids))
    build = _multi_codes if node.is_multi else _single_codes
    codes, values = build(shape, row, column, position, codes_of)
    table = RatingTable(
        codes=codes,
        values=tuple(values),
        labels=tuple(codes_of),
        declared=True,
        multilabel=node.is_multi,
        raters=tuple(int(r) for r in rater_ids),
    )
    by_id = {c.id: c.code for c in declared}
    parent = {c.code: by_id.get(c.parent_id) if c.parent_id else None for c in declared}
    categories = [{"code": c.code, "name": c.name, "parent": parent[c.code]} for c in declared]
    hierarchical = any(p is not None for p in parent.values())
    return FacetTable(
        key=node.key,
        name=node.name,
        kind=node.kind,
        table=table,
        items=units,
        categories=categories,
        parent=parent if hierarchical else None,
    )


def _single_codes(
    shape: tuple[int, int], row: IntArray, column: IntArray, position: IntArray, codes: list[str]
) -> tuple[IntArray, list[Any]]:
    out = np.full(shape, -1, dtype=np.int64)
    out[row, column] = position
    return out, list(codes)


def _multi_codes(
    shape: tuple[int, int], row: IntArray, column: IntArray, position: IntArray, codes: list[str]
) -> tuple[IntArray, list[Any]]:
    """Each cell's set of categories as a bitmask, then the distinct sets as values."""
    if len(codes) > 63:
        return _multi_codes_wide(shape, row, column, position, codes)
    bits = np.zeros(shape, dtype=np.int64)
    np.bitwise_or.at(bits, (row, column), np.left_shift(1, position))
    present = np.zeros(shape, dtype=bool)
    present[row, column] = True
    masks, inverse = np.unique(bits[present], return_inverse=True)
    members = [[j for j in range(len(codes)) if (int(mask) >> j) & 1] for mask in masks]
    # The order encode_table gives label sets: by their sorted category positions.
    order = sorted(range(len(masks)), key=lambda i: members[i])
    rank = np.empty(len(masks), dtype=np.int64)
    rank[order] = np.arange(len(masks))
    out = np.full(shape, -1, dtype=np.int64)
    out[present] = rank[inverse]
    values = [frozenset(codes[j] for j in members[i]) for i in order]
    return out, values


def _multi_codes_wide(
    shape: tuple[int, int], row: IntArray, column: IntArray, position: IntArray, codes: list[str]
) -> tuple[IntArray, list[Any]]:
    cells: dict[tuple[int, int], set[int]] = {}
    for r, c, p in zip(row.tolist(), column.tolist(), position.tolist(), strict=True):
        cells.setdefault((r, c), set()).add(p)
    keys = {cell: tuple(sorted(ps)) for cell, ps in cells.items()}
    distinct = sorted(set(keys.values()))
    index = {key: i for i, key in enumerate(distinct)}
    out = np.full(shape, -1, dtype=np.int64)
    for (r, c), key in keys.items():
        out[r, c] = index[key]
    return out, [frozenset(codes[j] for j in key) for key in distinct]


def _archived_categories(ids: set[int]) -> dict[int, list[CategoryNode]]:
    """Categories somebody used that the version no longer lists as active, by facet id."""
    out: dict[int, list[CategoryNode]] = {}
    for c in Category.objects.filter(pk__in=ids).order_by("order", "pk"):
        node = CategoryNode(
            id=c.pk,
            code=c.code,
            name=c.name,
            definition="",
            include="",
            exclude="",
            examples="",
            depth=0,
            parent_id=c.parent_id,
            path=c.name,
        )
        out.setdefault(c.facet_id, []).append(node)
    return out


def _raters(ids: IntArray) -> list[dict[str, Any]]:
    names = dict(get_user_model().objects.filter(pk__in=ids.tolist()).values_list("pk", "username"))
    return [{"id": int(i), "username": names.get(int(i), str(i))} for i in ids]


def _digest(*columns: IntArray) -> str:
    """An order-independent SHA-256 of the label rows: each row mixed to 64 bits and summed
    (wrapping), so the rows need no sort; the count is hashed beside the sum."""
    with np.errstate(over="ignore"):
        mixed = np.zeros(len(columns[0]), dtype=np.uint64)
        for k, column in enumerate(columns):
            x = column.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15 * (k + 1) % 2**64)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            mixed = (mixed * np.uint64(31)) + (x ^ (x >> np.uint64(31)))
        total = int(mixed.sum(dtype=np.uint64))
    return hashlib.sha256(f"{len(columns[0])}:{total}".encode()).hexdigest()
