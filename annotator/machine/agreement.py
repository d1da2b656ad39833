"""The machine raters' labels beside the humans' in an agreement run: the run's label table
(humans only, annotator.agreement.labels) and the kept machine answers of the same scope go to
the pure `annotator.agreement.partitions`. Called by `agreement.services.compute_result`; the
result's `partitions` key is absent when no machine rater answered in the scope on an item whose
human labels are all in."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from django.db.models import F

from annotator.agreement._table import MISSING
from annotator.agreement.partitions import INTERVAL, Cell, Column, Scale, coded_partitions

from .models import MachineCall

if TYPE_CHECKING:
    from annotator.agreement.labels import FacetTable, LabelTable
    from annotator.agreement.models import AgreementRun

Outcome = MachineCall.Outcome


def machine_partitions(run: AgreementRun, table: LabelTable) -> dict[str, Any] | None:
    """`result["partitions"]` of the run, or None when no machine rater answered in scope."""
    # Only items whose human labels are all in, as on the item pages (visibility.py): a run of
    # a round still being labelled shows nobody a machine label through its figures.
    calls = MachineCall.objects.filter(
        rater__study_id=run.study_id,
        item__quota__gt=0,
        item__submitted_count__gte=F("item__quota"),
    ).exclude(outcome=Outcome.FAILED)
    if run.round_id is not None:
        calls = calls.filter(item__round_id=run.round_id)
    rows = list(
        calls.values_list("rater__name", "rater__model", "sample", "item_id", "outcome", "labels")
    )
    if not rows:
        return None
    answers: dict[Column, dict[int, dict[str, list[str]]]] = defaultdict(dict)
    for name, _, sample, item, outcome, labels in rows:
        if outcome == Outcome.LABELED:
            answers[(name, sample)][item] = labels
    names = [r["username"] for r in table.raters]
    return {
        "raters": _rater_rows(rows),
        "interval": INTERVAL,
        "facets": [_facet(facet, names, answers) for facet in table.facets],
    }


def _rater_rows(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Per rater: its model, kept answers and the invalid-answer rate."""
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    models: dict[str, str] = {}
    for name, model, _, _, outcome, _ in rows:
        outcomes[name][outcome] += 1
        models[name] = model
    out = []
    for name in sorted(outcomes):
        count = outcomes[name]
        answered = count[Outcome.LABELED] + count[Outcome.INVALID]
        out.append(
            {
                "name": name,
                "model": models[name],
                "labeled": count[Outcome.LABELED],
                "invalid": count[Outcome.INVALID],
                "invalid_rate": count[Outcome.INVALID] / answered if answered else None,
            }
        )
    return out


def _facet(
    facet: FacetTable, names: list[str], answers: dict[Column, dict[int, dict[str, list[str]]]]
) -> dict[str, Any]:
    """One facet's partitions, coded: the humans' codes are the run's table itself (its
    single-choice values are the declared categories, its label sets join the scale), and
    each machine column codes only the items it answered."""
    table = facet.table
    labels = [c["code"] for c in facet.categories]
    multilabel = facet.multilabel
    scale = Scale(labels, multilabel, table.values if multilabel else ())
    if not multilabel and list(table.values) != labels:
        raise ValueError(f"facet {facet.key}: the table's values are not its categories")
    known = set(labels)
    machines = {
        column: _machine_codes(facet, by_item, scale, known) for column, by_item in answers.items()
    }
    return coded_partitions(
        key=facet.key,
        name=facet.name,
        scale=scale,
        humans=table.codes,
        human_names=names,
        machines=machines,
    )


def _machine_codes(
    facet: FacetTable, by_item: dict[int, dict[str, list[str]]], scale: Scale, known: set[str]
) -> npt.NDArray[np.int64]:
    """The machine's code on each row of the facet's table (-1: no answer there)."""
    out = np.full(len(facet.items), MISSING, dtype=np.int64)
    items = np.fromiter(by_item, dtype=np.int64, count=len(by_item))
    rows = np.searchsorted(facet.items, items)  # the table's items are ascending ids
    inside = rows < len(facet.items)
    inside[inside] = facet.items[rows[inside]] == items[inside]
    answered = list(by_item.values())
    for i in np.flatnonzero(inside).tolist():
        out[rows[i]] = scale.add(_cell(answered[i], facet.key, facet.multilabel, known))
    return out


def _cell(labels: dict[str, list[str]] | None, key: str, multilabel: bool, known: set[str]) -> Cell:
    """The machine's rating of one facet as the humans' tables hold it: a code, a set of codes
    or None (no answer, the facet left empty, or a code the run's codebook version lacks)."""
    codes = (labels or {}).get(key) or []
    if not codes or not set(codes) <= known:
        return None
    return frozenset(codes) if multilabel else codes[0]
