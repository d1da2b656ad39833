"""taxonomy_app's label usage hook (settings.TAXONOMY_LABEL_USAGE) over AnnotationLabel."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.urls import reverse

from taxonomy_app.models import Category
from taxonomy_app.usage import SubmittedLabels

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
