"""taxonomy_app's label usage hook (settings.TAXONOMY_LABEL_USAGE) over AnnotationLabel."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.urls import reverse

from annotator.figures import Figures, study_figures
from taxonomy_app.models import Category
from taxonomy_app.usage import RuleCheck, SubmittedLabels

from . import sql
from .models import Annotation, AnnotationLabel, Membership


class StudyLabelUsage:
    """Counts, lists and moves annotators' labels for taxonomy_app (diffs, merges, splits and
    carrying labels over to a newly published version). Counts and lists shown to a person
    are of the studies they own only."""

    def count_labels(self, category_ids: Collection[int], *, viewer: Any) -> dict[int, int]:
        """Submitted labels per category in the studies `viewer` owns (staff: every study);
        drafts never count, and a viewer who owns no study gets {}."""
        if not getattr(viewer, "is_authenticated", False):
            return {}
        labels = AnnotationLabel.objects.filter(
            category_id__in=list(category_ids), annotation__status=Annotation.Status.SUBMITTED
        )
        if not viewer.is_staff:
            owned = Membership.objects.filter(user=viewer, role=Membership.Role.OWNER)
            labels = labels.filter(
                annotation__assignment__item__study_id__in=owned.values("study_id")
            )
        rows = labels.values("category_id").annotate(n=Count("pk")).order_by()
        return {row["category_id"]: row["n"] for row in rows}

    def labels_using(self, category_id: int) -> list[Hashable]:
        return list(
            AnnotationLabel.objects.filter(category_id=category_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )

    @transaction.atomic
    def relabel(self, mapping: Mapping[int, int]) -> int:
        """Point labels at their category's successor (and its facet, which may be the new
        version's copy of the facet)."""
        facet_of = dict(
            Category.objects.filter(pk__in=set(mapping.values())).values_list("pk", "facet_id")
        )
        moved = 0
        for old, new in mapping.items():
            if old != new and new in facet_of:
                moved += AnnotationLabel.objects.filter(category_id=old).update(
                    category_id=new, facet_id=facet_of[new]
                )
        return moved

    def submitted_labels(self, version_ids: Collection[int], viewer: Any) -> list[SubmittedLabels]:
        """Submitted annotations with these codebook versions, in the studies `viewer` owns
        (an owner sees every label of their study; nobody else is shown any). Two queries."""
        if not getattr(viewer, "is_authenticated", False):
            return []
        owned = Membership.objects.filter(user=viewer, role=Membership.Role.OWNER)
        annotations = Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED,
            codebook_version_id__in=list(version_ids),
            assignment__item__study_id__in=owned.values("study_id"),
        )
        labels: dict[int, dict[str, list[str]]] = {}
        rows = AnnotationLabel.objects.filter(annotation__in=annotations.values("pk"))
        for pk, key, code in rows.values_list("annotation_id", "facet__key", "category__code"):
            labels.setdefault(pk, {}).setdefault(key, []).append(code)
        heads = annotations.order_by("assignment__item__study_id", "pk").values_list(
            "pk",
            "assignment__item_id",
            "assignment__item__study__name",
            "assignment__item__issue__repository__owner",
            "assignment__item__issue__repository__name",
            "assignment__item__issue__number",
        )
        return [
            SubmittedLabels(
                annotation=pk,
                study=study,
                item=f"{owner}/{name}#{number}",
                url=reverse("studies:item", args=[item]),
                labels={key: tuple(codes) for key, codes in labels.get(pk, {}).items()},
            )
            for pk, item, study, owner, name, number in heads
        ]

    def rule_breaks(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> list[tuple[int, list[SubmittedLabels]]]:
        """Per check: how many submitted annotations made with these versions, in the studies
        `viewer` owns, break its rule, and `shown` of them (by study, then annotation) from
        the check's offset. On PostgreSQL one statement checks every rule (`sql.rule_breaks`),
        then one query reads the listed annotations and one their labels."""
        if not getattr(viewer, "is_authenticated", False):
            return [(0, []) for _ in checks]
        if connection.vendor != "postgresql":
            return self._rule_breaks_by_orm(version_ids, checks, viewer, shown=shown)
        live, params = _rule_query(version_ids, checks, viewer.pk, shown)
        found = rule_breaks_of(**params)
        return self._listed(dict(zip(live, found, strict=True)), len(checks))

    def rule_breaks_as_of(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> tuple[list[tuple[int, list[SubmittedLabels]]] | None, Figures | None]:
        """`rule_breaks` as figures (annotator/figures.py): checking every label set of a
        hundred thousand items takes over a second, so past FIGURES_INLINE_MAX_ITEMS submitted
        annotations with these versions a job counts them and the last count is served
        meanwhile. They change only when such an annotation is submitted or deleted (its labels
        stay as first submitted) or the viewer's studies change: the fingerprint is the
        annotations' count and newest id, and the studies the viewer owns."""
        if not getattr(viewer, "is_authenticated", False) or connection.vendor != "postgresql":
            return self.rule_breaks(version_ids, checks, viewer, shown=shown), None
        live, params = _rule_query(version_ids, checks, viewer.pk, shown)
        state = Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED, codebook_version_id__in=list(version_ids)
        ).aggregate(n=Count("pk"), last=Max("pk"))
        owned = sorted(
            Membership.objects.filter(user=viewer, role=Membership.Role.OWNER).values_list(
                "study_id", flat=True
            )
        )
        key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:32]
        figures = study_figures(
            f"rule-breaks:{key}",
            fingerprint=repr((state["n"], state["last"], owned)),
            items=state["n"],
            compute="annotator.studies.usage.rule_breaks_of",
            params=params,
            timeout=RULE_BREAKS_CACHE_SECONDS,
        )
        if not figures.ready:
            return None, figures
        found: list[tuple[int, list[int]]] = figures.value
        return self._listed(dict(zip(live, found, strict=True)), len(checks)), figures

    def _listed(
        self, by_check: Mapping[int, tuple[int, list[int]]], checks: int
    ) -> list[tuple[int, list[SubmittedLabels]]]:
        """Per check: its count and its listed annotations (one query for the annotations, one
        for their labels); an annotation deleted since the count is left out."""
        listed = {pk for _, ids in by_check.values() for pk in ids}
        heads = {
            row[0]: row for row in Annotation.objects.filter(pk__in=listed).values_list(*_HEAD)
        }
        labels = _labels_of(listed)
        out = []
        for n in range(checks):
            count, ids = by_check.get(n, (0, []))
            out.append((count, [_submitted_labels(heads[pk], labels) for pk in ids if pk in heads]))
        return out

    def _rule_breaks_by_orm(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> list[tuple[int, list[SubmittedLabels]]]:
        """`rule_breaks` with the ORM: per rule a count and a page, each a join over the labels
        the rule looks at. Off PostgreSQL (the SQLite demo), and what tests hold `sql.rule_breaks`
        equal to; at 100,000 items on PostgreSQL a minute for the seed codebook's ten rules."""
        annotations = self._submitted(version_ids, viewer)
        if annotations is None:
            return [(0, []) for _ in checks]
        broken = [_broken(check) for check in checks]
        counts = [0 if q is None else annotations.filter(q).count() for q in broken]
        ordered = annotations.order_by("assignment__item__study_id", "pk")
        pages = [
            list(ordered.filter(q)[check.offset : check.offset + shown].values_list(*_HEAD))
            if q is not None and count > check.offset
            else []
            for check, q, count in zip(checks, broken, counts, strict=True)
        ]
        labels = _labels_of({row[0] for page in pages for row in page})
        return [
            (count, [_submitted_labels(row, labels) for row in page])
            for count, page in zip(counts, pages, strict=True)
        ]

    def _submitted(self, version_ids: Collection[int], viewer: Any) -> QuerySet[Annotation] | None:
        if not getattr(viewer, "is_authenticated", False):
            return None
        owned = Membership.objects.filter(user=viewer, role=Membership.Role.OWNER)
        return Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED,
            codebook_version_id__in=list(version_ids),
            assignment__item__study_id__in=owned.values("study_id"),
        )


