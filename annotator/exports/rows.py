"""The ORM → rows bridge of the exports: a study's items, decisions and labels as row dicts.

Every query streams (`.iterator(chunk_size=5000)`, a server-side cursor on PostgreSQL) and is
ordered by item id, so the item rows and the label rows are merged in one pass, as a merge join,
without holding either. Row dicts follow the column contract in `writers.py`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Exists, F, OuterRef, QuerySet

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Repository
from annotator.params import int_or
from annotator.similarity.marks import duplicate_issue_ids
from annotator.studies.models import Annotation, AnnotationLabel, Item, Study
from taxonomy_app.models import Category, CodebookVersion, Facet

from .columns import FacetSpec, column_base

CHUNK = 5_000
FILTER_KEYS = ("round", "source", "screening", "repository")
SCREENING = "screening"


class ExportFilterError(ValueError):
    """A filter the export cannot apply; the message names it."""


@dataclass
class Codebook:
    """What turning category ids into columns needs, read once per export."""

    facets: list[FacetSpec]
    # category id → (facet key, code, codes from the top level down to it)
    categories: dict[int, tuple[str, str, tuple[str, ...]]] = field(default_factory=dict)
    order: dict[int, int] = field(default_factory=dict)  # category id → display rank
    names: dict[str, dict[str, str]] = field(default_factory=dict)  # facet → code → name
    versions: dict[int, int] = field(default_factory=dict)  # version id → number
    tops: dict[tuple[str, str], str] = field(default_factory=dict)  # (facet, code) → top code

    @functools.cached_property
    def by_key(self) -> dict[str, FacetSpec]:
        """Facet key → facet (the facets are set once, when the codebook is loaded)."""
        return {f.key: f for f in self.facets}

    def category(self, pk: int) -> tuple[str, str, tuple[str, ...]]:
        if pk not in self.categories:  # a label on another version's category: rare, look it up
            self._add(list(Category.objects.filter(pk=pk).select_related("facet")))
        return self.categories[pk]

    def top_level(self, key: str, code: str) -> str | None:
        """The top-level code above category `code` of facet `key` (itself at the top)."""
        return self.tops.get((key, code))

    def _add(self, categories: list[Category]) -> None:
        by_id = {c.pk: c for c in categories}
        for c in categories:
            path, node = [c.code], c
            while node.parent_id is not None and node.parent_id in by_id:
                node = by_id[node.parent_id]
                path.insert(0, node.code)
            self.categories[c.pk] = (c.facet.key, c.code, tuple(path))
            self.tops.setdefault((c.facet.key, c.code), path[0])
            self.order.setdefault(c.pk, len(self.order))
            self.names.setdefault(c.facet.key, {})[c.code] = c.name


def load_codebook(version: CodebookVersion) -> Codebook:
    """The version's facets (with their depth) and every category, archived ones included."""
    facets = list(Facet.objects.filter(version=version).order_by("order", "pk"))
    categories = list(
        Category.objects.filter(facet__version=version)
        .select_related("facet")
        .order_by("facet__order", "order", "pk")
    )
    book = Codebook(facets=[])
    book._add(categories)
    depth: dict[str, int] = {}
    for key, _, path in book.categories.values():
        depth[key] = max(depth.get(key, 1), len(path))
    for f in facets:
        if f.kind == Facet.Kind.MULTI:
            book.facets.append(FacetSpec(f.key, f.name, "multi"))
        else:
            book.facets.append(FacetSpec(f.key, f.name, "single", depth.get(f.key, 1)))
    book.versions = dict(CodebookVersion.objects.values_list("pk", "number"))
    return book


def filtered_items(study: Study, filters: dict[str, Any]) -> QuerySet[Item]:
    """The study's items that pass the export filters (round number, decision source, screening
    verdict code of the decision, repository owner/name), without the issues marked duplicates
    of others (annotator/similarity; the dataset card lists them)."""
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise ExportFilterError(f"unknown filters {sorted(unknown)}; use {list(FILTER_KEYS)}")
    items = Item.objects.filter(study=study)
    if duplicates := duplicate_issue_ids(study=study):  # marked duplicates, not included anyway
        items = items.exclude(issue_id__in=duplicates)
    if filters.get("round") not in (None, ""):
        number = int_or(filters["round"], -1)
        if number < 0:
            raise ExportFilterError(f"filter 'round': {filters['round']!r} is not a round number")
        items = items.filter(round__number=number)
    if filters.get("source"):
        if filters["source"] not in Decision.Source.values:
            raise ExportFilterError(
                f"filter 'source': {filters['source']!r} is not one of {Decision.Source.values}"
            )
        items = items.filter(decision__source=filters["source"])
    if filters.get("screening"):
        verdict = DecisionLabel.objects.filter(
            decision__item=OuterRef("pk"), facet__key=SCREENING, category__code=filters["screening"]
        )
        items = items.filter(Exists(verdict))
    if filters.get("repository"):
        repository = Repository.objects.named(str(filters["repository"]))
        if repository is None:
            raise ExportFilterError(f"filter 'repository': no repository {filters['repository']!r}")
        items = items.filter(issue__repository=repository)
    return items


