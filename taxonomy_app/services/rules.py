"""Label rules of a draft: add, remove, and check them against the version's facets.

The rules themselves are checked by the pure taxonomy_app.rules; this module reads them from the
database and writes them, refusing a published version like every other write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count

from ..errors import CodebookError
from ..models import Category, CodebookVersion, Facet, LabelRule
from ..rules import (
    FacetInfo,
    Rule,
    RuleError,
    check_rule,
    check_rules,
    describe,
    facet_texts,
)
from ..usage import RuleCheck, SubmittedLabels, label_usage
from .drafts import require_draft


def version_rules(version: CodebookVersion) -> tuple[Rule, ...]:
    """The version's label rules as plain data, in order."""
    rows = LabelRule.objects.filter(version=version).select_related("facet", "when_facet")
    return tuple(rule_of(row) for row in rows.order_by("order", "pk"))


def rule_of(row: LabelRule) -> Rule:
    return Rule(
        kind=row.kind,
        facet=row.facet.key,
        when_facet=row.when_facet.key if row.when_facet else None,
        when_categories=tuple(row.when_categories),
        categories=tuple(row.categories),
        max_choices=row.max_choices,
    )


def version_facet_infos(version: CodebookVersion) -> dict[str, FacetInfo]:
    """The version's facets as the rules see them; two queries."""
    facets = list(version.facets.order_by("order", "pk"))
    categories = list(Category.objects.filter(facet__version=version).order_by("order", "pk"))
    return facet_infos(facets, categories)


def facet_infos(facets: Sequence[Facet], categories: Sequence[Category]) -> dict[str, FacetInfo]:
    """Facets and their categories (archived ones too) as the rules see them: the groups are
    the active categories with active children."""
    active = {c.pk: c.code for c in categories if not c.archived}
    infos: dict[str, FacetInfo] = {}
    for facet in facets:
        mine = [c for c in categories if c.facet_id == facet.pk]
        groups = {active[c.parent_id] for c in mine if c.pk in active and c.parent_id in active}
        infos[facet.key] = FacetInfo(
            key=facet.key,
            name=facet.name,
            multi=facet.kind == Facet.Kind.MULTI,
            categories={c.code: c.name for c in mine},
            groups=frozenset(groups),
        )
    return infos


def rule_texts(rules: Sequence[Rule], infos: dict[str, FacetInfo]) -> dict[str, tuple[str, ...]]:
    """facet key → its rules in words, for every facet of `infos`."""
    return {key: facet_texts(rules, key, infos) for key in infos}


def check_version_rules(version: CodebookVersion) -> None:
    """Refuse to publish rules that no longer fit the draft (a category renamed or deleted
    since the rule was written, a facet made single-choice, …)."""
    try:
        check_rules(version_rules(version), version_facet_infos(version))
    except RuleError as error:
        raise CodebookError(f"{error}: change or remove the rule before publishing") from None


@transaction.atomic
def add_rule(
    *,
    version: CodebookVersion,
    kind: str,
    facet: str,
    when_facet: str | None = None,
    when_categories: Sequence[str] = (),
    categories: Sequence[str] = (),
    max_choices: int | None = None,
) -> LabelRule:
    """Add a label rule to a draft; facets are named by key and categories by code. A rule
    that does not fit the draft raises CodebookError naming the field; nothing is written."""
    require_draft(version)
    rule = Rule(
        kind=kind,
        facet=facet,
        when_facet=when_facet or None,
        when_categories=tuple(dict.fromkeys(when_categories)),
        categories=tuple(dict.fromkeys(categories)),
        max_choices=max_choices,
    )
    try:
        check_rule(rule, version_facet_infos(version))
    except RuleError as error:
        raise CodebookError(str(error)) from None
    facets = {f.key: f for f in version.facets.all()}
    last = version.rules.order_by("-order").values_list("order", flat=True).first()
    row = rule_row(version, rule, facets, order=0 if last is None else last + 1)
    row.save()
    return row


