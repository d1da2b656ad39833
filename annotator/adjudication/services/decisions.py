"""Decisions: automatic (unanimous, majority) when an item's last annotation arrives, and by an
adjudicator with optimistic locking; the owner's release of an item for discussion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator.sql import one_or_none
from annotator.studies.codebook import CodebookSchema, codebook_schema
from annotator.studies.models import Item, Study
from taxonomy_app.models import Facet

from .. import sql
from ..errors import AdjudicationError, DecisionConflict, LabelErrors
from ..models import AdjudicationSettings, Decision
from . import rules
from .history import record_change

Source = Decision.Source


# No savepoint of its own: it runs inside the submit's transaction, and a failure there fails
# the submit; called alone, it gets a transaction.
@transaction.atomic(savepoint=False)
def decide_item_if_complete(*, item: Item, schema: CodebookSchema | None = None) -> Decision | None:
    """Once all k annotations of `item` are submitted: store its agreement and decide it where
    the rules allow (unanimous; majority when the study enables it and k ≥ 3; neither while an
    annotator marked a facet unsure and the study routes unsure labels to adjudication);
    otherwise it waits in the disagreement queue. Called again after a re-submit, it re-applies
    the rules to an automatic decision; a person's decision stands. Returns the item's
    decision, if any.

    `schema`, the study's codebook structure when the caller has it, spares reading the facets
    (this runs inside every last submit of an item, so its queries count)."""
    # The item's row lock serialises everything that decides it (the submits of its annotators,
    # the adjudicator): the labels read below are then the last committed, not a stale mix.
    # NO KEY: rows that merely refer to the item (assignments, history) are not held up.
    state = sql.lock_item(item.pk)
    if state is None or state.submitted < state.quota:
        return None
    version_id = state.codebook_version_id
    if schema is not None and schema.version_id == version_id:
        facets = [(f.id, f.key) for f in schema.facets]
    else:
        schema = None
        facets = list(
            Facet.objects.filter(version=version_id)
            .order_by("order", "pk")
            .values_list("pk", "key")
        )
    submitted = sql.submitted_annotations(item.pk)
    outcome = rules.decide(
        [a.labels for a in submitted],
        [pk for pk, _ in facets],
        majority=state.majority_rule,
        unsure=_unsure_facets(submitted, [key for _, key in facets]),
        route_unsure=state.route_unsure,
    )
    _store_agreement(item.pk, outcome)
    decision = one_or_none(Decision.objects.select_for_update().filter(item=item.pk))
    if decision is not None and not decision.is_automatic:
        return decision
    if outcome.source is None:
        if decision is not None:
            decision.delete()
            record_change(item=item, user=None, decision=None)
        return None
    rows = [(f, c) for f, cs in outcome.labels.items() for c in sorted(cs)]
    decision = _save_automatic(item.pk, decision, outcome.source, rows)
    if schema is None:
        record_change(item=item, user=None)
    else:  # the history's snapshot from what was just written, not read back
        record_change(item=item, user=None, decision=decision, labels=schema.codes(rows))
    return decision


def _unsure_facets(submitted: Sequence[sql.Submitted], keys: Sequence[str]) -> list[str]:
    """The facet keys any annotation marked unsure, in the codebook's order (a key of no facet
    of the version, which a submit refuses, last)."""
    marked = {key for annotation in submitted for key in annotation.unsure}
    return [k for k in keys if k in marked] + sorted(marked - set(keys))


def _store_agreement(item_id: int, outcome: rules.Outcome) -> None:
    value = max(0.0, min(1.0, outcome.agreement))
    sql.store_item_agreement(item_id, value, list(outcome.disagreeing), outcome.unsure)


def _save_automatic(
    item_id: int, decision: Decision | None, source: str, rows: Sequence[tuple[int, int]]
) -> Decision:
    if decision is None:
        decision = sql.insert_decision(Decision(item_id=item_id, source=source))
        _write_labels(decision, rows, new=True)
        return decision
    Decision.objects.filter(pk=decision.pk).update(
        source=source, version=F("version") + 1, updated_at=timezone.now()
    )
    decision.source = source
    _write_labels(decision, rows)
    return decision


def _write_labels(
    decision: Decision, rows: Sequence[tuple[int, int]], *, new: bool = False
) -> None:
    """Replace the decision's labels (`new`: it was just created, there are none to delete)."""
    sql.replace_decision_labels(decision.pk, rows, new=new)