def _rule_query(
    version_ids: Collection[int], checks: Sequence[RuleCheck], owner_id: int, shown: int
) -> tuple[list[int], dict[str, Any]]:
    """The checks whose rule some label set can break (their positions), and `rule_breaks_of`'s
    parameters for them, JSON values (a figures job's parameters)."""
    label_ids = _LabelIds(version_ids)
    predicates = [_predicate(check, label_ids) for check in checks]
    live = [n for n, predicate in enumerate(predicates) if predicate is not None]
    params = {
        "version_ids": sorted(version_ids),
        "owner_id": owner_id,
        "predicates": [list(p) for p in predicates if p is not None],
        "offsets": [checks[n].offset for n in live],
        "shown": shown,
    }
    return live, params


def rule_breaks_of(
    version_ids: list[int],
    owner_id: int,
    predicates: list[list[Any]],
    offsets: list[int],
    shown: int,
) -> list[tuple[int, list[int]]]:
    """`sql.rule_breaks` of these JSON parameters, in the request or by a figures job."""
    checked = [sql.RulePredicate(text, list(params)) for text, params in predicates]
    return sql.rule_breaks(version_ids, owner_id, checked, offsets, shown)


# How long a count of small label stores is kept (the fingerprint changes with every submit).
RULE_BREAKS_CACHE_SECONDS = 3600

_HEAD = (
    "pk",
    "assignment__item_id",
    "assignment__item__study__name",
    "assignment__item__issue__repository__owner",
    "assignment__item__issue__repository__name",
    "assignment__item__issue__number",
)


def _labels_of(annotation_ids: Collection[int]) -> dict[int, dict[str, list[str]]]:
    labels: dict[int, dict[str, list[str]]] = {}
    rows = AnnotationLabel.objects.filter(annotation_id__in=list(annotation_ids)).order_by()
    for pk, key, code in rows.values_list("annotation_id", "facet__key", "category__code"):
        labels.setdefault(pk, {}).setdefault(key, []).append(code)
    return labels