ITEM_FIELDS = (
    "pk",
    "round__number",
    "issue__repository__owner",
    "issue__repository__name",
    "issue__number",
    "issue__html_url",
    "issue__title",
)


def _item_row(values: tuple[Any, ...]) -> dict[str, Any]:
    pk, number, owner, name, issue_number, url, title = values[:7]
    return {
        "item_id": pk,
        "round": number,
        "repository": f"{owner}/{name}",
        "number": issue_number,
        "url": url or f"https://github.com/{owner}/{name}/issues/{issue_number}",
        "title": title,
    }


def _groups(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, list[tuple[Any, ...]]]]:
    for key, group in itertools.groupby(rows, key=lambda r: r[0]):
        yield key, list(group)


def _merge(
    items: Iterable[tuple[Any, ...]], labels: Iterable[tuple[Any, ...]]
) -> Iterator[tuple[tuple[Any, ...], list[tuple[Any, ...]]]]:
    """Each item row with its label rows; both streams are ordered by item id (first value)."""
    groups = _groups(labels)
    pending = next(groups, None)
    for item in items:
        while pending is not None and pending[0] < item[0]:
            pending = next(groups, None)
        if pending is not None and pending[0] == item[0]:
            yield item, pending[1]
            pending = next(groups, None)
        else:
            yield item, []


class _Lookahead:
    """The groups of a stream ordered by item id (first value), taken by ascending item id: a
    third stream beside `_merge`'s two, without holding it."""

    def __init__(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self.groups = _groups(rows)
        self.pending = next(self.groups, None)

    def take(self, key: Any) -> list[tuple[Any, ...]]:
        while self.pending is not None and self.pending[0] < key:
            self.pending = next(self.groups, None)
        if self.pending is None or self.pending[0] != key:
            return []
        found = self.pending[1]
        self.pending = next(self.groups, None)
        return found


def _unsure_of_items(items: QuerySet[Item]) -> _Lookahead:
    """Per item, the unsure lists of its submitted annotations that have any."""
    rows = (
        Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED, assignment__item__in=items.values("pk")
        )
        .exclude(unsure=[])
        .order_by("assignment__item_id", "pk")
        .values_list("assignment__item_id", "unsure")
        .iterator(chunk_size=CHUNK)
    )
    return _Lookahead(rows)


def _in_facet_order(book: Codebook, keys: Iterable[str]) -> list[str]:
    """Facet keys once each, in the codebook's order (keys of no facet of it last)."""
    wanted = set(keys)
    known = [f.key for f in book.facets if f.key in wanted]
    return known + sorted(wanted - set(known))


def _fill_labels(row: dict[str, Any], book: Codebook, category_ids: Iterable[int]) -> None:
    """Set the facet columns of `row` from the chosen categories (hierarchical: per level)."""
    kinds = book.by_key
    for pk in sorted(category_ids, key=lambda c: book.order.get(c, c)):
        key, code, path = book.category(pk)
        facet = kinds.get(key)
        if facet is None:
            continue
        base = column_base(key)
        if facet.kind == "multi":
            row.setdefault(base, []).append(code)
        elif facet.levels <= 1:
            row[base] = code
        else:
            for level, value in enumerate(path[: facet.levels], start=1):
                row[f"{base}_l{level}"] = value


def final_rows(items: QuerySet[Item], book: Codebook) -> Iterator[dict[str, Any]]:
    """One row per item: its issue, its decision's labels, source and time (empty if none),
    and the facets any submitted annotation of it marked unsure."""
    heads = (
        items.order_by("pk")
        .values_list(
            *ITEM_FIELDS,
            "decision__source",
            "decision__updated_at",
            "decision__reason",
            "decision__comment",
            "decision__confidence",
        )
        .iterator(chunk_size=CHUNK)
    )
    labels = (
        DecisionLabel.objects.filter(decision__item__in=items.values("pk"))
        .order_by("decision__item_id", "category_id")
        .values_list("decision__item_id", "category_id")
        .iterator(chunk_size=CHUNK)
    )
    unsure = _unsure_of_items(items)
    for head, chosen in _merge(heads, labels):
        row = _item_row(head)
        row["decision_source"], row["decided_at"] = head[7], head[8]
        row["reason"], row["comment"] = head[9] or None, head[10] or None
        row["confidence"] = head[11]
        _fill_labels(row, book, (c for _, c in chosen))
        marks = unsure.take(head[0])
        row["unsure"] = _in_facet_order(book, (key for _, keys in marks for key in keys))
        yield row


