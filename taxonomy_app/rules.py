"""Label rules of a codebook version, checked over one label set. Imports no Django.

A rule constrains which label sets a submit, a decision or an import may hold:

- `requires`: `facet` must have a category when `when_facet` has one of `when_categories`
  (without `when_facet`: always);
- `forbids`: `facet` must stay empty when `when_facet` has one of `when_categories`;
- `leaf_only`: a hierarchical facet takes leaves only; its groups (categories with
  sub-categories) are refused, except those listed in `categories`;
- `exclusive`: at most one of `categories` (two or more codes of `facet`) at a time;
- `max_choices`: at most `max_choices` categories of a multiple-choice facet.

A label set is {facet key: category codes}. `check_labels` returns the errors by facet key, the
shape the annotate page and the API show; `violations` lists every broken rule, for the pages
that count annotations breaking a new version's rules. `check_rules` refuses rules that do not
fit a codebook (unknown facet, a category of another facet, …) with a `RuleError` naming the
rule and the field.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

KINDS = ("requires", "forbids", "leaf_only", "exclusive", "max_choices")
CONDITIONAL = ("requires", "forbids")


class RuleError(ValueError):
    """A rule that does not fit its codebook; the message names the rule and the field."""


@dataclass(frozen=True)
class Rule:
    kind: str
    facet: str
    when_facet: str | None = None
    when_categories: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    max_choices: int | None = None

    @property
    def label(self) -> str:
        """How messages name the rule: "requires symptom", "leaf_only symptom"."""
        return f"{self.kind} {self.facet}"


@dataclass(frozen=True)
class FacetInfo:
    """What the rules need to know of a facet: its name, kind and categories."""

    key: str
    name: str
    multi: bool
    categories: Mapping[str, str]  # code → name, in order
    groups: frozenset[str] = frozenset()  # codes of the active categories that have children


@dataclass(frozen=True)
class Violation:
    index: int  # the rule's position in the list, from 0
    rule: Rule
    message: str


# Checking a label set -------------------------------------------------------------------------


def check_labels(
    rules: Sequence[Rule],
    labels: Mapping[str, Collection[str]],
    facets: Mapping[str, FacetInfo],
) -> dict[str, str]:
    """The first broken rule of each facet, as {facet key: message}; {} when all hold."""
    errors: dict[str, str] = {}
    for violation in violations(rules, labels, facets):
        errors.setdefault(violation.rule.facet, violation.message)
    return errors


def violations(
    rules: Sequence[Rule],
    labels: Mapping[str, Collection[str]],
    facets: Mapping[str, FacetInfo],
) -> list[Violation]:
    """Every rule the label set breaks, in rule order."""
    found: list[Violation] = []
    for index, rule in enumerate(rules):
        message = _broken(rule, labels, facets)
        if message:
            found.append(Violation(index, rule, message))
    return found


def _broken(
    rule: Rule, labels: Mapping[str, Collection[str]], facets: Mapping[str, FacetInfo]
) -> str:
    """The message for a rule this label set breaks, "" when it holds."""
    chosen = set(labels.get(rule.facet, ()))
    if rule.kind in CONDITIONAL:
        return _broken_condition(rule, chosen, labels, facets)
    if rule.kind == "leaf_only":
        info = facets.get(rule.facet)
        groups = sorted((chosen & info.groups) - set(rule.categories)) if info else []
        name = _category_name(facets, rule.facet, groups[0]) if groups else ""
        return f"a leaf category: choose one of {name}'s sub-categories" if groups else ""
    if rule.kind == "exclusive":
        both = [_category_name(facets, rule.facet, c) for c in rule.categories if c in chosen]
        return f"{_and(both)} exclude each other: choose one" if len(both) > 1 else ""
    if rule.kind == "max_choices" and len(chosen) > (rule.max_choices or len(chosen)):
        return f"at most {_choices(rule.max_choices or 0)} ({len(chosen)} chosen)"
    return ""


def _broken_condition(
    rule: Rule,
    chosen: set[str],
    labels: Mapping[str, Collection[str]],
    facets: Mapping[str, FacetInfo],
) -> str:
    trigger = _trigger(rule, labels)
    if trigger is None:
        return ""
    if rule.kind == "requires" and not chosen:
        return f"required {_when(rule, facets)}".rstrip()
    if rule.kind == "forbids" and chosen:
        name = _facet_name(facets, rule.facet).lower()
        return f"{_category_name(facets, rule.when_facet, trigger)} allows no {name}"
    return ""


def _trigger(rule: Rule, labels: Mapping[str, Collection[str]]) -> str | None:
    """The condition's category that holds ("" for an unconditional rule), else None."""
    if rule.when_facet is None:
        return ""
    chosen = set(labels.get(rule.when_facet, ()))
    return next((code for code in rule.when_categories if code in chosen), None)


# Rules in words -------------------------------------------------------------------------------


