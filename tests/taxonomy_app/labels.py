"""A test-only label store behind the TAXONOMY_LABEL_USAGE hook: label id → category id."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from typing import Any

LABELS: dict[str, int] = {}


class MemoryLabelUsage:
    def count_labels(self, category_ids: Collection[int], *, viewer: Any) -> dict[int, int]:
        """Every label counts, for a signed-in viewer (the store has no studies to own)."""
        if not getattr(viewer, "is_authenticated", False):
            return {}
        counts: dict[int, int] = {}
        for category in LABELS.values():
            if category in category_ids:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def labels_using(self, category_id: int) -> list[Hashable]:
        return sorted(label for label, category in LABELS.items() if category == category_id)

    def relabel(self, mapping: Mapping[int, int]) -> int:
        moved = 0
        for label, category in LABELS.items():
            if category in mapping:
                LABELS[label] = mapping[category]
                moved += 1
        return moved