def with_bodies(rows: Iterable[dict[str, Any]], items: QuerySet[Item]) -> Iterator[dict[str, Any]]:
    """`final_rows(items, …)` with each issue's `body` added: a second stream over the same
    items in the same order (item id), read inside the caller's transaction."""
    bodies = items.order_by("pk").values_list("pk", "issue__body").iterator(chunk_size=CHUNK)
    for row, (pk, body) in zip(rows, bodies, strict=True):
        assert row["item_id"] == pk  # both ordered by item id, in one snapshot
        yield {**row, "body": body}


def annotator_rows(
    items: QuerySet[Item], book: Codebook, annotator_id: int
) -> Iterator[dict[str, Any]]:
    """One row per item the annotator submitted: that annotator's labels, whether they marked
    each facet unsure, time and seconds."""
    prefix = "assignment__item__"
    fields = ["assignment__item_id", *(prefix + f for f in ITEM_FIELDS[1:])]
    heads = (
        Annotation.objects.filter(
            assignment__annotator_id=annotator_id,
            status=Annotation.Status.SUBMITTED,
            assignment__item__in=items.values("pk"),
        )
        .order_by("assignment__item_id")
        .values_list(*fields, "submitted_at", "seconds_spent", "unsure", "notes")
        .iterator(chunk_size=CHUNK)
    )
    labels = (
        AnnotationLabel.objects.filter(
            annotation__assignment__annotator_id=annotator_id,
            annotation__status=Annotation.Status.SUBMITTED,
            annotation__assignment__item__in=items.values("pk"),
        )
        .order_by("annotation__assignment__item_id", "category_id")
        .values_list("annotation__assignment__item_id", "category_id")
        .iterator(chunk_size=CHUNK)
    )
    unsure_columns = [(f.key, f"{column_base(f.key)}_unsure") for f in book.facets]
    for head, chosen in _merge(heads, labels):
        row = _item_row(head)
        row["submitted_at"], row["seconds_spent"] = head[7], head[8]
        row["notes"] = head[10] or None
        for key, column in unsure_columns:
            row[column] = key in head[9]
        _fill_labels(row, book, (c for _, c in chosen))
        yield row


def long_rows(items: QuerySet[Item], book: Codebook) -> Iterator[dict[str, Any]]:
    """One row per label given in a submitted annotation (the tidy table for group-bys), with
    `unsure` where the annotator marked the facet unsure, one row without a category for each
    facet marked unsure where they chose none, and the annotator's notes; then the item's
    decision rows: one per final label (one without a facet when the decision has none), with
    the decision's source, reason and comment."""
    heads = items.order_by("pk").values_list(*ITEM_FIELDS).iterator(chunk_size=CHUNK)
    # From the annotations, their labels joined (LEFT): one marked unsure without any label
    # still comes through.
    given = (
        Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED,
            assignment__item__in=items.values("pk"),
        )
        .order_by("assignment__item_id", "pk", "labels__category_id")
        .values_list(
            "assignment__item_id",
            "pk",
            "assignment__annotator_id",
            "labels__category_id",
            "codebook_version_id",
            "submitted_at",
            "seconds_spent",
            "unsure",
            "notes",
            "revision",
        )
        .iterator(chunk_size=CHUNK)
    )
    decisions = _Lookahead(_decision_labels(items))
    machine = _Lookahead(_machine_labels(items))
    usernames = dict(get_user_model().objects.values_list("pk", "username"))
    for head, rows in _merge(heads, given):
        decided = decisions.take(head[0])
        if not rows and not decided:
            continue
        base = _item_row(head)
        del base["title"]
        for _, annotation in itertools.groupby(rows, key=lambda r: r[1]):
            yield from _annotation_long_rows(base, book, list(annotation), usernames)
        yield from _machine_long_rows(base, book, machine.take(head[0]))
        yield from _decision_long_rows(base, book, decided)


