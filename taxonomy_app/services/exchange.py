"""Export a codebook version to JSON, YAML or REFI-QDA (.qdc) and import one, all or nothing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from ..errors import CodebookError
from ..formats import (
    MAX_DEPTH,
    CategorySpec,
    CodebookSpec,
    FacetSpec,
    dump_document,
    load_document,
    parse_codebook,
    to_document,
)
from ..models import Category, Codebook, CodebookVersion, Facet, LabelRule
from ..refi_qda import looks_like_qdc, read_qdc, write_qdc
from .rules import rule_row, version_rules
from .versions import create_codebook, publish_version, start_draft


def version_spec(version: CodebookVersion) -> CodebookSpec:
    """The version as plain data; categories in tree order (each parent before its children)."""
    categories = list(
        Category.objects.filter(facet__version=version)
        .select_related("parent")
        .order_by("order", "pk")
    )
    facets = tuple(
        FacetSpec(
            key=f.key,
            name=f.name,
            kind=f.kind,
            required=f.required,
            help=f.help,
            categories=tuple(_tree_order([c for c in categories if c.facet_id == f.pk])),
        )
        for f in version.facets.all()
    )
    codebook = version.codebook
    return CodebookSpec(
        name=codebook.name,
        slug=codebook.slug,
        description=codebook.description,
        changelog=version.changelog,
        facets=facets,
        rules=version_rules(version),
    )


def _tree_order(categories: list[Category]) -> list[CategorySpec]:
    children: dict[int | None, list[Category]] = {}
    for category in categories:
        children.setdefault(category.parent_id, []).append(category)
    ordered: list[CategorySpec] = []

    def visit(parent: int | None) -> None:
        for category in children.get(parent, []):
            ordered.append(_category_spec(category))
            visit(category.pk)

    visit(None)
    return ordered


def _category_spec(category: Category) -> CategorySpec:
    return CategorySpec(
        code=category.code,
        name=category.name,
        parent=category.parent.code if category.parent else None,
        definition=category.definition,
        include=category.include,
        exclude=category.exclude,
        examples=category.examples,
        archived=category.archived,
    )


EXPORT_FORMATS = ("json", "yaml", "qdc")


def export_version(*, version: CodebookVersion, fmt: str) -> str:
    """The version as a JSON or YAML document (see taxonomy_app.formats for its shape), or as a
    REFI-QDA codebook, fmt "qdc" (taxonomy_app.refi_qda)."""
    spec = version_spec(version)
    number, status = version.number, str(version.status)
    if fmt == "qdc":
        return write_qdc(spec, number=number, status=status)
    return dump_document(to_document(spec, number=number, status=status), fmt)


def read_codebook(data: bytes | str, fmt: str = "auto", *, name: str = "") -> CodebookSpec:
    """A codebook file checked and read: JSON, YAML, or REFI-QDA for fmt "qdc" or for "auto"
    and a file starting with "<". `name` names a REFI-QDA codebook whose file names none."""
    if fmt == "qdc" or (fmt == "auto" and looks_like_qdc(data)):
        return read_qdc(data, name=name, max_depth=_max_depth())
    return parse_codebook(load_document(data, fmt, _max_depth()))


def import_codebook(
    *,
    data: bytes | str,
    fmt: str = "auto",
    codebook: Codebook | None = None,
    publish: bool = False,
    user: Any = None,
    name: str = "",
) -> CodebookVersion:
    """Import a codebook file (JSON, YAML or REFI-QDA, see `read_codebook`) as a new codebook,
    or as the next version of `codebook` (its categories then continue those of the same code
    in the latest published version, so the diff shows what the file changed). `name` names
    the codebook of a REFI-QDA file from another tool, which has no name: the uploaded file's
    name, or `codebook`'s when given. The whole file is checked before anything is written;
    any error raises CodebookFormatError or CodebookError and writes nothing."""
    name = codebook.name if codebook is not None else name
    spec = read_codebook(data, fmt, name=name)
    with transaction.atomic():
        if codebook is None:
            version = create_codebook(
                name=spec.name, slug=spec.slug, description=spec.description, user=user
            )
        else:
            version = _new_empty_version(codebook, user)
        write_spec(version=version, spec=spec)
        if publish:
            publish_version(version=version, changelog=spec.changelog, user=user)
            version.refresh_from_db()
        elif spec.changelog:
            CodebookVersion.objects.filter(pk=version.pk).update(changelog=spec.changelog)
    return version


def _new_empty_version(codebook: Codebook, user: Any) -> CodebookVersion:
    if codebook.draft() is not None:
        raise CodebookError(
            f"{codebook} has a draft already: publish or discard it before importing a file"
        )
    return start_draft(codebook=codebook, user=user, copy_content=False)


def write_spec(*, version: CodebookVersion, spec: CodebookSpec) -> None:
    """Create the facets and categories of `spec` in an empty draft."""
    origins = _origins(version.based_on)
    facets: dict[str, Facet] = {}
    for order, facet_spec in enumerate(spec.facets):
        facet = facets[facet_spec.key] = Facet.objects.create(
            version=version,
            key=facet_spec.key,
            name=facet_spec.name,
            kind=facet_spec.kind,
            required=facet_spec.required,
            help=facet_spec.help,
            order=order,
        )
        _write_categories(facet, facet_spec, origins)
    LabelRule.objects.bulk_create(
        rule_row(version, rule, facets, order=order) for order, rule in enumerate(spec.rules)
    )


def _write_categories(facet: Facet, spec: FacetSpec, origins: dict[tuple[str, str], int]) -> None:
    made: dict[str, Category] = {}
    siblings: dict[str | None, int] = {}
    pending = list(spec.categories)
    # Parents may come after their children in a file: write in rounds until all are placed
    # (the parser has refused cycles and unknown parents, so each round places at least one).
    while pending:
        ready = [c for c in pending if c.parent is None or c.parent in made]
        for item in ready:
            order = siblings[item.parent] = siblings.get(item.parent, -1) + 1
            made[item.code] = Category.objects.create(
                facet=facet,
                parent=made[item.parent] if item.parent else None,
                origin_id=origins.get((spec.key, item.code)),
                order=order,
                **{f: getattr(item, f) for f in _CATEGORY_DATA},
            )
        pending = [c for c in pending if c.code not in made]


_CATEGORY_DATA = ("code", "name", "definition", "include", "exclude", "examples", "archived")


def _origins(base: CodebookVersion | None) -> dict[tuple[str, str], int]:
    if base is None:
        return {}
    rows = Category.objects.filter(facet__version=base).values_list("facet__key", "code", "pk")
    return {(key, code): pk for key, code, pk in rows}


def specs_equal(
    version: CodebookVersion, data: bytes | str, fmt: str = "auto", *, name: str = ""
) -> bool:
    """Whether a file holds exactly the content of `version` (changelog aside)."""
    spec = read_codebook(data, fmt, name=name)
    current = version_spec(version)
    return _without_changelog(spec) == _without_changelog(current)


def _without_changelog(spec: CodebookSpec) -> CodebookSpec:
    return CodebookSpec(spec.name, spec.slug, spec.description, "", spec.facets, spec.rules)


def _max_depth() -> int:
    return getattr(settings, "CODEBOOK_MAX_DEPTH", MAX_DEPTH)