def _submitted_labels(
    row: tuple[Any, ...], labels: Mapping[int, Mapping[str, list[str]]]
) -> SubmittedLabels:
    pk, item, study, owner, name, number = row
    return SubmittedLabels(
        annotation=pk,
        study=study,
        item=f"{owner}/{name}#{number}",
        url=reverse("studies:item", args=[item]),
        labels={key: tuple(codes) for key, codes in labels.get(pk, {}).items()},
    )


def _in(facet: str, codes: Collection[str] | None = None) -> Exists:
    """The annotation has a label in `facet` (with one of `codes`, when given)."""
    labels = AnnotationLabel.objects.filter(annotation=OuterRef("pk"), facet__key=facet)
    return Exists(labels if codes is None else labels.filter(category__code__in=list(codes)))


def _more_than(facet: str, most: int, codes: Collection[str] | None = None) -> Q:
    """The annotation has more than `most` different codes in `facet` (of `codes`, when
    given)."""
    labels = AnnotationLabel.objects.filter(facet__key=facet)
    if codes is not None:
        labels = labels.filter(category__code__in=list(codes))
    many = (
        labels.order_by()
        .values("annotation")
        .annotate(n=Count("category__code", distinct=True))
        .filter(n__gt=most)
    )
    return Q(pk__in=many.values("annotation"))


def _broken(check: RuleCheck) -> Q | None:
    """The annotations breaking the rule, as `taxonomy_app.rules.violations` decides it on one
    label set; None where no label set can break it."""
    rule = check.rule
    if rule.kind in ("requires", "forbids"):
        if rule.when_facet is not None and not rule.when_categories:
            return None  # a condition no label set meets
        trigger = Q() if rule.when_facet is None else Q(_in(rule.when_facet, rule.when_categories))
        return trigger & (~Q(_in(rule.facet)) if rule.kind == "requires" else Q(_in(rule.facet)))
    if rule.kind == "leaf_only":
        groups = check.groups - set(rule.categories)
        return Q(_in(rule.facet, groups)) if groups else None
    if rule.kind == "exclusive":
        twice = {code for code in rule.categories if rule.categories.count(code) > 1}
        codes = set(rule.categories)
        either = _more_than(rule.facet, 1, codes) if len(codes) > 1 else None
        repeated = Q(_in(rule.facet, twice)) if twice else None
        if either is not None and repeated is not None:
            return either | repeated
        return either or repeated
    if rule.kind == "max_choices" and rule.max_choices and check.codes > rule.max_choices:
        return _more_than(rule.facet, rule.max_choices)
    return None


class _LabelIds:
    """The ids of the facets and categories of the versions checked, by facet key and code:
    `sql.rule_breaks` compares ids. A version's facet keys are unique, as are a facet's codes;
    a key or code in several versions has one id in each."""

    def __init__(self, version_ids: Collection[int]) -> None:
        self._facets: dict[str, set[int]] = {}
        self._codes: dict[str, dict[str, list[int]]] = {}
        categories = Category.objects.filter(facet__version_id__in=list(version_ids))
        for pk, facet, key, code in categories.values_list("pk", "facet_id", "facet__key", "code"):
            self._facets.setdefault(key, set()).add(facet)  # a label has a category
            self._codes.setdefault(key, {}).setdefault(code, []).append(pk)

    def facet(self, key: str) -> set[int]:
        return self._facets.get(key, set())

    def codes(self, key: str, codes: Collection[str] | None = None) -> list[int]:
        """The categories of `codes` in the facet (all of its codes when None)."""
        found = self._codes.get(key, {})
        wanted = found if codes is None else codes
        return [pk for code in wanted for pk in found.get(code, [])]


def _predicate(check: RuleCheck, ids: _LabelIds) -> sql.RulePredicate | None:
    """The rule as `sql.rule_breaks` checks it (as `_broken` does with the ORM); None where no
    label set can break it."""
    rule = check.rule
    if rule.kind in ("requires", "forbids"):
        if rule.when_facet is not None and not rule.when_categories:
            return None
        own = sql.has_facet(ids.facet(rule.facet))
        if rule.when_facet is None:
            return (
                own if rule.kind == "forbids" else sql.RulePredicate(f"NOT ({own.sql})", own.params)
            )
        trigger = sql.has_code(ids.codes(rule.when_facet, rule.when_categories))
        return sql.both(trigger, own, negate_second=rule.kind == "requires")
    if rule.kind == "leaf_only":
        groups = check.groups - set(rule.categories)
        return sql.has_code(ids.codes(rule.facet, groups)) if groups else None
    if rule.kind == "exclusive":
        twice = {code for code in rule.categories if rule.categories.count(code) > 1}
        codes = set(rule.categories)
        two = sql.more_codes_than(ids.codes(rule.facet, codes), 1) if len(codes) > 1 else None
        repeated = sql.has_code(ids.codes(rule.facet, twice)) if twice else None
        if two is not None and repeated is not None:
            return sql.either(two, repeated)
        return two or repeated
    if rule.kind == "max_choices" and rule.max_choices and check.codes > rule.max_choices:
        return sql.more_codes_than(ids.codes(rule.facet), rule.max_choices)
    return None
