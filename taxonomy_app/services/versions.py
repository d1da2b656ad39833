"""Codebooks and their versions: create, start a draft from the published version, publish."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..errors import CodebookError
from ..models import Category, Codebook, CodebookVersion, Facet, LabelRule, Proposal
from .diff import diff_version
from .drafts import require_draft
from .rules import check_version_rules


@transaction.atomic
def create_codebook(
    *, name: str, slug: str, description: str = "", user: Any = None
) -> CodebookVersion:
    """A new codebook with an empty draft version 1."""
    if Codebook.objects.filter(slug=slug).exists():
        raise CodebookError(f"a codebook with the slug {slug!r} exists already")
    codebook = Codebook.objects.create(
        name=name, slug=slug, description=description, created_by=_user(user)
    )
    return CodebookVersion.objects.create(codebook=codebook, number=1, created_by=_user(user))


@transaction.atomic
def start_draft(
    *, codebook: Codebook, user: Any = None, copy_content: bool = True
) -> CodebookVersion:
    """The codebook's draft: the existing one, or a copy of the latest published version
    (an empty draft based on it with `copy_content=False`, for an import to fill)."""
    codebook = Codebook.objects.select_for_update().get(pk=codebook.pk)
    draft = codebook.draft()
    if draft is not None:
        return draft
    base = codebook.latest_published()
    number = (codebook.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    draft = CodebookVersion.objects.create(
        codebook=codebook, number=number, based_on=base, created_by=_user(user)
    )
    if base is not None and copy_content:
        copy_version_content(source=base, target=draft)
    return draft


def copy_version_content(*, source: CodebookVersion, target: CodebookVersion) -> None:
    """Copy facets and categories of `source` into `target`, each category remembering its
    origin. One query per hierarchy level, so the cost does not grow with the codebook."""
    facets = list(source.facets.all())
    copies = Facet.objects.bulk_create(
        Facet(version=target, **_fields(facet, FACET_FIELDS)) for facet in facets
    )
    facet_map = {old.pk: new for old, new in zip(facets, copies, strict=True)}
    categories = list(Category.objects.filter(facet__version=source))
    copied: dict[int, Category] = {}
    for level in _levels(categories):
        made = Category.objects.bulk_create(
            Category(
                facet=facet_map[old.facet_id],
                parent=copied[old.parent_id] if old.parent_id else None,
                origin=old,
                **_fields(old, CATEGORY_FIELDS),
            )
            for old in level
        )
        copied.update({old.pk: new for old, new in zip(level, made, strict=True)})
    LabelRule.objects.bulk_create(
        LabelRule(
            version=target,
            facet=facet_map[rule.facet_id],
            when_facet=facet_map[rule.when_facet_id] if rule.when_facet_id else None,
            **_fields(rule, RULE_FIELDS),
        )
        for rule in LabelRule.objects.filter(version=source)
    )


FACET_FIELDS = ("key", "name", "kind", "required", "order", "help")
RULE_FIELDS = ("kind", "when_categories", "categories", "max_choices", "order")
CATEGORY_FIELDS = (
    "code",
    "name",
    "definition",
    "include",
    "exclude",
    "examples",
    "order",
    "archived",
)


def _fields(instance: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in names}


def _levels(categories: list[Category]) -> list[list[Category]]:
    """Categories grouped by depth, roots first."""
    by_pk = {category.pk: category for category in categories}
    depth: dict[int, int] = {}

    def depth_of(category: Category) -> int:
        if category.pk not in depth:
            parent = by_pk.get(category.parent_id) if category.parent_id else None
            depth[category.pk] = 0 if parent is None else depth_of(parent) + 1
        return depth[category.pk]

    levels: dict[int, list[Category]] = {}
    for category in categories:
        levels.setdefault(depth_of(category), []).append(category)
    return [levels[d] for d in sorted(levels)]


@transaction.atomic
def publish_version(
    *, version: CodebookVersion, changelog: str = "", user: Any = None
) -> CodebookVersion:
    """Publish a draft: from now on it never changes. An empty changelog is written from the
    diff against the version it was started from."""
    locked = CodebookVersion.objects.select_for_update().get(pk=version.pk)
    require_draft(locked)
    if not locked.facets.exists():
        raise CodebookError("a version without facets cannot be published")
    check_version_rules(locked)
    if not changelog.strip():
        changelog = diff_version(version=locked).summary()
    locked.status = CodebookVersion.Status.PUBLISHED
    locked.changelog = changelog.strip()
    locked.published_at = timezone.now()
    locked.save(update_fields=["status", "changelog", "published_at"])
    version.status, version.changelog = locked.status, locked.changelog
    version.published_at = locked.published_at
    return version


@transaction.atomic
def discard_draft(*, version: CodebookVersion) -> None:
    """Delete a draft and everything in it; proposals accepted into it go back to the queue."""
    require_draft(version)
    Proposal.objects.filter(resolved_to__facet__version=version).update(
        status=Proposal.Status.OPEN, resolved_to=None, resolved_by=None, resolved_at=None
    )
    Category.objects.filter(facet__version=version).update(parent=None)
    version.delete()


@transaction.atomic
def update_facet(*, facet: Facet, name: str, kind: str, required: bool, help: str = "") -> Facet:
    """Edit a facet of a draft (its key stays: labels and exports refer to it)."""
    require_draft(facet.version)
    if kind not in Facet.Kind.values:
        raise CodebookError(f"unknown facet kind {kind!r} (expected single or multi)")
    facet.name, facet.kind, facet.required, facet.help = name, kind, required, help
    facet.save(update_fields=["name", "kind", "required", "help"])
    return facet


def _user(user: Any) -> Any:
    return user if user is not None and getattr(user, "is_authenticated", False) else None
