"""The facets and categories of a codebook version, loaded once per process.

A published version never changes (taxonomy_app refuses every write to it), so its structure is
read from the database once and kept: the annotate page and the submit validation then cost no
query per facet or category, however large the codebook. The key includes `published_at` so a
draft (which studies do not use, but tests may) or a re-published row is never served stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from threading import Lock

from taxonomy_app.models import Category, CodebookVersion, Facet
from taxonomy_app.rules import FacetInfo, Rule, check_labels, facet_texts
from taxonomy_app.services.rules import version_rules


@dataclass(frozen=True)
class CategoryNode:
    id: int
    code: str
    name: str
    definition: str
    include: str
    exclude: str
    examples: str
    depth: int
    parent_id: int | None
    path: str  # "Program failure / Hang", what a reader of a flat list needs

    @property
    def search_text(self) -> str:
        return f"{self.code} {self.path} {self.definition}".lower()


@dataclass(frozen=True)
class FacetNode:
    id: int
    key: str
    name: str
    kind: str
    required: bool
    help: str
    categories: tuple[CategoryNode, ...]
    other_id: int | None  # the facet's "other" category, if it has one
    rules_text: tuple[str, ...] = ()  # the version's label rules on this facet, in words

    @property
    def is_multi(self) -> bool:
        return self.kind == Facet.Kind.MULTI


@dataclass(frozen=True)
class CodebookSchema:
    version_id: int
    facets: tuple[FacetNode, ...]
    facet_of: dict[int, int] = field(default_factory=dict)  # category id → facet id
    rules: tuple[Rule, ...] = ()  # the version's label rules (taxonomy_app.rules)
    infos: dict[str, FacetInfo] = field(default_factory=dict, compare=False, repr=False)
    # Derived artefacts that live as long as the schema (e.g. the rendered pickers).
    memo: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def facet(self, facet_id: int) -> FacetNode | None:
        return next((f for f in self.facets if f.id == facet_id), None)

    def locked_groups(self) -> frozenset[int]:
        """Ids of the groups a `leaf_only` rule refuses (categories with sub-categories, but
        those the rule lists): the annotate page shows them, with their definitions, but picks
        none of them."""
        locked: set[int] = set()
        for rule in self.rules:
            facet = next((f for f in self.facets if f.key == rule.facet), None)
            if rule.kind != "leaf_only" or facet is None:
                continue
            parents = {c.parent_id for c in facet.categories}
            locked |= {c.id for c in facet.categories if c.id in parents} - {
                c.id for c in facet.categories if c.code in rule.categories
            }
        return frozenset(locked)

    def validate_labels(
        self, labels: Mapping[int, Sequence[int]], *, require: bool
    ) -> tuple[list[tuple[int, int]], dict[str, str]]:
        """(facet id, category id) rows of `labels` (category ids by facet id) that fit this
        codebook, and errors by facet key: categories of another facet or none, more than one
        in a single-choice facet, and (`require`) an empty required facet or a broken label
        rule (the first of each facet). A submit, a draft (lenient: `require=False`, errors
        ignored, rules not checked) and an adjudicator's decision validate through it."""
        rows: list[tuple[int, int]] = []
        errors: dict[str, str] = {}
        for facet in self.facets:
            chosen = list(dict.fromkeys(int(c) for c in labels.get(facet.id, ())))
            valid = [c for c in chosen if self.facet_of.get(c) == facet.id]
            if len(valid) < len(chosen):
                errors[facet.key] = "choose among this facet's categories"
            elif not facet.is_multi and len(valid) > 1:
                errors[facet.key] = "choose one category only"
            elif require and facet.required and not valid:
                errors[facet.key] = "required: choose a category"
            rows.extend((facet.id, c) for c in (valid if facet.is_multi else valid[:1]))
        unknown = set(labels) - {f.id for f in self.facets}
        if unknown:
            errors["facets"] = f"unknown facet ids {sorted(unknown)}"
        if require and self.rules:
            for key, message in self.rule_errors(rows).items():
                errors.setdefault(key, message)
        return rows, errors

    def unsure_keys(self, keys: Iterable[str]) -> tuple[list[str], list[str]]:
        """The facet keys of `keys` that are facets of this version, once each in the
        codebook's order, and those that are not (as given): an annotation's "unsure" marks."""
        wanted = {str(key) for key in keys}
        known = [f.key for f in self.facets if f.key in wanted]
        return known, sorted(wanted - set(known))

    def rule_errors(self, rows: Iterable[tuple[int, int]]) -> dict[str, str]:
        """The label rules these (facet id, category id) rows break, by facet key."""
        return check_labels(self.rules, self.codes(rows), self.infos)

    def codes(self, rows: Iterable[tuple[int, int]]) -> dict[str, list[str]]:
        """(facet id, category id) rows as {facet key: sorted category codes}, the shape of the
        audit trail's snapshots, without a query. The rows must fit this schema."""
        keys = {f.id: f.key for f in self.facets}
        code = {c.id: c.code for f in self.facets for c in f.categories}
        labels: dict[str, list[str]] = {}
        for key, value in sorted((keys[facet], code[category]) for facet, category in rows):
            labels.setdefault(key, []).append(value)
        return labels


