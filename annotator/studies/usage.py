"""taxonomy_app's label usage hook (settings.TAXONOMY_LABEL_USAGE) over AnnotationLabel."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping

from django.db import transaction
from django.db.models import Count

from taxonomy_app.models import Category

from .models import AnnotationLabel


class StudyLabelUsage:
    """Counts, lists and moves annotators' labels for taxonomy_app (diffs, merges, splits and
    carrying labels over to a newly published version)."""

    def count_labels(self, category_ids: Collection[int]) -> dict[int, int]:
        rows = (
            AnnotationLabel.objects.filter(category_id__in=list(category_ids))
            .values("category_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
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
