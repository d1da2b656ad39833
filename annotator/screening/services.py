"""Screening services: declaring a round's plan and stopping rule, waking the retrain job,
drawing the random audit, and taking the included issues into a later round."""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotator.studies.models import Item, Round, Selection, Study
from annotator.studies.services import StudyError, create_round, select_issues
from taxonomy_app.models import Category

from . import sql
from .decisions import (
    completion_order,
    decision_count,
    has_both_classes,
    incomplete_items,
    screened_items,
)
from .models import MODELS, RetrainJob, ScreeningAudit, ScreeningModel, ScreeningPlan


class ScreeningError(StudyError):
    """A screening request refused, in words naming the field."""


def relevant_categories(study: Study) -> list[Category]:
    """The categories of the study's codebook version that may mean "relevant"."""
    return list(
        Category.objects.filter(facet__version=study.codebook_version_id)
        .select_related("facet")
        .order_by("facet__order", "facet__pk", "order", "pk")
    )


def default_relevant(study: Study) -> Category | None:
    """The screening facet's "relevant" category, when the codebook has one."""
    return (
        Category.objects.filter(
            facet__version=study.codebook_version_id, facet__key="screening", code="relevant"
        )
        .select_related("facet")
        .first()
    )


@transaction.atomic
def start_screening_round(*, study: Study, user: Any = None, **plan: Any) -> ScreeningPlan:
    """A new screening round of `study` with its plan declared (see `declare_screening`)."""
    round = create_round(study=study, kind=Round.Kind.SCREENING)
    return declare_screening(round=round, user=user, **plan)


@transaction.atomic
def declare_screening(
    *,
    round: Round,
    relevant_category: Category | int | None = None,
    prioritised: bool = True,
    model: str = "tfidf-svm",
    seed: int | None = None,
    retrain_every: int = 10,
    target_recall: float = 0.95,
    alpha: float = 0.05,
    looks: int = 1,
    user: Any = None,
) -> ScreeningPlan:
    """Declare (or declare again) the screening round's plan: the category that means
    relevant, the order (prioritised by `model`, retrained after every `retrain_every`
    decisions, with `seed`) and the stopping rule (`target_recall`, `alpha`, `looks`),
    time-stamped now. Refused, with nothing changed, once the round has a decision: the rule
    must be fixed before anyone screens."""
    Round.objects.select_for_update().get(pk=round.pk)
    if round.kind != Round.Kind.SCREENING:
        raise ScreeningError(f"field 'round': round {round.number} is a {round.kind} round")
    if round.is_closed:
        raise ScreeningError(f"field 'round': round {round.number} is closed")
    existing = ScreeningPlan.objects.filter(round=round).first()
    if existing is not None and decision_count(round) > 0:
        raise ScreeningError(
            f"field 'target_recall': round {round.number} has screening decisions already; the "
            f"plan and stopping rule declared at {existing.declared_at:%Y-%m-%d %H:%M} UTC stay"
        )
    category = _relevant(round.study, relevant_category)
    _check_numbers(model, retrain_every, target_recall, alpha, looks)
    values = {
        "relevant_category": category,
        "prioritised": bool(prioritised),
        "model": model,
        "seed": seed if seed is not None else secrets.randbelow(2**31),
        "retrain_every": retrain_every,
        "target_recall": float(target_recall),
        "alpha": float(alpha),
        "looks": looks,
        "declared_at": timezone.now(),
        "declared_by": user if getattr(user, "is_authenticated", False) else None,
    }
    plan, _ = ScreeningPlan.objects.update_or_create(round=round, defaults=values)
    return plan


def _relevant(study: Study, category: Category | int | None) -> Category:
    if category is None:
        found = default_relevant(study)
        if found is None:
            raise ScreeningError(
                "field 'relevant_category': the codebook has no screening facet with a "
                "'relevant' category; choose the category that means relevant"
            )
        return found
    pk = category.pk if isinstance(category, Category) else category
    found = Category.objects.filter(pk=pk, facet__version=study.codebook_version_id).first()
    if found is None:
        raise ScreeningError(
            f"field 'relevant_category': category {pk} is not in the study's codebook version"
        )
    return found


def _check_numbers(model: str, every: int, target: float, alpha: float, looks: int) -> None:
    if model not in MODELS:
        raise ScreeningError(f"field 'model': choose one of {', '.join(MODELS)}")
    if not 1 <= int(every) <= 10_000:
        raise ScreeningError("field 'retrain_every': from 1 to 10,000 decisions")
    if not 0 < float(target) < 1:
        raise ScreeningError("field 'target_recall': a share strictly between 0 and 1, e.g. 0.95")
    if not 0 < float(alpha) < 1:
        raise ScreeningError("field 'alpha': a level strictly between 0 and 1, e.g. 0.05")
    if not 1 <= int(looks) <= 100:
        raise ScreeningError("field 'looks': from 1 to 100 declared looks")


# --- retraining --------------------------------------------------------------------------------
def after_screening_decision(*, round_id: int) -> RetrainJob | None:
    """Called after each committed screening decision (studies' hook): start a retrain when
    the round is prioritised and either `retrain_every` decisions came in since the last one,
    or it has no model yet and the decisions now hold a relevant and an irrelevant item."""
    plan = ScreeningPlan.objects.filter(round_id=round_id, prioritised=True).first()
    if plan is None or plan.round.is_closed:
        return None
    count = decision_count(round_id)
    due = count - plan.decisions_at_last_retrain >= plan.retrain_every
    if not due and not ScreeningModel.objects.filter(round_id=round_id).exists():
        due = has_both_classes(plan)
    if not due:
        return None
    return request_retrain(round=plan.round, reason=RetrainJob.Reason.DECISIONS, decisions=count)