def describe(rule: Rule, facets: Mapping[str, FacetInfo]) -> str:
    """One rule as a short line of the guideline: "required when Screening is Relevant"."""
    if rule.kind == "requires":
        return f"required {_when(rule, facets)}".rstrip()
    if rule.kind == "forbids":
        return f"left empty {_when(rule, facets)}"
    if rule.kind == "leaf_only":
        allowed = [_category_name(facets, rule.facet, code) for code in rule.categories]
        text = "choose a leaf category: groups are not selectable"
        return text + (f" (except {_and(allowed)})" if allowed else "")
    if rule.kind == "exclusive":
        names = [_category_name(facets, rule.facet, code) for code in rule.categories]
        return f"at most one of {_or(names)}"
    if rule.kind == "max_choices":
        return f"at most {_choices(rule.max_choices or 0)}"
    return rule.kind


def facet_texts(
    rules: Sequence[Rule], key: str, facets: Mapping[str, FacetInfo]
) -> tuple[str, ...]:
    """The rules of one facet in words, for the guideline and the annotate page."""
    return tuple(describe(rule, facets) for rule in rules if rule.facet == key)


def _when(rule: Rule, facets: Mapping[str, FacetInfo]) -> str:
    if rule.when_facet is None:
        return ""
    names = [_category_name(facets, rule.when_facet, code) for code in rule.when_categories]
    return f"when {_facet_name(facets, rule.when_facet)} is {_or(names)}"


def _facet_name(facets: Mapping[str, FacetInfo], key: str | None) -> str:
    info = facets.get(key or "")
    return info.name if info else str(key)


def _category_name(facets: Mapping[str, FacetInfo], key: str | None, code: str) -> str:
    info = facets.get(key or "")
    return info.categories.get(code, code) if info else code


def _choices(n: int) -> str:
    return "one choice" if n == 1 else f"{n} choices"


def _or(names: Sequence[str]) -> str:
    return _join(names, "or")


def _and(names: Sequence[str]) -> str:
    return _join(names, "and")


def _join(names: Sequence[str], word: str) -> str:
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {word} {names[-1]}"


# Checking the rules themselves ----------------------------------------------------------------


def check_rules(rules: Sequence[Rule], facets: Mapping[str, FacetInfo]) -> None:
    """Refuse rules that do not fit these facets, naming the rule (1-based) and the field."""
    for index, rule in enumerate(rules, 1):
        check_rule(rule, facets, where=f"rule {index} ({rule.label})")


def check_rule(rule: Rule, facets: Mapping[str, FacetInfo], *, where: str = "rule") -> None:
    if rule.kind not in KINDS:
        raise RuleError(
            f"{where}: field 'kind': unknown rule kind {rule.kind!r} (expected {_or(KINDS)})"
        )
    info = facets.get(rule.facet)
    if info is None:
        raise RuleError(f"{where}: field 'facet': unknown facet {rule.facet!r}")
    if rule.kind in CONDITIONAL:
        _check_condition(rule, facets, where)
    elif rule.when_facet is not None or rule.when_categories:
        raise RuleError(f"{where}: field 'when_facet': a {rule.kind} rule takes no condition")
    if rule.kind == "leaf_only" and not info.groups:
        raise RuleError(
            f"{where}: field 'kind': leaf_only needs a hierarchical facet; "
            f"{rule.facet!r} has no sub-categories"
        )
    if rule.kind == "exclusive" and len(set(rule.categories)) < 2:
        raise RuleError(f"{where}: field 'categories': exclusive needs two categories or more")
    _check_codes(rule.categories, info, where, "categories")
    if rule.kind == "leaf_only":
        flat = sorted(set(rule.categories) - info.groups)
        if flat:
            raise RuleError(
                f"{where}: field 'categories': {flat[0]!r} has no sub-categories "
                "(list the groups that stay selectable)"
            )
    elif rule.kind != "exclusive" and rule.categories:
        raise RuleError(f"{where}: field 'categories': a {rule.kind} rule takes no categories")
    _check_max(rule, info, where)


def _check_condition(rule: Rule, facets: Mapping[str, FacetInfo], where: str) -> None:
    if rule.when_facet is None:
        if rule.kind == "forbids":
            raise RuleError(f"{where}: field 'when_facet': forbids needs a condition")
        return
    other = facets.get(rule.when_facet)
    if other is None:
        raise RuleError(f"{where}: field 'when_facet': unknown facet {rule.when_facet!r}")
    if rule.when_facet == rule.facet:
        raise RuleError(f"{where}: field 'when_facet': a facet cannot depend on itself")
    if not rule.when_categories:
        raise RuleError(f"{where}: field 'when_categories': name one category or more")
    _check_codes(rule.when_categories, other, where, "when_categories")


def _check_codes(codes: Sequence[str], info: FacetInfo, where: str, name: str) -> None:
    for code in codes:
        if code not in info.categories:
            raise RuleError(
                f"{where}: field {name!r}: {code!r} is not a category of facet {info.key!r}"
            )


def _check_max(rule: Rule, info: FacetInfo, where: str) -> None:
    if rule.kind != "max_choices":
        if rule.max_choices is not None:
            raise RuleError(f"{where}: field 'max_choices': only for a max_choices rule")
        return
    if rule.max_choices is None or rule.max_choices < 1:
        raise RuleError(f"{where}: field 'max_choices': a whole number of 1 or more is required")
    if not info.multi:
        raise RuleError(
            f"{where}: field 'max_choices': {rule.facet!r} is a single-choice facet already"
        )
