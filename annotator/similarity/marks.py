"""The issues a study's duplicate marks keep out, read without the similarity indexes: the
export, agreement and selection code asks this on every run, and `services.py` imports
scikit-learn, SciPy and datasketch for its passes (seconds of imports in a fresh worker)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from annotator.studies.models import Study

from .models import DuplicateMark

__all__ = ["duplicate_issue_ids", "left_out_summary"]


def duplicate_issue_ids(*, study: Study | int, issue_ids: Iterable[int] | None = None) -> set[int]:
    """Ids of the issues the study's owners marked a duplicate and did not include anyway
    (optionally among `issue_ids`): what selections, agreement and counts leave out."""
    marks = DuplicateMark.objects.excluding().filter(
        study_id=study.pk if isinstance(study, Study) else study
    )
    if issue_ids is not None:
        marks = marks.filter(issue_id__in=list(issue_ids))
    return set(marks.values_list("issue_id", flat=True))


def left_out_summary(*, study: Study | int) -> dict[str, Any]:
    """For the dataset card: how many issues were left out as duplicates, and which (with the
    issue each duplicates), and how many duplicates were included anyway."""
    study_id = study.pk if isinstance(study, Study) else study
    current = DuplicateMark.objects.current().filter(
        study_id=study_id, decision=DuplicateMark.Decision.DUPLICATE
    )
    rows = current.select_related("issue__repository", "duplicate_of__repository").order_by(
        "issue__repository__owner", "issue__repository__name", "issue__number"
    )
    left_out = [
        {"issue": str(m.issue), "duplicate_of": str(m.duplicate_of)} for m in rows if not m.include
    ]
    included = sum(1 for m in rows if m.include)
    return {"left_out": len(left_out), "issues": left_out, "included_anyway": included}
