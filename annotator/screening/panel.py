"""The stopping panel's figures for a screening round (read-only): screened, relevant found,
the relevant-found curve, decisions since the last relevant, the audit and the stopping test,
and the PRISMA-style counts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from annotator.similarity.services import duplicate_issue_ids

from .decisions import ItemState, candidate_count, completion_order, screened_items
from .models import RetrainJob, ScreeningAudit, ScreeningModel, ScreeningPlan
from .stopping import StoppingTest, audits_needed, stopping_test


@dataclass
class Prisma:
    """PRISMA-style flow of a screening round. `duplicates_removed`: the issues the study's
    owners marked a near-duplicate (annotator/similarity), which no selection takes."""

    candidates: int
    duplicates_removed: int
    screened: int
    audited: int
    included: int
    excluded: int
    not_screened: int

    def text(self) -> str:
        return (
            f"{self.candidates} candidate issues, {self.duplicates_removed} duplicates removed; "
            f"{self.screened} screened ({self.audited} of them in the random audit), "
            f"{self.included} included, {self.excluded} excluded, "
            f"{self.not_screened} not screened."
        )


@dataclass
class AuditState:
    seed: int
    pool_size: int
    relevant_before: int
    screened_before: int
    size: int
    audited: int
    audit_relevant: int
    drawn_at: str


@dataclass
class Panel:
    plan: ScreeningPlan
    prisma: Prisma
    curve: list[int]  # found(k) for k = 0 … screened, in the order items were completed
    relevant_found: int
    since_last_relevant: int
    audit: AuditState | None
    test: StoppingTest | None
    verdict: str
    suggested_audit: int | None  # audit size that would support stopping if none is relevant
    models: list[ScreeningModel] = field(default_factory=list)
    job: RetrainJob | None = None

    @property
    def stop(self) -> bool:
        return self.test is not None and self.test.stop

    def as_json(self) -> dict[str, Any]:
        test = self.test
        return {
            "round": self.plan.round.number,
            "prioritised": self.plan.prioritised,
            "relevant_category": {
                "facet": self.plan.relevant_category.facet.key,
                "code": self.plan.relevant_category.code,
            },
            "rule": {
                "target_recall": self.plan.target_recall,
                "alpha": self.plan.alpha,
                "looks": self.plan.looks,
                "declared_at": self.plan.declared_at.isoformat(),
                "text": self.plan.rule_text,
            },
            "prisma": asdict(self.prisma),
            "screened": self.prisma.screened,
            "relevant_found": self.relevant_found,
            "decisions_since_last_relevant": self.since_last_relevant,
            "relevant_curve": self.curve,
            "audit": None if self.audit is None else asdict(self.audit),
            "stopping": None
            if test is None
            else {
                "stop": test.stop,
                "p_value": test.p_value,
                "level": test.level,
                "recall": test.recall,
                "recall_ci95": list(test.recall_ci) if test.recall_ci else None,
                "k_target": test.k_target,
            },
            "verdict": self.verdict,
            "suggested_audit_size": self.suggested_audit,
            "models": [model_json(m) for m in self.models],
        }


def model_json(model: ScreeningModel) -> dict[str, Any]:
    return {
        "version": model.version,
        "model": model.model,
        "params": model.params,
        "seed": model.seed,
        "training_hash": model.training_hash,
        "vocabulary_size": model.vocabulary_size,
        "n_items": model.n_items,
        "n_relevant": model.n_relevant,
        "n_irrelevant": model.n_irrelevant,
        "n_ranked": model.n_ranked,
        "seconds": model.seconds,
        "metrics": model.metrics,
        "trained_at": model.trained_at.isoformat(),
    }


def screening_panel(plan: ScreeningPlan) -> Panel:
    """Every figure of the round's stopping panel, from its screened items, their decisions
    and the count of its candidates now (the unscreened candidates are counted, not read)."""
    screened = screened_items(plan)
    candidates = candidate_count(plan.round_id)
    done = completion_order(screened)
    curve = [0]
    for state in done:
        curve.append(curve[-1] + int(state.relevant))
    last = max((n for n, s in enumerate(done, start=1) if s.relevant), default=0)
    audit, test = _audit(plan, screened)
    included = sum(s.relevant for s in done)
    prisma = Prisma(
        candidates=candidates,
        duplicates_removed=len(duplicate_issue_ids(study=plan.round.study_id)),
        screened=len(done),
        audited=audit.audited if audit else 0,
        included=included,
        excluded=len(done) - included,
        not_screened=candidates - len(done),
    )
    return Panel(
        plan=plan,
        prisma=prisma,
        curve=curve,
        relevant_found=included,
        since_last_relevant=len(done) - last,
        audit=audit,
        test=test,
        verdict=_verdict(plan, test, audit),
        suggested_audit=_suggested(plan, candidates - len(screened), included, audit),
        models=list(ScreeningModel.objects.filter(round=plan.round).order_by("-version")[:10]),
        job=RetrainJob.objects.filter(round=plan.round).order_by("-created_at", "-pk").first(),
    )


def _audit(plan: ScreeningPlan, states: list[ItemState]) -> tuple[AuditState | None, Any]:
    """The audit's state and test from the round's screened items (`states`)."""
    audit = ScreeningAudit.objects.filter(round=plan.round).first()
    if audit is None:
        return None, None
    by_id = {s.item_id: s for s in states}
    screened = [by_id[pk] for pk in audit.item_ids if pk in by_id]
    state = AuditState(
        seed=audit.seed,
        pool_size=audit.pool_size,
        relevant_before=audit.relevant_before,
        screened_before=audit.screened_before,
        size=audit.size,
        audited=len(screened),
        audit_relevant=sum(s.relevant for s in screened),
        drawn_at=audit.drawn_at.isoformat(),
    )
    if not screened:
        return state, None
    test = stopping_test(
        audit.pool_size,
        audit.relevant_before,
        state.audited,
        state.audit_relevant,
        target=plan.target_recall,
        alpha=plan.alpha,
        looks=plan.looks,
    )
    return state, test


def _verdict(plan: ScreeningPlan, test: StoppingTest | None, audit: AuditState | None) -> str:
    if test is not None:
        return test.verdict()
    if audit is not None:
        return (
            f"audit drawn ({audit.size} items from a pool of {audit.pool_size}); the test is "
            "read once audited items are screened"
        )
    return (
        "go on: no audit yet. When the relevant-found curve flattens, draw a random audit of "
        "the unscreened pool; the panel then tests 'recall < "
        f"{plan.target_recall:.0%}' at p < {plan.alpha:g}"
    )


def _suggested(plan: ScreeningPlan, pool: int, found: int, audit: AuditState | None) -> int | None:
    """How many audited items, none relevant, would support stopping: from the current pool
    (`pool`: the items not screened; no audit yet) or on top of the audit so far."""
    level = plan.alpha / plan.looks
    if audit is None:
        if pool == 0:
            return None
        return audits_needed(pool, found, 0, 0, plan.target_recall, level)
    more = audits_needed(
        audit.pool_size,
        audit.relevant_before,
        audit.audited,
        audit.audit_relevant,
        plan.target_recall,
        level,
    )
    return None if more is None else audit.audited + more


# --- simulation on a finished round --------------------------------------------------------------
SIMULATE_MAX_ITEMS = 5000  # beyond this, the request would run long: the command does it


@dataclass
class RoundSimulation:
    n_issues: int
    n_relevant: int
    values: dict[str, float]  # wss@95, wss@100, erf@10, atd and random_ + each
    curve: list[float]
    random_curve: list[float]
    inputs_sha256: str

    @property
    def figures(self) -> dict[str, float]:
        """The values under names a template can read (no "@")."""
        return {key.replace("@", "_at_"): value for key, value in self.values.items()}


def simulate_round(plan: ScreeningPlan) -> RoundSimulation:
    """Replay the round's screened items with their decisions (simulate.py, the round's model,
    seed and retrain interval, one run): what prioritising would have saved on this round.
    Raises ValueError, in words, when the round is not finished or too large for a page."""
    from .retrain import texts
    from .simulate import simulate

    states = screened_items(plan)
    if not plan.round.is_closed and len(states) < candidate_count(plan.round_id):
        raise ValueError(
            f"round {plan.round.number} is not finished: simulate once every item is screened "
            "or the round is closed"
        )
    if len(states) > SIMULATE_MAX_ITEMS:
        raise ValueError(
            f"{len(states)} screened items: run `manage.py simulate_screening` on an export "
            f"(pages simulate up to {SIMULATE_MAX_ITEMS})"
        )
    labels = [int(s.relevant) for s in states]
    done = simulate(
        texts([s.issue_id for s in states]),
        labels,
        model=plan.model if plan.model != "random" else "tfidf-svm",
        seed=plan.seed,
        every=plan.retrain_every,
    )
    keys = ("wss@95", "wss@100", "erf@10", "atd")
    values = {key: done.mean(key) for key in keys}
    values |= {f"random_{key}": done.mean(f"random_{key}") for key in keys}
    return RoundSimulation(
        n_issues=done.n_issues,
        n_relevant=done.n_relevant,
        values=values,
        curve=done.curve().tolist(),
        random_curve=done.curve(baseline=True).tolist(),
        inputs_sha256=done.inputs_sha256,
    )