def _machine_labels(items: QuerySet[Item]) -> Iterator[tuple[Any, ...]]:
    """(item id, rater name, sample, labels, answered at, codebook version number) per kept
    valid machine answer, on items whose human labels are all in (annotator/machine/
    visibility.py: nobody meets a machine label before that)."""
    from annotator.machine.models import MachineCall

    return (
        MachineCall.objects.filter(
            item__in=items.values("pk"),
            outcome=MachineCall.Outcome.LABELED,
            item__quota__gt=0,
            item__submitted_count__gte=F("item__quota"),
        )
        .order_by("item_id", "rater__name", "sample")
        .values_list(
            "item_id",
            "rater__name",
            "sample",
            "labels",
            "created_at",
            "rater__study__codebook_version__number",
        )
        .iterator(chunk_size=CHUNK)
    )


def _machine_long_rows(
    base: dict[str, Any], book: Codebook, rows: list[tuple[Any, ...]]
) -> Iterator[dict[str, Any]]:
    """A machine rater's labels as long-table rows (row_kind and annotator_origin machine)."""
    for _, name, sample, labels, at, version in rows:
        common = {
            **base,
            "row_kind": "machine",
            "annotator": name if sample == 0 else f"{name}#{sample}",
            "annotator_origin": "machine",
            "codebook_version": version,
            "submitted_at": at,
        }
        for key in _in_facet_order(book, list(labels)):
            for code in labels[key]:
                yield _long_row(common, key, code, book.top_level(key, code), False)


def _decision_labels(items: QuerySet[Item]) -> Iterator[tuple[Any, ...]]:
    """(item id, source, reason, comment, category id or None) per final label; a decision
    without labels gives one row (LEFT join), so its reason and comment still come through."""
    return (
        Decision.objects.filter(item__in=items.values("pk"))
        .order_by("item_id", "labels__category_id")
        .values_list("item_id", "source", "reason", "comment", "labels__category_id")
        .iterator(chunk_size=CHUNK)
    )


def _decision_long_rows(
    base: dict[str, Any], book: Codebook, rows: list[tuple[Any, ...]]
) -> Iterator[dict[str, Any]]:
    for _, source, reason, comment, category in rows:
        key, code, top = None, None, None
        if category is not None:
            key, code, path = book.category(category)
            top = path[0]
        yield {
            **base,
            "row_kind": "decision",
            "facet": key,
            "category": code,
            "category_l1": top,
            "unsure": False,
            "decision_source": source,
            "reason": reason or None,
            "comment": comment or None,
        }


def _annotation_long_rows(
    base: dict[str, Any], book: Codebook, rows: list[tuple[Any, ...]], usernames: dict[int, str]
) -> Iterator[dict[str, Any]]:
    """One annotation's long-table rows: its labels, then its unsure facets without one; after
    discussion, its revision's labels as `after_discussion` rows (never read for agreement)."""
    _, _, annotator, _, version, submitted, seconds, unsure, notes, revision = rows[0]
    common = {
        **base,
        "row_kind": "annotation",
        "annotator": usernames.get(annotator, str(annotator)),
        "annotator_origin": "human",
        "codebook_version": book.versions.get(version),
        "submitted_at": submitted,
        "seconds_spent": seconds,
        "notes": notes or None,
    }
    labeled: set[str] = set()
    for row in rows:
        if row[3] is None:  # no label at all
            continue
        key, code, path = book.category(row[3])
        labeled.add(key)
        yield _long_row(common, key, code, path[0], key in unsure)
    for key in _in_facet_order(book, unsure):
        if key not in labeled:
            yield _long_row(common, key, None, None, True)
    if revision:
        yield from _revision_long_rows(common, book, revision)


def _revision_long_rows(
    common: dict[str, Any], book: Codebook, revision: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    after = {
        **common,
        "row_kind": "after_discussion",
        "submitted_at": datetime.fromisoformat(revision["at"]),
        "notes": revision.get("notes") or None,
    }
    unsure = revision.get("unsure", [])
    labels: dict[str, list[str]] = revision["labels"]
    for key in _in_facet_order(book, list(labels)):
        for code in labels[key]:
            yield _long_row(after, key, code, book.top_level(key, code), key in unsure)
    for key in _in_facet_order(book, unsure):
        if key not in labels:
            yield _long_row(after, key, None, None, True)


def _long_row(
    common: dict[str, Any], facet: str, code: str | None, top: str | None, unsure: bool
) -> dict[str, Any]:
    return {**common, "facet": facet, "category": code, "category_l1": top, "unsure": unsure}


def annotators_of(items: QuerySet[Item]) -> list[tuple[int, str]]:
    """(id, username) of everyone with a submitted annotation on the items, by username."""
    users = get_user_model().objects.filter(
        assignments__item__in=items.values("pk"),
        assignments__annotation__status=Annotation.Status.SUBMITTED,
    )
    return list(users.distinct().order_by("username").values_list("pk", "username"))
