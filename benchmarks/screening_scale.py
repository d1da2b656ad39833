"""A screening round at study scale, filled in bulk, for the page benchmark's screening routes.

    DATABASE_URL=postgres://…/NAME .venv/bin/python benchmarks/screening_scale.py
        --world benchmarks/results/page_scale_world.NAME.json [--candidates 100000]
        [--screened 5000] [--seed 0]

`populate_screening(study_id, candidates, screened, seed, number=None)` fills the study's
screening round `number` (default its latest; the permission matrix's scene declares one,
tests/security/matrix_scene.py, as `ids["screening_round_number"]`) the way
screening it for weeks would: `candidates` items, one per issue, in a seeded order; the first
`screened` of them in the order they were handed out screened by k screeners (their submitted
annotations on the screening facet, submission times 25 s apart, relevant on a share that
falls as the model runs out of relevant issues, so the curve flattens), the decisions and item
agreements a submit computes (annotator.adjudication.services.rules) and an adjudicated
decision on half the disagreements, then a retrained ranking: the model records of its
retrains, the last retrain job, and the table of ranks over every unscreened item (a seeded
order written by annotator.screening.sql.write_ranks, as a retrain writes it; no model is
fitted — benchmarks/screening_retrain.py times that). Rows travel by COPY (page_scale.copy_rows).

The command line fills the round of a kept page benchmark database (DATABASE_URL; the study of
its world file), then `page_scale.py --keep --only screening` times the routes on it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

FIRST_SUBMIT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # as the benchmark's own annotations
DISAGREE = 0.06  # share of screened items on which the screeners disagree


def populate_screening(
    study_id: int, candidates: int, screened: int, seed: int, *, number: int | None = None
) -> dict[str, Any]:
    """Fill study `study_id`'s screening round `number` (default: its latest; empty, its plan
    declared) with `candidates` items, `screened` of them screened, and a retrained ranking;
    returns the round's number and id and what was written. Call it with Django set up, on
    PostgreSQL, inside a transaction or not: outside one it also vacuums the tables it wrote
    (index-only counts), inside one it analyzes them."""
    from django.db import connection, transaction

    from annotator.screening.models import ScreeningPlan
    from annotator.studies.models import Item, Round

    plans = ScreeningPlan.objects.select_related("round__study", "relevant_category").filter(
        round__study_id=study_id, round__kind=Round.Kind.SCREENING
    )
    if number is not None:
        plans = plans.filter(round__number=number)
    plan = plans.order_by("-round__number").first()
    if plan is None:
        raise ValueError(f"study {study_id} has no screening round {number or ''}".strip())
    if Item.objects.filter(round=plan.round).exists():
        raise ValueError(f"screening round {plan.round.number} has items already")
    if not 0 <= screened <= candidates:
        raise ValueError("screened: from 0 to the number of candidates")
    with transaction.atomic():
        # Consistent by construction, as page_scale's rows: no per-row foreign-key check.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
        summary = _fill(plan, candidates, screened, seed)
    verb = "ANALYZE" if connection.in_atomic_block else "VACUUM ANALYZE"
    with connection.cursor() as cursor:
        for table in _tables():
            cursor.execute(f"{verb} {connection.ops.quote_name(table)}")
    return {"round_number": plan.round.number, "round_id": plan.round_id, **summary}


def _tables() -> list[str]:
    from annotator.adjudication.models import Decision, DecisionLabel, ItemAgreement
    from annotator.screening.models import RetrainJob, ScreeningModel
    from annotator.studies.models import (
        Annotation,
        AnnotationLabel,
        Assignment,
        Item,
        ScreeningRank,
    )

    models = [Item, Assignment, Annotation, AnnotationLabel, ItemAgreement, Decision]
    models += [DecisionLabel, ScreeningRank, ScreeningModel, RetrainJob]
    return [m._meta.db_table for m in models]


def _fill(plan: Any, candidates: int, screened: int, seed: int) -> dict[str, Any]:
    from page_scale import copy_rows, next_ids

    from annotator.adjudication.models import Decision, DecisionLabel, ItemAgreement
    from annotator.adjudication.services import rules
    from annotator.issues.models import Issue
    from annotator.screening import sql
    from annotator.studies.codebook import codebook_schema
    from annotator.studies.models import (
        Annotation,
        AnnotationLabel,
        Assignment,
        Item,
        Membership,
    )
    from annotator.studies.services.studies import item_quota
    from taxonomy_app.models import Category

    round, study = plan.round, plan.round.study
    k = item_quota(study, round)
    screeners = list(
        Membership.objects.filter(study=study, role=Membership.Role.ANNOTATOR)
        .order_by("user_id")
        .values_list("user_id", flat=True)[:k]
    )
    if len(screeners) < k:
        raise ValueError(f"study {study.pk} has {len(screeners)} annotators; k is {k}")
    relevant = plan.relevant_category
    other = (
        Category.objects.filter(facet_id=relevant.facet_id)
        .exclude(pk=relevant.pk)
        .order_by("order", "pk")
        .first()
    )
    if other is None:
        raise ValueError("the relevant category's facet has no other category")
    issues = list(Issue.objects.order_by("pk").values_list("pk", flat=True)[:candidates])
    if len(issues) < candidates:
        raise ValueError(f"{len(issues)} issues in the database; asked for {candidates}")
    rng = random.Random(seed)
    positions = list(range(candidates))
    rng.shuffle(positions)  # the round's seeded order, as select_issues gives it
    item_ids = next_ids(Item, candidates)
    # The j-th item handed out is the one at position j; the first `screened` are screened.
    by_position = sorted(range(candidates), key=positions.__getitem__)
    done = by_position[:screened]
    copy_rows(Item, (
        {"id": item_ids[i], "study_id": study.pk, "round_id": round.pk, "issue_id": issues[i],
         "position": positions[i], "quota": k, "stage": 1,
         "active_count": k if positions[i] < screened else 0,
         "submitted_count": k if positions[i] < screened else 0}
        for i in range(candidates)
    ))  # fmt: skip
    # Relevant on ~45% of the first items handed out, falling to ~1% (the model's order).
    truth = [rng.random() < 0.01 + 0.44 * math.exp(-j / 1200) for j in range(screened)]
    chosen = [
        [(not truth[j]) if rng.random() < DISAGREE and s == k - 1 else truth[j] for s in range(k)]
        for j in range(screened)
    ]
    assignment_ids = next_ids(Assignment, k * screened)
    annotation_ids = next_ids(Annotation, k * screened)
    version = study.codebook_version_id

    def at(j: int, s: int) -> datetime:
        return FIRST_SUBMIT + timedelta(seconds=25 * j + 7 * s)

    copy_rows(Assignment, (
        {"id": assignment_ids[k * j + s], "item_id": item_ids[i], "annotator_id": screeners[s],
         "status": Assignment.Status.SUBMITTED, "assigned_at": at(j, s) - timedelta(seconds=20),
         "touched_at": at(j, s), "finished_at": at(j, s), "screening_rank": j + 1}
        for j, i in enumerate(done) for s in range(k)
    ))  # fmt: skip
    copy_rows(Annotation, (
        {"id": annotation_ids[k * j + s], "assignment_id": assignment_ids[k * j + s],
         "codebook_version_id": version, "status": Annotation.Status.SUBMITTED,
         "seconds_spent": 20, "submitted_at": at(j, s)}
        for j in range(screened) for s in range(k)
    ))  # fmt: skip
    copy_rows(AnnotationLabel, (
        {"annotation_id": annotation_ids[k * j + s], "facet_id": relevant.facet_id,
         "category_id": relevant.pk if chosen[j][s] else other.pk}
        for j in range(screened) for s in range(k)
    ))  # fmt: skip
    facets = [f.id for f in codebook_schema(study.codebook_version).facets]

    def labels(yes: bool) -> dict[int, frozenset[int]]:
        return {relevant.facet_id: frozenset([relevant.pk if yes else other.pk])}

    outcomes = [rules.decide([labels(c) for c in chosen[j]], facets, majority=True)
                for j in range(screened)]  # fmt: skip
    agreement_ids = next_ids(ItemAgreement, screened)
    copy_rows(ItemAgreement, (
        {"id": agreement_ids[j], "item_id": item_ids[i], "value": max(0.0, min(1.0, o.agreement))}
        for j, (i, o) in enumerate(zip(done, outcomes, strict=True))
    ))  # fmt: skip
    copy_rows(ItemAgreement.disagreeing_facets.through, (
        {"itemagreement_id": agreement_ids[j], "facet_id": f}
        for j, o in enumerate(outcomes) for f in o.disagreeing
    ))  # fmt: skip
    # Half the disagreements adjudicated (to the truth); the rest wait in the queue.
    deciders = [Membership.Role.ADJUDICATOR, Membership.Role.OWNER]
    adjudicator = (
        Membership.objects.filter(study=study, role__in=deciders)
        .order_by("role", "user_id")  # "adjudicator" sorts before "owner"
        .values_list("user_id", flat=True)
        .first()
    )
    decided = [
        (j, o.source or "adjudicated", o.labels or labels(truth[j]))
        for j, o in enumerate(outcomes)
        if o.source or j % 2 == 0
    ]
    decision_ids = next_ids(Decision, len(decided))
    copy_rows(Decision, (
        {"id": decision_ids[d], "item_id": item_ids[done[j]], "source": source,
         "reason": "" if source != "adjudicated" else Decision.Reason.AMBIGUOUS_REPORT,
         "decided_by_id": adjudicator if source == "adjudicated" else None}
        for d, (j, source, _) in enumerate(decided)
    ))  # fmt: skip
    copy_rows(DecisionLabel, (
        {"decision_id": decision_ids[d], "facet_id": f, "category_id": c}
        for d, (_, _, chosen_labels) in enumerate(decided)
        for f, cs in chosen_labels.items() for c in sorted(cs)
    ))  # fmt: skip
    unscreened = [item_ids[i] for i in by_position[screened:]]
    random.Random(seed + 1).shuffle(unscreened)  # the "model's" order of the rest
    ranked = sql.write_ranks(round.pk, unscreened)
    models = _retrains(plan, screened, k, truth, ranked, seed)
    return {
        "candidates": candidates,
        "screened": screened,
        "relevant_screened": sum(truth),
        "decisions": len(decided),
        "ranked": ranked,
        "models": models,
    }


def _retrains(plan: Any, screened: int, k: int, truth: list[bool], ranked: int, seed: int) -> int:
    """The model records of the round's retrains (one per 500 screened items, the first after
    the first relevant and irrelevant item) and the last retrain job, succeeded."""
    from annotator.screening.models import RetrainJob, ScreeningModel

    if screened == 0:
        return 0
    ends = list(range(500, screened + 1, 500)) or [screened]
    rows = []
    for version, end in enumerate(ends, start=1):
        found = sum(truth[:end])
        rows.append(
            ScreeningModel(
                round=plan.round,
                version=version,
                model=plan.model,
                params={"C": 1.0, "class_weight": "balanced"},
                seed=plan.seed + version,
                training_hash=f"{seed:016x}{version:048x}",
                vocabulary_size=50_000,
                n_items=end,
                n_relevant=found,
                n_irrelevant=end - found,
                n_ranked=ranked,
                seconds=2.5,
                metrics={"features": "cached", "features_seconds": 0.4, "train_rank_seconds": 2.1},
            )
        )
    made = ScreeningModel.objects.bulk_create(rows)
    when = FIRST_SUBMIT + timedelta(seconds=25 * screened)
    RetrainJob.objects.create(
        round=plan.round,
        reason=RetrainJob.Reason.DECISIONS,
        status=RetrainJob.Status.SUCCEEDED,
        progress=100,
        started_at=when,
        finished_at=when + timedelta(seconds=3),
        screening_model=made[-1],
    )
    type(plan).objects.filter(pk=plan.pk).update(decisions_at_last_retrain=k * screened)
    return len(made)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--screened", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world", required=True, help="the page benchmark's world file")
    args = parser.parse_args()
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    ids = json.loads(Path(args.world).read_text())["ids"]
    start = time.perf_counter()
    done = populate_screening(
        ids["study"],
        args.candidates,
        args.screened,
        args.seed,
        number=ids["screening_round_number"],
    )
    print(json.dumps({**done, "seconds": round(time.perf_counter() - start, 1)}))


if __name__ == "__main__":
    main()
