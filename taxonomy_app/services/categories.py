"""Editing the categories of a draft: add, edit, move and reorder, delete what is new."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from ..errors import CodebookError
from ..formats import SLUG, slugify
from ..models import Category, ChangeOperation, Facet
from .drafts import require_draft
from .versions import _user

TEXT_FIELDS = ("definition", "include", "exclude", "examples")


@transaction.atomic
def add_category(
    *,
    facet: Facet,
    name: str,
    code: str = "",
    parent: Category | None = None,
    user: Any = None,
    detail: dict[str, Any] | None = None,
    **texts: str,
) -> Category:
    """Add a category (last among its siblings) to a facet of a draft; `texts` are the
    definition, include, exclude and examples. The code defaults to one made from the name."""
    require_draft(facet.version)
    _check_texts(texts)
    if not name.strip():
        raise CodebookError("field 'name': a category needs a name")
    code = code.strip() or unique_code(facet, slugify(name))
    _check_code(facet, code)
    _check_parent(facet, parent)
    category = Category.objects.create(
        facet=facet,
        parent=parent,
        code=code,
        name=name.strip(),
        order=next_order(facet, parent),
        **texts,
    )
    record(category, ChangeOperation.Kind.ADD, user, detail or {})
    return category


@transaction.atomic
def update_category(*, category: Category, user: Any = None, **fields: str) -> Category:
    """Change the code, name or texts of a draft's category. A new name or code is recorded
    as a rename; texts only show in the diff."""
    require_draft(category.facet.version)
    fields = {field: value.strip() for field, value in fields.items()}
    allowed = {"code", "name", *TEXT_FIELDS}
    if unknown := set(fields) - allowed:
        raise CodebookError(f"cannot edit {', '.join(sorted(unknown))} here")
    before = {"code": category.code, "name": category.name}
    if "code" in fields and fields["code"] != category.code:
        _check_code(category.facet, fields["code"], exclude=category.pk)
    if "name" in fields and not fields["name"]:
        raise CodebookError("field 'name': a category needs a name")
    for field, value in fields.items():
        setattr(category, field, value)
    category.save(update_fields=list(fields))
    after = {"code": category.code, "name": category.name}
    if after != before:
        record(category, ChangeOperation.Kind.RENAME, user, {"from": before, "to": after})
    return category


@transaction.atomic
def move_category(*, category: Category, parent: Category | None, user: Any = None) -> Category:
    """Give a draft's category a new parent (None: make it a root), placing it last there.
    Refuses a parent from another facet and any move that would make a cycle."""
    require_draft(category.facet.version)
    if parent is not None and (parent.pk == category.pk or parent.pk in descendant_ids(category)):
        raise CodebookError(
            f"field 'parent': {parent.code!r} is inside {category.code!r}; "
            "a category cannot be moved under itself (cycle in the hierarchy)"
        )
    _check_parent(category.facet, parent)
    if parent is not None and parent.archived:
        raise CodebookError(f"field 'parent': {parent.code!r} is archived")
    old = category.parent.code if category.parent else None
    if category.parent_id == (parent.pk if parent else None):
        return category
    category.parent = parent
    category.order = next_order(category.facet, parent)
    category.save(update_fields=["parent", "order"])
    new = parent.code if parent else None
    record(category, ChangeOperation.Kind.MOVE, user, {"from": old, "to": new})
    return category


@transaction.atomic
def reorder_category(*, category: Category, direction: str) -> Category:
    """Swap a category with its previous ("up") or next ("down") sibling."""
    require_draft(category.facet.version)
    siblings = list(
        Category.objects.select_for_update()
        .filter(facet=category.facet, parent=category.parent)
        .order_by("order", "pk")
    )
    index = [s.pk for s in siblings].index(category.pk)
    other = index - 1 if direction == "up" else index + 1
    if direction not in {"up", "down"} or not 0 <= other < len(siblings):
        return category
    siblings[index], siblings[other] = siblings[other], siblings[index]
    for position, sibling in enumerate(siblings):
        sibling.order = position
    Category.objects.bulk_update(siblings, ["order"])
    category.refresh_from_db(fields=["order"])
    return category


@transaction.atomic
def delete_category(*, category: Category) -> None:
    """Delete a category added in this draft. One that came from a published version may be
    used by labels, so it is archived instead (see archive_category)."""
    require_draft(category.facet.version)
    if category.origin_id is not None:
        raise CodebookError(
            f"{category.code!r} is part of a published version and labels may use it: "
            "archive it instead of deleting it"
        )
    if category.children.exists():
        raise CodebookError(f"{category.code!r} has subcategories: move or delete them first")
    category.delete()


def descendant_ids(category: Category) -> set[int]:
    """Primary keys of every category below this one (one query for the facet)."""
    children: dict[int, list[int]] = {}
    for pk, parent in Category.objects.filter(facet=category.facet_id).values_list(
        "pk", "parent_id"
    ):
        children.setdefault(parent, []).append(pk)
    found: set[int] = set()
    stack = list(children.get(category.pk, []))
    while stack:
        pk = stack.pop()
        if pk not in found:
            found.add(pk)
            stack.extend(children.get(pk, []))
    return found


def next_order(facet: Facet, parent: Category | None) -> int:
    highest = Category.objects.filter(facet=facet, parent=parent).aggregate(n=Max("order"))["n"]
    return 0 if highest is None else highest + 1


def unique_code(facet: Facet, base: str) -> str:
    """`base`, or `base-2`, `base-3`… whichever is free in the facet."""
    taken = set(Category.objects.filter(facet=facet).values_list("code", flat=True))
    code, n = base[:80], 2
    while code in taken:
        code, n = f"{base[:76]}-{n}", n + 1
    return code


def record(category: Category, kind: str, user: Any, detail: dict[str, Any]) -> ChangeOperation:
    return ChangeOperation.objects.create(
        version_id=category.facet.version_id,
        kind=kind,
        category=category,
        detail=detail,
        created_by=_user(user),
    )


def _check_code(facet: Facet, code: str, exclude: int | None = None) -> None:
    if not SLUG.match(code) or len(code) > 80:
        raise CodebookError(f"field 'code': {code!r} must be at most 80 letters, digits, - or _")
    clash = Category.objects.filter(facet=facet, code=code)
    if exclude is not None:
        clash = clash.exclude(pk=exclude)
    if clash.exists():
        raise CodebookError(f"field 'code': {code!r} is already used in facet {facet.key!r}")


def _check_parent(facet: Facet, parent: Category | None) -> None:
    if parent is not None and parent.facet_id != facet.pk:
        raise CodebookError(f"field 'parent': {parent.code!r} belongs to another facet")


def _check_texts(texts: dict[str, str]) -> None:
    if unknown := set(texts) - set(TEXT_FIELDS):
        raise CodebookError(f"unknown fields: {', '.join(sorted(unknown))}")