@transaction.atomic
def request_retrain(
    *, round: Round, reason: str = RetrainJob.Reason.OWNER, user: Any = None, decisions: int = -1
) -> RetrainJob:
    """Queue a retrain of the round's model (the job already queued or running, if any: one
    at a time per round)."""
    from annotator.dispatch import enqueue_job

    plan = ScreeningPlan.objects.select_for_update().filter(round=round).first()
    if plan is None or not plan.prioritised:
        raise ScreeningError(f"field 'round': round {round.number} is not a prioritised round")
    waiting = RetrainJob.objects.filter(
        round=round, status__in=[RetrainJob.Status.QUEUED, RetrainJob.Status.RUNNING]
    ).first()
    if waiting is not None:
        return waiting
    plan.decisions_at_last_retrain = decision_count(round) if decisions < 0 else decisions
    plan.save(update_fields=["decisions_at_last_retrain"])
    job = RetrainJob.objects.create(
        round=round,
        reason=reason,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    enqueue_job(job)
    return job


# --- the audit ---------------------------------------------------------------------------------
@transaction.atomic
def draw_audit(
    *, round: Round, size: int, seed: int | None = None, user: Any = None
) -> ScreeningAudit:
    """Draw (or extend to `size` items) the round's random audit of the unscreened pool: the
    pool (items not yet screened by all k) in a seeded random order, of which the audit is the
    first `size`; audit items go to screeners first, in that order. The pool, the relevant items
    found before it and the seed are recorded at the first draw; an extension keeps them."""
    plan = ScreeningPlan.objects.select_for_update().filter(round=round).first()
    if plan is None:
        raise ScreeningError(f"field 'round': round {round.number} has no screening plan")
    if round.is_closed:
        raise ScreeningError(f"field 'round': round {round.number} is closed")
    audit = ScreeningAudit.objects.filter(round=round).first()
    if audit is None:
        audit = _new_audit(plan, size, seed, user)
    else:
        if size <= audit.size:
            raise ScreeningError(
                f"field 'size': the audit has {audit.size} items already; give a larger size"
            )
        if size > audit.pool_size:
            raise ScreeningError(f"field 'size': the pool held {audit.pool_size} items")
        audit.size = size
        audit.save(update_fields=["size"])
    _audit_first(audit)
    return audit


def _new_audit(plan: ScreeningPlan, size: int, seed: int | None, user: Any) -> ScreeningAudit:
    pool = incomplete_items(plan.round_id)
    if not pool:
        raise ScreeningError("field 'size': every item is screened; there is no pool to audit")
    if not 1 <= size <= len(pool):
        raise ScreeningError(f"field 'size': from 1 to {len(pool)} (the unscreened pool)")
    seed = seed if seed is not None else secrets.randbelow(2**31)
    order = [pool[i] for i in np.random.default_rng(seed).permutation(len(pool))]
    done = completion_order(screened_items(plan))
    return ScreeningAudit.objects.create(
        round=plan.round,
        seed=seed,
        pool_size=len(pool),
        relevant_before=sum(s.relevant for s in done),
        screened_before=len(done),
        order=order,
        size=size,
        drawn_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _audit_first(audit: ScreeningAudit) -> None:
    """Rewrite the round's ranks: the audit's items first, in draw order, then the current
    order of the rest (the last model's ranks, else the seeded random order)."""
    from annotator.studies.models import Item, ScreeningRank

    audit_ids = audit.item_ids
    taken = set(audit_ids)
    ranked = list(
        ScreeningRank.objects.filter(round=audit.round)
        .order_by("rank")
        .values_list("item_id", flat=True)
    )
    if not ranked:
        ranked = list(
            Item.objects.filter(round=audit.round)
            .order_by("position", "pk")
            .values_list("pk", flat=True)
        )
    sql.write_ranks(audit.round_id, audit_ids + [pk for pk in ranked if pk not in taken])


# --- after screening ---------------------------------------------------------------------------
@transaction.atomic
def select_included(
    *,
    screening_round: Round,
    round: Round,
    sample_size: int | None = None,
    seed: int | None = None,
    user: Any = None,
) -> Selection:
    """Add the issues the screening round included to `round` (a later round): all of them, or
    a seeded random sample of `sample_size` (stratified by repository) — never the first ones
    in the model's order, whose shares would not be those of the included issues. The
    selection records which (`Selection.source`)."""
    plan = ScreeningPlan.objects.filter(round=screening_round).first()
    if plan is None:
        raise ScreeningError(
            f"field 'screening_round': round {screening_round.number} is not a screening round"
        )
    if round.pk == screening_round.pk or round.kind == Round.Kind.SCREENING:
        raise ScreeningError("field 'round': choose a later labeling round, not a screening one")
    included = [s.issue_id for s in screened_items(plan) if s.relevant]
    if not included:
        raise ScreeningError(
            f"field 'screening_round': round {screening_round.number} has no included issue yet"
        )
    # Issues already taken into a labeling round of the study are not candidates again.
    labelled = set(
        Item.objects.filter(study=round.study)
        .exclude(round__kind=Round.Kind.SCREENING)
        .values_list("issue_id", flat=True)
    )
    take = "all" if sample_size is None else f"random sample of {sample_size}"
    return select_issues(
        study=round.study,
        round=round,
        filters={},
        repeat_issues=True,
        sample_size=sample_size,
        seed=seed,
        user=user,
        issue_ids=[pk for pk in included if pk not in labelled],
        source={
            "screening_round": screening_round.number,
            "included": len(included),
            "take": take,
        },
    )
