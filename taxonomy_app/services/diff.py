"""What changed between a version and the published version it was started from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models import Category, ChangeOperation, CodebookVersion, Facet
from ..rules import Rule, describe
from ..usage import label_usage
from .rules import version_facet_infos, version_rules

COMPARED = ("name", "code", "definition", "include", "exclude", "examples")
FACET_COMPARED = ("name", "kind", "required", "help")


@dataclass
class FieldChange:
    field: str
    before: Any
    after: Any


@dataclass
class CategoryChange:
    category: Category
    before: Category | None = None
    fields: list[FieldChange] = field(default_factory=list)
    targets: list[Category] = field(default_factory=list)
    labels: int = 0

    @property
    def facet(self) -> Facet:
        return self.category.facet

    @property
    def target_codes(self) -> list[str]:
        return [target.code for target in self.targets]


@dataclass
class FacetChange:
    facet: Facet
    fields: list[FieldChange] = field(default_factory=list)


@dataclass
class RuleChange:
    rule: Rule
    text: str  # the rule in words, as the guideline prints it

    @property
    def facet(self) -> str:
        return self.rule.facet


@dataclass
class VersionDiff:
    version: CodebookVersion
    base: CodebookVersion | None
    facets_added: list[FacetChange] = field(default_factory=list)
    facets_changed: list[FacetChange] = field(default_factory=list)
    added: list[CategoryChange] = field(default_factory=list)
    changed: list[CategoryChange] = field(default_factory=list)
    merged: list[CategoryChange] = field(default_factory=list)
    split: list[CategoryChange] = field(default_factory=list)
    archived: list[CategoryChange] = field(default_factory=list)
    removed: list[CategoryChange] = field(default_factory=list)
    rules_added: list[RuleChange] = field(default_factory=list)
    rules_removed: list[RuleChange] = field(default_factory=list)

    SECTIONS = ("added", "changed", "merged", "split", "archived", "removed")

    @property
    def is_empty(self) -> bool:
        lists = [getattr(self, name) for name in self.SECTIONS]
        rules = [self.rules_added, self.rules_removed]
        return not any([*lists, self.facets_added, self.facets_changed, *rules])

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in self.SECTIONS}

    def summary(self) -> str:
        """A plain-text changelog, one line per change."""
        lines = [f"- new facet {f.facet.key}" for f in self.facets_added]
        lines += [f"- facet {f.facet.key}: {_names(f.fields)}" for f in self.facets_changed]
        for name in self.SECTIONS:
            lines += [f"- {name} {_describe(change)}" for change in getattr(self, name)]
        lines += [f"- new rule {r.facet}: {r.text}" for r in self.rules_added]
        lines += [f"- removed rule {r.facet}: {r.text}" for r in self.rules_removed]
        return "\n".join(lines) or "No changes."


def _names(fields: list[FieldChange]) -> str:
    return ", ".join(f.field for f in fields)


def _describe(change: CategoryChange) -> str:
    text = f"{change.facet.key}/{change.category.code}"
    if change.targets:
        text += " into " + ", ".join(t.code for t in change.targets)
    if change.fields:
        text += f" ({_names(change.fields)})"
    return text + (f" — {change.labels} labels" if change.labels else "")


def diff_version(*, version: CodebookVersion, viewer: Any = None) -> VersionDiff:
    """Compare `version` with its base: facets by key, categories by origin. The label counts
    (through TAXONOMY_LABEL_USAGE) are of the base's categories each change touches, and are
    the submitted labels of the studies `viewer` owns (staff: all); without a viewer (e.g. the
    changelog written at publishing, which everyone reads) every count is 0."""
    base = version.based_on
    diff = VersionDiff(version=version, base=base)
    _diff_facets(diff)
    categories = list(
        Category.objects.filter(facet__version=version)
        .select_related("facet", "parent", "origin__parent")
        .order_by("facet__order", "facet_id", "order", "pk")
    )
    operations = {
        op.category_id: op
        for op in version.operations.filter(
            kind__in=[ChangeOperation.Kind.MERGE, ChangeOperation.Kind.SPLIT]
        ).prefetch_related("targets")
    }
    split_made = {t.pk for op in operations.values() for t in op.targets.all()}
    for category in categories:
        _classify(diff, category, operations.get(category.pk), split_made)
    if base is not None:
        _find_removed(diff, base, {c.origin_id for c in categories})
    if viewer is not None:
        _count_labels(diff, viewer)
    _diff_rules(diff)
    return diff


def _diff_rules(diff: VersionDiff) -> None:
    """Rules compared as plain data: a changed rule shows as one removed and one added."""
    after = version_rules(diff.version)
    before = version_rules(diff.base) if diff.base else ()
    if not after and not before:
        return
    infos = version_facet_infos(diff.version)
    old_infos = version_facet_infos(diff.base) if diff.base else {}
    diff.rules_added = [RuleChange(r, describe(r, infos)) for r in after if r not in before]
    diff.rules_removed = [RuleChange(r, describe(r, old_infos)) for r in before if r not in after]


def _diff_facets(diff: VersionDiff) -> None:
    before = {f.key: f for f in diff.base.facets.all()} if diff.base else {}
    for facet in diff.version.facets.all():
        old = before.get(facet.key)
        if old is None:
            diff.facets_added.append(FacetChange(facet))
        elif changes := _changes(old, facet, FACET_COMPARED):
            diff.facets_changed.append(FacetChange(facet, changes))


def _classify(
    diff: VersionDiff, category: Category, op: ChangeOperation | None, split_made: set[int]
) -> None:
    before = category.origin
    if op is not None:
        section = diff.merged if op.kind == ChangeOperation.Kind.MERGE else diff.split
        section.append(CategoryChange(category, before, targets=list(op.targets.all())))
    elif before is None:
        if category.pk not in split_made:
            diff.added.append(CategoryChange(category))
    elif category.archived and not before.archived:
        diff.archived.append(CategoryChange(category, before))
    elif changes := _category_changes(before, category):
        diff.changed.append(CategoryChange(category, before, changes))


def _category_changes(before: Category, after: Category) -> list[FieldChange]:
    changes = _changes(before, after, COMPARED)
    old_parent = before.parent.code if before.parent else None
    new_parent_origin = after.parent.origin_id if after.parent else None
    if new_parent_origin != before.parent_id:
        new_parent = after.parent.code if after.parent else None
        changes.append(FieldChange("parent", old_parent, new_parent))
    if before.archived and not after.archived:
        changes.append(FieldChange("archived", True, False))
    return changes


def _changes(before: Any, after: Any, fields: tuple[str, ...]) -> list[FieldChange]:
    return [
        FieldChange(name, getattr(before, name), getattr(after, name))
        for name in fields
        if getattr(before, name) != getattr(after, name)
    ]


def _find_removed(diff: VersionDiff, base: CodebookVersion, kept: set[int | None]) -> None:
    gone = Category.objects.filter(facet__version=base).exclude(
        pk__in=[pk for pk in kept if pk is not None]
    )
    for category in gone.select_related("facet"):
        diff.removed.append(CategoryChange(category, category))


def _count_labels(diff: VersionDiff, viewer: Any) -> None:
    changes = [c for name in diff.SECTIONS for c in getattr(diff, name) if c.before is not None]
    befores = {c.before.pk for c in changes if c.before}
    counts = label_usage().count_labels(befores, viewer=viewer)
    for change in changes:
        change.labels = counts.get(change.before.pk, 0) if change.before else 0
