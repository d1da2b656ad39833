# ruff: noqa: RUF002, RUF003 -- the statistics are written with their minus signs and dashes.
"""The statistical stopping rule for prioritised screening (pure: scipy, no Django).

Callaghan & Müller-Hansen (2020), "Statistical stopping criteria for automated screening in
systematic reviews", Systematic Reviews 9:273. After screening in the model's order, draw items
at random, without replacement, from the N items not yet screened (the audit sample) and screen
them too. With r_al relevant items found before the audit and k relevant among the n audited,
the null hypothesis is "recall < target". Under it the pool holds at least

    K_tar = floor((r_al + k) / target − r_al) + 1

relevant items (recall (r_al + k) / (r_al + K) below the target needs K above
(r_al + k)/target − r_al), and the chance of seeing k or fewer relevant in n draws is the
hypergeometric p = P(X ≤ k), X ~ Hypergeom(N, K_tar, n). p < alpha rejects the null: "stop:
recall ≥ target at p < alpha". K_tar above N − n + k cannot hold (fewer items than needed are
left), which also rejects.

Looks: read after every audited item, the chance of a wrong "stop" grows past alpha (9% instead
of 5% when recall before the audit was 94%, in tests/screening/test_stopping.py). So the test is
read at a declared number of looks (checkpoints), each at alpha / looks (Bonferroni): one look
at the audit size `audits_needed` plans, or a few checkpoints along the way.

Recall is estimated as (r_al + k) / (r_al + k + k/n·(N − n)) — the audit's share of relevant
items applied to the rest of the pool — with an exact 95% interval from the hypergeometric
(the K compatible with k at 2.5% in each tail; Clopper–Pearson's construction on the urn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import hypergeom


@dataclass(frozen=True)
class StoppingTest:
    pool: int  # N: items not screened when the audit began
    relevant_before: int  # r_al: relevant found before the audit
    audited: int  # n
    audit_relevant: int  # k
    target: float
    alpha: float
    looks: int  # declared checkpoints; each is read at alpha / looks
    k_target: int  # K_tar: the fewest relevant in the pool under "recall < target"
    p_value: float
    recall: float | None  # point estimate
    recall_ci: tuple[float, float] | None  # exact 95% interval

    @property
    def level(self) -> float:
        return self.alpha / self.looks

    @property
    def stop(self) -> bool:
        return self.p_value < self.level

    def verdict(self) -> str:
        if self.stop:
            return f"stop: recall ≥ {self.target:.0%} at p = {self.p_value:.3g} < {self.alpha:g}"
        more = audits_needed(
            self.pool,
            self.relevant_before,
            self.audited,
            self.audit_relevant,
            self.target,
            self.level,
        )
        if more is None:
            return (
                f"go on: recall ≥ {self.target:.0%} is not supported (p = {self.p_value:.3g}); "
                "even auditing the whole pool without another relevant item would not reach it"
            )
        return (
            f"go on: recall ≥ {self.target:.0%} is not supported (p = {self.p_value:.3g}); "
            f"{more} more audited item{'s' if more != 1 else ''} without a relevant one would "
            f"support it at p < {self.level:g}"
        )


def k_target(relevant_before: int, audit_relevant: int, target: float) -> int:
    """The fewest relevant items the pool must hold for recall to be below `target`."""
    if not 0 < target < 1:
        raise ValueError("the recall target lies strictly between 0 and 1")
    found = relevant_before + audit_relevant
    return math.floor(found / target - relevant_before) + 1


def p_value(
    pool: int, relevant_before: int, audited: int, audit_relevant: int, target: float
) -> float:
    """P(X ≤ k) under the null "recall < target" (module docstring)."""
    _check(pool, relevant_before, audited, audit_relevant)
    needed = k_target(relevant_before, audit_relevant, target)
    # The pool can hold at most pool − audited + k relevant items given what the audit saw.
    if needed > pool - audited + audit_relevant:
        return 0.0
    return float(hypergeom.cdf(audit_relevant, pool, needed, audited))


def stopping_test(
    pool: int,
    relevant_before: int,
    audited: int,
    audit_relevant: int,
    *,
    target: float = 0.95,
    alpha: float = 0.05,
    looks: int = 1,
) -> StoppingTest:
    """The test, the recall estimate and its interval for an audit so far, read as one of
    `looks` declared checkpoints."""
    if not 0 < alpha < 1:
        raise ValueError("alpha lies strictly between 0 and 1")
    if looks < 1:
        raise ValueError("declare at least one look")
    p = p_value(pool, relevant_before, audited, audit_relevant, target)
    return StoppingTest(
        pool=pool,
        relevant_before=relevant_before,
        audited=audited,
        audit_relevant=audit_relevant,
        target=target,
        alpha=alpha,
        looks=looks,
        k_target=k_target(relevant_before, audit_relevant, target),
        p_value=p,
        recall=_recall(pool, relevant_before, audited, audit_relevant),
        recall_ci=_recall_interval(pool, relevant_before, audited, audit_relevant),
    )


def audits_needed(
    pool: int,
    relevant_before: int,
    audited: int,
    audit_relevant: int,
    target: float = 0.95,
    alpha: float = 0.05,
) -> int | None:
    """How many more audited items, none of them relevant, would make p < alpha (pass the
    level of one look: alpha / looks); 0 when it
    already is; None when auditing the whole rest of the pool would not (cannot happen for a
    pool of at least one item: the last draw leaves nothing unseen)."""
    left = pool - audited
    if p_value(pool, relevant_before, audited, audit_relevant, target) < alpha:
        return 0
    low, high = 1, left
    if high < 1 or p_value(pool, relevant_before, pool, audit_relevant, target) >= alpha:
        return None
    while low < high:  # p falls as more items are audited with nothing found
        mid = (low + high) // 2
        if p_value(pool, relevant_before, audited + mid, audit_relevant, target) < alpha:
            high = mid
        else:
            low = mid + 1
    return low


def _recall(pool: int, relevant_before: int, audited: int, audit_relevant: int) -> float | None:
    found = relevant_before + audit_relevant
    if audited == 0:
        return None
    rest = audit_relevant / audited * (pool - audited)
    total = found + rest
    return found / total if total else None


def _recall_interval(
    pool: int, relevant_before: int, audited: int, audit_relevant: int
) -> tuple[float, float] | None:
    """Exact 95% bounds on recall: the K (relevant in the pool) compatible with k at 2.5% in
    each tail, K from k to k + (pool − audited)."""
    if audited == 0:
        return None
    found = relevant_before + audit_relevant
    big = np.arange(audit_relevant, audit_relevant + pool - audited + 1)
    below = hypergeom.cdf(audit_relevant, pool, big, audited) > 0.025
    above = hypergeom.sf(audit_relevant - 1, pool, big, audited) > 0.025
    compatible = big[below & above]
    if not compatible.size or found == 0:
        return None
    return (
        found / (relevant_before + int(compatible.max())),
        found / (relevant_before + int(compatible.min())),
    )


def _check(pool: int, relevant_before: int, audited: int, audit_relevant: int) -> None:
    if min(pool, relevant_before, audited, audit_relevant) < 0:
        raise ValueError("counts are never negative")
    if audited > pool:
        raise ValueError(f"{audited} items audited from a pool of {pool}")
    if audit_relevant > audited:
        raise ValueError(f"{audit_relevant} relevant among {audited} audited items")
