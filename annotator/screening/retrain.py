"""The retrain job: rank a prioritised round's unscreened items with the decisions so far.

Features (TF-IDF over title, body and comments) are fitted once per round and kept on disk
(MEDIA_ROOT/screening/, one `.npz` per round and set of items), so a retrain loads them and
trains the classifier only: fitting 10,000 issues' features takes seconds, the classifier a
fraction of one (benchmarks/screening_retrain.py). A round whose items change (a selection
added some) is fitted again. The ranks are written whole in one transaction
(sql.write_ranks), the audit's unscreened items first.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from annotator.issues.models import Issue, IssueComment
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.models import Item

from . import ranking, sql
from .decisions import ItemState, round_items
from .models import RetrainJob, ScreeningAudit, ScreeningModel, ScreeningPlan

Status = RetrainJob.Status


def run_retrain(*, job_id: int) -> RetrainJob:
    """The job: train, rank, write the ranks and the model record."""
    job = RetrainJob.objects.select_related("round").get(pk=job_id)
    if not claim_job(RetrainJob, job.pk):
        return job
    with job_heartbeat(RetrainJob, job.pk):
        try:
            model = retrain(job.round_id, progress=lambda p: _progress(job.pk, p))
        except Exception as error:  # recorded on the row the page polls, then raised
            finish_job(RetrainJob, job.pk, status=Status.FAILED, error=str(error)[:2000])
            raise
    finish_job(RetrainJob, job.pk, status=Status.SUCCEEDED, progress=100, screening_model=model)
    job.refresh_from_db()
    return job


def _progress(job_id: int, percent: int) -> None:
    report_progress(RetrainJob, job_id, progress=percent)


def retrain(round_id: int, *, progress: object = None) -> ScreeningModel:
    """Train the round's model on its decisions and rewrite its ranks; the model record."""
    report = progress if callable(progress) else (lambda p: None)
    plan = ScreeningPlan.objects.select_related("round").get(round_id=round_id)
    started, cpu = time.perf_counter(), time.process_time()
    states = round_items(plan)
    report(10)
    ranker, cached, feature_seconds = features(round_id, states, plan.model)
    report(50)
    labelled = [i for i, s in enumerate(states) if s.submitted]
    labels = [int(states[i].relevant) for i in labelled]
    tick = time.perf_counter()
    order = ranker.rank(labelled, labels, seed=plan.seed)
    train_seconds = time.perf_counter() - tick
    report(80)
    ranked = [states[i].item_id for i in order]
    with transaction.atomic():
        # The plan's lock, which draw_audit holds: an audit drawn while the model trained is
        # seen here and kept first, or is drawn after these ranks and puts itself first.
        ScreeningPlan.objects.select_for_update().get(round_id=round_id)
        audit = ScreeningAudit.objects.filter(round_id=round_id).first()
        if audit is not None:
            waiting = {s.item_id for s in states if not s.submitted}
            first = [pk for pk in audit.item_ids if pk in waiting]
            head = set(first)
            ranked = first + [pk for pk in ranked if pk not in head]
        sql.write_ranks(round_id, ranked)
        version = ScreeningModel.objects.filter(round_id=round_id).count() + 1
        return ScreeningModel.objects.create(
            round_id=round_id,
            version=version,
            model=plan.model,
            params=ranking.parameters(plan.model),
            seed=plan.seed,
            training_hash=training_hash(states),
            vocabulary_size=0 if ranker.features is None else int(ranker.features.shape[1]),
            n_items=len(states),
            n_relevant=sum(labels),
            n_irrelevant=len(labels) - sum(labels),
            n_ranked=len(ranked),
            seconds=round(time.perf_counter() - started, 3),
            metrics={
                "features": "cached" if cached else "fitted",
                "features_seconds": round(feature_seconds, 3),
                "train_rank_seconds": round(train_seconds, 3),
                "random_order": len(set(labels)) < 2,
                # this process's CPU time: what the retrain costs whatever else runs
                "cpu_seconds": round(time.process_time() - cpu, 3),
            },
        )


def training_hash(states: list[ItemState]) -> str:
    """sha256 of the training decisions: "item id:label" of each screened item, in id order."""
    text = ";".join(f"{s.item_id}:{int(s.relevant)}" for s in states if s.submitted)
    return hashlib.sha256(text.encode()).hexdigest()


def features(
    round_id: int, states: list[ItemState], model: str
) -> tuple[ranking.Ranker, bool, float]:
    """The round's Ranker: its features from the cache when the items are the same, else
    fitted now and cached. (ranker, from the cache?, seconds spent)."""
    tick = time.perf_counter()
    if model == "random":
        return ranking.Ranker(model=model, size=len(states), features=None), False, 0.0
    key = hashlib.sha256(",".join(str(s.issue_id) for s in states).encode()).hexdigest()[:16]
    path = Path(settings.MEDIA_ROOT) / "screening" / f"round-{round_id}-{key}.npz"
    if path.exists():
        from scipy import sparse

        matrix = sparse.load_npz(path).tocsr()
        ranker = ranking.Ranker(model=model, size=len(states), features=matrix)
        return ranker, True, time.perf_counter() - tick
    read = texts([s.issue_id for s in states], round_id=round_id)
    ranker = ranking.Ranker.fit(read, model)
    del read
    _store(path, round_id, ranker)
    return ranker, False, time.perf_counter() - tick


def _store(path: Path, round_id: int, ranker: ranking.Ranker) -> None:
    from scipy import sparse

    if ranker.features is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f"round-{round_id}-*.npz"):
        old.unlink(missing_ok=True)
    partial = path.with_suffix(".tmp.npz")
    sparse.save_npz(partial, ranker.features, compressed=False)
    partial.replace(path)


def texts(issue_ids: list[int], *, round_id: int | None = None) -> list[str]:
    """One text per issue, in the order given (ranking.issue_text: title, body, comments).
    With `round_id` (the ids are that round's issues) the rows are chosen by a subquery on
    the round's items rather than by a list of 100,000 ids sent and parsed twice."""
    wanted: Any = issue_ids
    if round_id is not None:
        wanted = Item.objects.filter(round_id=round_id).values("issue_id")
    comments: dict[int, list[str]] = {}
    rows = (
        IssueComment.objects.filter(issue_id__in=wanted)
        .order_by("issue_id", "created_at", "pk")
        .values_list("issue_id", "body")
        .iterator(chunk_size=5000)
    )
    for issue, body in rows:
        comments.setdefault(issue, []).append(body or "")
    found = dict(
        (pk, (title, body))
        for pk, title, body in Issue.objects.filter(pk__in=wanted)
        .values_list("pk", "title", "body")
        .iterator(chunk_size=5000)
    )
    return [
        ranking.issue_text(found[pk][0] or "", found[pk][1] or "", comments.get(pk, []))
        for pk in issue_ids
    ]


def features_bytes(ranker: ranking.Ranker) -> int:
    """Size in memory of the ranker's features (for the benchmark's report)."""
    if ranker.features is None:
        return 0
    m = ranker.features
    return int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + np.int64(0).nbytes)