_cache: dict[tuple[int, datetime | None], CodebookSchema] = {}
_lock = Lock()


def codebook_schema(version: CodebookVersion) -> CodebookSchema:
    """The active facets and categories of `version`, in display order (a tree, depth-first)."""
    key = (version.pk, version.published_at)
    schema = _cache.get(key) if version.is_published else None
    if schema is None:
        schema = _load(version)
        if version.is_published:
            with _lock:
                _cache[key] = schema
    return schema


def _load(version: CodebookVersion) -> CodebookSchema:
    facets = list(Facet.objects.filter(version=version).order_by("order", "pk"))
    categories = list(
        Category.objects.filter(facet__version=version, archived=False).order_by("order", "pk")
    )
    nodes = tuple(_facet_node(facet, categories) for facet in facets)
    facet_of = {c.id: f.id for f in nodes for c in f.categories}
    rules = version_rules(version)
    infos = {f.key: _facet_info(f) for f in nodes}
    if rules:
        nodes = tuple(replace(f, rules_text=facet_texts(rules, f.key, infos)) for f in nodes)
    return CodebookSchema(
        version_id=version.pk, facets=nodes, facet_of=facet_of, rules=rules, infos=infos
    )


def _facet_info(facet: FacetNode) -> FacetInfo:
    ids = {c.id for c in facet.categories}
    groups = {c.parent_id for c in facet.categories if c.parent_id in ids}
    return FacetInfo(
        key=facet.key,
        name=facet.name,
        multi=facet.is_multi,
        categories={c.code: c.name for c in facet.categories},
        groups=frozenset(c.code for c in facet.categories if c.id in groups),
    )


def _facet_node(facet: Facet, categories: list[Category]) -> FacetNode:
    mine = [c for c in categories if c.facet_id == facet.pk]
    ids = {c.pk for c in mine}
    children: dict[int | None, list[Category]] = {}
    for category in mine:
        # Under an archived parent, a still-active category shows at the top level.
        parent = category.parent_id if category.parent_id in ids else None
        children.setdefault(parent, []).append(category)
    ordered: list[CategoryNode] = []

    def walk(parent: int | None, depth: int, prefix: str) -> None:
        for category in children.get(parent, []):
            path = f"{prefix} / {category.name}" if prefix else category.name
            ordered.append(_category_node(category, depth, path))
            walk(category.pk, depth + 1, path)

    walk(None, 0, "")
    other = next((c.id for c in ordered if c.code == "other" or c.code.endswith("-other")), None)
    return FacetNode(
        id=facet.pk,
        key=facet.key,
        name=facet.name,
        kind=facet.kind,
        required=facet.required,
        help=facet.help,
        categories=tuple(ordered),
        other_id=other,
    )


def _category_node(category: Category, depth: int, path: str) -> CategoryNode:
    return CategoryNode(
        id=category.pk,
        code=category.code,
        name=category.name,
        definition=category.definition,
        include=category.include,
        exclude=category.exclude,
        examples=category.examples,
        depth=depth,
        parent_id=category.parent_id,
        path=path,
    )
