"""Structural changes in a draft (archive, merge, split) and how labels follow them."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ..errors import CodebookError
from ..models import Category, ChangeOperation, CodebookVersion
from ..usage import label_usage
from .categories import add_category, record
from .drafts import require_draft


@dataclass
class SplitResult:
    operation: ChangeOperation
    categories: list[Category]
    # Labels that used the old category: each needs a person to choose among `categories`.
    affected_labels: list[Hashable] = field(default_factory=list)


@transaction.atomic
def archive_category(*, category: Category, user: Any = None) -> Category:
    """Archive a draft's category: annotators no longer see it, labels that use it keep it.
    Categories are never deleted once published (see delete_category)."""
    require_draft(category.facet.version)
    _check_active(category, "archive")
    _archive(category)
    record(category, ChangeOperation.Kind.ARCHIVE, user, {})
    return category


@transaction.atomic
def restore_category(*, category: Category) -> Category:
    """Undo an archive in a draft (not a merge or split: those are undone by discarding)."""
    require_draft(category.facet.version)
    ops = category.operations.filter(version=category.facet.version_id)
    if ops.filter(kind__in=[ChangeOperation.Kind.MERGE, ChangeOperation.Kind.SPLIT]).exists():
        raise CodebookError(f"{category.code!r} was merged or split in this draft")
    ops.filter(kind=ChangeOperation.Kind.ARCHIVE).delete()
    category.archived = False
    category.save(update_fields=["archived"])
    return category


@transaction.atomic
def merge_categories(*, source: Category, target: Category, user: Any = None) -> ChangeOperation:
    """Merge `source` into `target` within one facet of a draft: `source` is archived, and
    labels that used it move to `target` when they are carried over (carry_over_labels)."""
    require_draft(source.facet.version)
    if source.facet_id != target.facet_id or source.pk == target.pk:
        raise CodebookError("merge: choose another category of the same facet")
    _check_active(source, "merge")
    if target.archived:
        raise CodebookError(f"merge: {target.code!r} is archived")
    _archive(source)
    operation = record(source, ChangeOperation.Kind.MERGE, user, {"into": target.code})
    operation.targets.set([target])
    return operation


@transaction.atomic
def split_category(
    *,
    source: Category,
    names: Sequence[str] = (),
    into: Sequence[Category] = (),
    user: Any = None,
) -> SplitResult:
    """Split `source` into new categories called `names` (made its siblings) and/or existing
    categories `into`, at least two in all. `source` is archived. Returns the labels that used
    it: which of the new categories each belongs to needs a human decision."""
    require_draft(source.facet.version)
    _check_active(source, "split")
    names = [name.strip() for name in names if name.strip()]
    if len(names) + len(into) < 2:
        raise CodebookError("split: name at least two categories to split into")
    if any(c.facet_id != source.facet_id or c.archived or c.pk == source.pk for c in into):
        raise CodebookError("split: the categories to split into must be active, in the same facet")
    made = [
        add_category(
            facet=source.facet,
            name=name,
            parent=source.parent,
            user=user,
            detail={"split_from": source.code},
        )
        for name in names
    ]
    targets = [*into, *made]
    _archive(source)
    operation = record(
        source, ChangeOperation.Kind.SPLIT, user, {"into": [c.code for c in targets]}
    )
    operation.targets.set(targets)
    affected = label_usage().labels_using(source.origin_id) if source.origin_id else []
    return SplitResult(operation=operation, categories=targets, affected_labels=affected)


def _check_active(category: Category, action: str) -> None:
    if category.archived:
        raise CodebookError(f"{action}: {category.code!r} is archived already")
    if category.children.filter(archived=False).exists():
        raise CodebookError(
            f"{action}: {category.code!r} has active subcategories; move or archive them first"
        )


def _archive(category: Category) -> None:
    category.archived = True
    category.save(update_fields=["archived"])


# Carrying labels from a version to the next ----------------------------------------------------


@dataclass
class CarryOverPlan:
    # category of the previous version → category of this version, for labels to follow
    mapping: dict[int, int] = field(default_factory=dict)
    # category of the previous version → the categories it was split into (a person decides)
    needs_decision: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class CarryOverResult:
    moved: int
    # category of the previous version → the labels on it that wait for a decision
    needs_decision: dict[int, list[Hashable]]


def plan_carry_over(*, version: CodebookVersion) -> CarryOverPlan:
    """Where each category of the version this one was based on went: itself (possibly renamed,
    moved or archived), the category it was merged into, or the categories it was split into."""
    operations = {
        op.category_id: op
        for op in version.operations.filter(
            kind__in=[ChangeOperation.Kind.MERGE, ChangeOperation.Kind.SPLIT]
        ).prefetch_related("targets")
    }
    plan = CarryOverPlan()
    for category in Category.objects.filter(facet__version=version, origin__isnull=False):
        op, origin = operations.get(category.pk), category.origin_id
        assert origin is not None  # filtered above
        if op is not None and op.kind == ChangeOperation.Kind.SPLIT:
            plan.needs_decision[origin] = [t.pk for t in op.targets.all()]
        else:
            plan.mapping[origin] = _merged_end(category.pk, operations)
    return plan


def _merged_end(pk: int, operations: dict[int, ChangeOperation]) -> int:
    """Follow merges (a into b, then b into c) to the category that remains."""
    seen = {pk}
    while (op := operations.get(pk)) and op.kind == ChangeOperation.Kind.MERGE:
        pk = next(t.pk for t in op.targets.all())
        if pk in seen:
            break
        seen.add(pk)
    return pk


@transaction.atomic
def carry_over_labels(*, version: CodebookVersion) -> CarryOverResult:
    """Move labels made against the previous version onto this published version, through the
    TAXONOMY_LABEL_USAGE hook. Labels of split categories stay where they are and are returned
    for a person to decide."""
    if not version.is_published:
        raise CodebookError("labels are carried over to published versions only")
    plan = plan_carry_over(version=version)
    usage = label_usage()
    moved = usage.relabel(plan.mapping)
    waiting = {pk: usage.labels_using(pk) for pk in plan.needs_decision}
    return CarryOverResult(moved=moved, needs_decision={k: v for k, v in waiting.items() if v})
