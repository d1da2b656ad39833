"""The hook through which taxonomy_app learns about labels without importing their app.

Labels (annotations, decisions) live in apps that import taxonomy_app, never the reverse. Such an
app tells taxonomy_app how to reach its labels with a setting naming a class:

    TAXONOMY_LABEL_USAGE = "annotator.studies.labels.StudyLabelUsage"

The class is instantiated without arguments and implements `LabelUsage`. Unset, the default
`NoLabelUsage` reports that no label uses any category.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from .rules import Rule

DEFAULT = "taxonomy_app.usage.NoLabelUsage"


@dataclass(frozen=True)
class SubmittedLabels:
    """One submitted annotation's labels, which a new version's rules are checked against."""

    annotation: Hashable
    study: str
    item: str  # what a person reads, e.g. "deepspeedai/DeepSpeed#12"
    url: str  # the item's page
    labels: Mapping[str, tuple[str, ...]]  # facet key → category codes


@dataclass(frozen=True)
class RuleCheck:
    """One rule to check submitted annotations against, as `rules.violations` would: `groups`
    are the codes its facet's groups have in the version the rule belongs to (what `leaf_only`
    refuses); `codes` how many different codes the facet has across the codebook's versions
    (a label set holds at most these: a label's category is one of its facet's, in the version
    it was made with or one its labels were carried over to); `offset` is where the listed
    annotations start (0: the first)."""

    rule: Rule
    groups: frozenset[str] = frozenset()
    codes: int = 0
    offset: int = 0


class LabelUsage(Protocol):
    def count_labels(self, category_ids: Collection[int], *, viewer: Any) -> dict[int, int]:
        """How many submitted labels use each of these categories (ids missing from the
        result: 0), counted in the studies `viewer` owns only (staff: in every study); drafts
        are never counted. Anyone else gets {}: counts are for the owners of the studies
        they come from."""
        ...

    def labels_using(self, category_id: int) -> list[Hashable]:
        """The labels (any stable identifier, e.g. a label row's pk) that use this category."""
        ...

    def relabel(self, mapping: Mapping[int, int]) -> int:
        """Point the labels of each old category id at the new one; return how many moved."""
        ...

    def submitted_labels(self, version_ids: Collection[int], viewer: Any) -> list[SubmittedLabels]:
        """The submitted annotations made with these versions, in the studies `viewer` owns
        only: labels (and their counts) are for the owners of the studies they come from."""
        ...

    def rule_breaks(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> list[tuple[int, list[SubmittedLabels]]]:
        """Per check, in order: how many of `submitted_labels(version_ids, viewer)` break its
        rule, and `shown` of those from the check's offset, in the order `submitted_labels`
        lists them. The same answer as checking each with `rules.violations`, without reading
        every label set."""
        ...

    def rule_breaks_as_of(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> tuple[list[tuple[int, list[SubmittedLabels]]] | None, Any]:
        """`rule_breaks`, as a store that counts them in the background last counted them, and
        when: (None, status) until they are counted once. `status` is None where they were
        counted now, else what the page shows of it (annotator/figures.py's Figures: `as_of`,
        `updating`, `error`, `polling`, …)."""
        ...


class NoLabelUsage:
    """What taxonomy_app assumes while no app stores labels: none use anything."""

    def count_labels(self, category_ids: Collection[int], *, viewer: Any) -> dict[int, int]:
        return {}

    def labels_using(self, category_id: int) -> list[Hashable]:
        return []

    def relabel(self, mapping: Mapping[int, int]) -> int:
        return 0

    def submitted_labels(self, version_ids: Collection[int], viewer: Any) -> list[SubmittedLabels]:
        return []

    def rule_breaks(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> list[tuple[int, list[SubmittedLabels]]]:
        return [(0, []) for _ in checks]

    def rule_breaks_as_of(
        self, version_ids: Collection[int], checks: Sequence[RuleCheck], viewer: Any, *, shown: int
    ) -> tuple[list[tuple[int, list[SubmittedLabels]]] | None, Any]:
        return self.rule_breaks(version_ids, checks, viewer, shown=shown), None


def label_usage() -> LabelUsage:
    """The configured LabelUsage (settings.TAXONOMY_LABEL_USAGE, read on every call so tests
    can override it)."""
    path = getattr(settings, "TAXONOMY_LABEL_USAGE", DEFAULT)
    usage: LabelUsage = import_string(path)()
    return usage