def rule_row(
    version: CodebookVersion, rule: Rule, facets: dict[str, Facet], *, order: int
) -> LabelRule:
    """The (unsaved) row of a checked rule in `version`, whose facets are `facets` by key."""
    return LabelRule(
        version=version,
        kind=rule.kind,
        facet=facets[rule.facet],
        when_facet=facets[rule.when_facet] if rule.when_facet else None,
        when_categories=list(rule.when_categories),
        categories=list(rule.categories),
        max_choices=rule.max_choices,
        order=order,
    )


@transaction.atomic
def delete_rule(*, rule: LabelRule) -> None:
    """Remove a label rule from a draft."""
    require_draft(rule.version)
    rule.delete()


SHOWN = 50  # annotations listed per rule and page; the count covers them all


@dataclass
class RuleBreak:
    """A rule of a version and the submitted annotations that break it."""

    index: int
    rule: Rule
    text: str
    count: int = 0
    annotations: list[SubmittedLabels] = field(default_factory=list)  # SHOWN from `offset`
    offset: int = 0

    @property
    def page(self) -> int:
        return self.offset // SHOWN + 1

    @property
    def last(self) -> int:
        """The position of the last annotation listed (from 1)."""
        return self.offset + len(self.annotations)

    @property
    def pages(self) -> int:
        return max(1, -(-self.count // SHOWN))


def codes_per_facet(codebook_id: int) -> dict[str, int]:
    """facet key → how many different category codes it has across the codebook's versions."""
    rows = Category.objects.filter(facet__version__codebook_id=codebook_id).order_by()
    counts = rows.values("facet__key").annotate(n=Count("code", distinct=True))
    return {row["facet__key"]: row["n"] for row in counts}


def rule_breaks(
    *, version: CodebookVersion, viewer: Any, pages: Mapping[int, int] | None = None
) -> list[RuleBreak]:
    """The rules of `version` with the submitted annotations that break them, made with the
    version it was started from (or with this one, e.g. carried over), in the studies `viewer`
    owns. Annotations of other users' studies are never counted: labels are their owners'.
    Each rule lists SHOWN annotations, of page `pages[index]` (from 1; default the first).

    The label sets are checked by the database (`LabelUsage.rule_breaks`), not here: at
    100,000 items reading every label set took over 30 seconds."""
    rules, infos, checks, versions = _checks(version, pages)
    found = label_usage().rule_breaks(versions, checks, viewer, shown=SHOWN) if rules else []
    return _breaks(rules, infos, checks, found)


def rule_breaks_as_of(
    *, version: CodebookVersion, viewer: Any, pages: Mapping[int, int] | None = None
) -> tuple[list[RuleBreak] | None, Any]:
    """`rule_breaks` as the label store last counted them (`LabelUsage.rule_breaks_as_of`),
    with its status for the page (None: counted now); (None, status) before the first count."""
    rules, infos, checks, versions = _checks(version, pages)
    if not rules:
        return [], None
    found, status = label_usage().rule_breaks_as_of(versions, checks, viewer, shown=SHOWN)
    return (None if found is None else _breaks(rules, infos, checks, found)), status


def _checks(
    version: CodebookVersion, pages: Mapping[int, int] | None
) -> tuple[tuple[Rule, ...], dict[str, FacetInfo], list[RuleCheck], list[int]]:
    """The version's rules, its facets, a check of each rule and the versions checked."""
    rules = version_rules(version)
    if not rules:
        return (), {}, [], []
    infos = version_facet_infos(version)
    pages = pages or {}
    codes = codes_per_facet(version.codebook_id)
    checks = [
        RuleCheck(
            rule,
            infos[rule.facet].groups if rule.facet in infos else frozenset(),
            codes=codes.get(rule.facet, 0),
            offset=(max(1, pages.get(n, 1)) - 1) * SHOWN,
        )
        for n, rule in enumerate(rules)
    ]
    versions = [version.pk] + ([version.based_on_id] if version.based_on_id else [])
    return rules, infos, checks, versions


def _breaks(
    rules: Sequence[Rule],
    infos: dict[str, FacetInfo],
    checks: list[RuleCheck],
    found: list[tuple[int, list[SubmittedLabels]]],
) -> list[RuleBreak]:
    return [
        RuleBreak(n, rule, describe(rule, infos), count, annotations, check.offset)
        for n, (rule, check, (count, annotations)) in enumerate(
            zip(rules, checks, found, strict=True)
        )
    ]