@transaction.atomic
def adjudicate_item(
    *,
    item: Item,
    user: Any,
    labels: Mapping[int, Sequence[int]],
    reason: str,
    comment: str = "",
    version: int,
    confidence: int | None = None,
) -> Decision:
    """Save the adjudicator's final labels for `item` with the reason for the disagreement and,
    optionally, their confidence (Decision.Confidence: 1 low, 2 medium, 3 high).

    `version` is the decision version the adjudicator saw (0: no decision yet). If someone saved
    the item's decision since, DecisionConflict is raised and their decision is kept. Labels are
    validated like a submit (required facets, one category in a single-choice facet, categories
    of the study's codebook version): LabelErrors by facet key, and nothing is written."""
    schema = codebook_schema(item.study.codebook_version)
    rows, errors = schema.validate_labels(labels, require=True)
    if reason not in Decision.Reason.values:
        errors["reason"] = "choose the reason for the disagreement"
    if confidence is not None and confidence not in Decision.Confidence.values:
        errors["confidence"] = "1 (low), 2 (medium) or 3 (high), or none"
    if errors:
        raise LabelErrors(errors)
    values = {
        "source": Source.ADJUDICATED,
        "reason": reason,
        "comment": comment.strip(),
        "decided_by": user,
        "confidence": confidence,
    }
    decision = _claim(item, version, values)
    _write_labels(decision, rows)
    record_change(item=item, user=user)
    return decision


def _claim(item: Item, version: int, values: dict[str, Any]) -> Decision:
    """Write the decision row only if it is still at `version` (compare-and-set), under the
    item's row lock, as `decide_item_if_complete` takes it."""
    one_or_none(Item.objects.select_for_update(no_key=True).filter(pk=item.pk).values_list("pk"))
    if version == 0:
        try:
            with transaction.atomic():
                return Decision.objects.create(item=item, version=1, **values)
        except IntegrityError:
            raise DecisionConflict(conflict_message(item)) from None
    updated = Decision.objects.filter(item=item, version=version).update(
        version=F("version") + 1, updated_at=timezone.now(), **values
    )
    if not updated:
        raise DecisionConflict(conflict_message(item))
    return Decision.objects.get(item=item)


def conflict_message(item: Item) -> str:
    decision = Decision.objects.filter(item=item).select_related("decided_by").first()
    if decision is None:
        return "The decision on this item changed while you were deciding. Reload and decide again."
    who = decision.decided_by.get_username() if decision.decided_by else "an automatic rule"
    when = timezone.localtime(decision.updated_at).strftime("%H:%M:%S")
    return (
        f"Not saved: {who} saved a decision on this item at {when}, after you opened it. "
        "Their decision is kept; reload to see it, then change it if you still disagree."
    )


@transaction.atomic
def release_item(*, item: Item) -> bool:
    """Open the item for discussion: its annotators who submitted may now read the others'
    labels and join the thread. Returns False when it was released already."""
    return bool(
        Item.objects.filter(pk=item.pk, released_at__isnull=True).update(released_at=timezone.now())
    )


def set_blind_options(*, study: Study, blind: bool, fast_label_seconds: int) -> None:
    """Blind adjudication on or off, and the seconds under which a label is flagged as fast."""
    if fast_label_seconds < 0:
        raise AdjudicationError("the fast-label threshold is a number of seconds, 0 or more")
    AdjudicationSettings.objects.update_or_create(
        study=study, defaults={"blind": blind, "fast_label_seconds": fast_label_seconds}
    )


@transaction.atomic
def set_majority_rule(*, study: Study, enabled: bool) -> int:
    """Turn the majority rule on or off for `study` and re-apply the rules to its complete items
    that no person decided. Returns how many items are decided automatically afterwards."""
    if enabled and study.overlap_k < 3:
        raise AdjudicationError("the majority rule needs k ≥ 3 annotators per item")
    AdjudicationSettings.objects.update_or_create(study=study, defaults={"majority_rule": enabled})
    return reapply_decision_rules(study=study)


@transaction.atomic
def reapply_decision_rules(*, study: Study) -> int:
    """Apply the decision rules again to the study's complete items that no person decided
    (after a change of the rules: the majority rule, routing unsure labels to adjudication).
    Returns how many items are decided automatically afterwards."""
    pending = Item.objects.filter(study=study, agreement__isnull=False).exclude(
        decision__source__in=[Source.ADJUDICATED, Source.IMPORTED]
    )
    decided = [decide_item_if_complete(item=item) for item in pending]
    return sum(1 for d in decided if d is not None)
