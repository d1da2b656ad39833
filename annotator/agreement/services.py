# ruff: noqa: RUF001, RUF002, RUF003 -- α in messages and docstrings.
"""Agreement runs: start one, run it (the Celery job's body), start them when a round completes,
mark a round as passed calibration.

A run reads every label once (`labels.load_label_table`), computes each facet in memory and
writes the result in the same single UPDATE that marks it succeeded; a failure or a killed worker
leaves `result` empty (a CHECK constraint also refuses a result on a run not succeeded).
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, Max, OuterRef, Q
from django.utils import timezone

from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.models import Annotation, Item, Round, Study

from .labels import CONVENTIONS, LabelTable, load_label_table
from .models import (
    DEFAULT_THRESHOLD,
    AgreementRun,
    AgreementSettings,
    AnnotatorDiagnostics,
    CalibrationPass,
    DriftReport,
)
from .sql import completed_round
from .summary import PER_CATEGORY_JACKKNIFE_LIMIT, conventions, facet_summary
from .threshold import Verdict
from .threshold import calibration_verdict as verdict_of

__all__ = [
    "AgreementError",
    "calibration_verdict",
    "compute_result",
    "compute_run",
    "fail_lost_runs",
    "load_label_table",
    "mark_calibration_passed",
    "on_round_progress",
    "run_agreement_run",
    "start_agreement_run",
    "start_runs_for_completed_rounds",
    "study_threshold",
]

logger = logging.getLogger(__name__)
Status = AgreementRun.Status
# 2: results carry `conventions`, AC1's q by facet kind, pairwise κ with n, p_o and CI.
RESULT_SCHEMA = 2


class AgreementError(Exception):
    """A request the agreement services refuse, with a message for the person who made it."""


def start_agreement_run(
    *,
    study: Study,
    round: Round | None = None,
    facets: Sequence[str] = (),
    user: Any = None,
    trigger: str = AgreementRun.Trigger.PAGE,
    enqueue: bool = True,
) -> AgreementRun:
    """Create a queued run for the study (or one round) and queue its job after commit."""
    from annotator.dispatch import enqueue_job

    if round is not None and round.study_id != study.pk:
        raise AgreementError(f"round {round.number} is not a round of this study")
    creator = user if getattr(user, "is_authenticated", False) else None
    run = AgreementRun.objects.create(
        study=study,
        round=round,
        facets=list(facets),
        trigger=trigger,
        created_by=creator,
        codebook_version_id=study.codebook_version_id,
    )
    if enqueue:
        enqueue_job(run)
    return run


def run_agreement_run(*, run_id: int) -> None:
    """The job: compute run `run_id` and store its result, or record why it failed.

    A run found already "running" (a redelivered task) is not computed twice under one row:
    `claim_job` leaves it to a live worker, or fails it when its worker was lost. The result
    is stored only while this worker still holds the run.
    """
    run = AgreementRun.objects.select_related("codebook_version").get(pk=run_id)
    if not claim_job(AgreementRun, run.pk):
        return
    with job_heartbeat(AgreementRun, run.pk):
        try:
            result, inputs, table = compute_run(
                run, on_progress=lambda p: report_progress(AgreementRun, run.pk, progress=p)
            )
            diagnostics = _annotator_diagnostics(run, table)
            drift = _round_drift(run, table)
        except Exception as error:
            logger.exception("agreement run %s failed", run.pk)
            _fail(run.pk, f"{type(error).__name__}: {error}")
            raise
        with transaction.atomic():
            finished = finish_job(
                AgreementRun,
                run.pk,
                status=Status.SUCCEEDED,
                progress=100,
                result=result,
                inputs=inputs,
            )
            if finished and diagnostics is not None:
                AnnotatorDiagnostics.objects.create(run_id=run.pk, **diagnostics)
            if finished and drift is not None:
                DriftReport.objects.create(run_id=run.pk, **drift)


def _annotator_diagnostics(run: AgreementRun, table: LabelTable) -> dict[str, Any] | None:
    """A run of one round over every facet also computes the round's per-annotator
    diagnostics from the labels it read (the diagnostics page shows the latest); None for a
    run of all rounds or of chosen facets."""
    from .annotators_service import round_annotator_diagnostics

    if run.round is None or run.facets:
        return None
    started = time.perf_counter()
    report = round_annotator_diagnostics(
        study=run.study, round=run.round, version=run.codebook_version, labels=table
    )
    return {"report": report, "seconds": round(time.perf_counter() - started, 4)}


def _round_drift(run: AgreementRun, table: LabelTable) -> dict[str, Any] | None:
    """A run of one round over every facet also computes the round's drift at the default
    window from the labels it read (the drift page shows the latest); None otherwise."""
    from .drift import DEFAULT_WINDOW
    from .drift_service import round_drift_figures

    if run.round is None or run.facets:
        return None
    started = time.perf_counter()
    report = round_drift_figures(
        study=run.study, round=run.round, version=run.codebook_version, labels=table
    )
    seconds = round(time.perf_counter() - started, 4)
    return {"window": DEFAULT_WINDOW, "report": report, "seconds": seconds}


def compute_result(
    run: AgreementRun, *, on_progress: Callable[[int], None] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(result, inputs) of a run, computed in memory; nothing is written."""
    result, inputs, _ = compute_run(run, on_progress=on_progress)
    return result, inputs


def compute_run(
    run: AgreementRun, *, on_progress: Callable[[int], None] | None = None
) -> tuple[dict[str, Any], dict[str, Any], LabelTable]:
    """(result, inputs) of a run and the label table they were computed from."""
    started = time.perf_counter()
    table = load_label_table(
        study_id=run.study_id,
        version=run.codebook_version,
        round_id=run.round_id,
        facet_keys=run.facets,
    )
    loaded = time.perf_counter()
    if on_progress:
        on_progress(10)
    names = [r["username"] for r in table.raters]
    facets = []
    for i, facet in enumerate(table.facets):
        facets.append(
            facet_summary(
                facet.table,
                key=facet.key,
                name=facet.name,
                kind=facet.kind,
                categories=facet.categories,
                parent=facet.parent,
                rater_names=names,
            )
        )
        if on_progress:
            on_progress(10 + int(90 * (i + 1) / len(table.facets)) - 1)
    result = {
        "schema": RESULT_SCHEMA,
        "study": run.study_id,
        "round": run.round.number if run.round_id and run.round else None,
        "codebook_version": run.codebook_version_id,
        "raters": table.raters,
        "conventions": conventions(),
        "facets": facets,
        # facet key → values a prior-label import wrote as no label, and the ratings removed
        "left_out": table.left_out,
    }
    partitions = _machine_partitions(run, table)
    if partitions is not None:
        result["partitions"] = partitions
    return result, _inputs(run, table, loaded - started, time.perf_counter() - loaded), table


def _machine_partitions(run: AgreementRun, table: LabelTable) -> dict[str, Any] | None:
    """Human–human, human–machine, machine–machine, pooled and the substitution test, when a
    machine rater answered in the run's scope (annotator/machine/agreement.py)."""
    from annotator.machine.agreement import machine_partitions

    return machine_partitions(run, table)


def _inputs(
    run: AgreementRun, table: LabelTable, load_s: float, compute_s: float
) -> dict[str, Any]:
    from .stats import POPULATION_RULE

    return {
        "study": run.study_id,
        "round": run.round.number if run.round_id and run.round else None,
        "codebook_version": run.codebook_version_id,
        "facets": [f.key for f in table.facets],
        "labels": table.labels,
        "label_table_sha256": table.digest,
        "counts": table.counts,
        "raters": len(table.raters),
        "units_per_facet": {f.key: f.table.n_units for f in table.facets},
        "left_out": table.left_out,
        "population": POPULATION_RULE,
        "conventions": CONVENTIONS,
        "per_category_jackknife_limit": PER_CATEGORY_JACKKNIFE_LIMIT,
        "versions": _versions(),
        "seconds": {"load": round(load_s, 4), "compute": round(compute_s, 4)},
    }


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for package in ("annotator", "django"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = _project_version() if package == "annotator" else "unknown"
    return out


def _project_version() -> str:
    import tomllib
    from pathlib import Path

    pyproject = Path(settings.BASE_DIR) / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _fail(run_id: int, error: str) -> None:
    finish_job(AgreementRun, run_id, status=Status.FAILED, error=error, result=None)


def fail_lost_runs(*, now: Any = None) -> int:
    """Mark failed the runs a dead worker left queued or running past the job's time limit.
    A run that waits for the queue (Redis down, annotator/dispatch.py) is not lost: it is sent
    when the queue is back."""
    from annotator.dispatch import QUEUE_UNAVAILABLE

    limit = timedelta(seconds=settings.AGREEMENT_TIME_LIMIT_SECONDS)
    cutoff = (now or timezone.now()) - limit
    lost = AgreementRun.objects.filter(
        Q(status=Status.RUNNING, started_at__lt=cutoff)
        | (Q(status=Status.QUEUED, created_at__lt=cutoff) & ~Q(notes=QUEUE_UNAVAILABLE))
    )
    error = "the job did not finish within its time limit (worker killed or lost); start again"
    return lost.update(status=Status.FAILED, error=error, result=None, finished_at=timezone.now())


# --- automatic runs ---------------------------------------------------------------------------
def on_round_progress(*, item_id: int) -> None:
    """Call after an item gains a submitted annotation: once the transaction commits, if that
    completed its round (every item reached its quota), an agreement run of the round starts."""
    # robust: a failure here is logged, never turned into an error for the submit that committed.
    transaction.on_commit(lambda: _start_if_complete(item_id), robust=True)


def _start_if_complete(item_id: int) -> None:
    # One query in the common case (the round still incomplete): it follows every submit that
    # completes an item.
    round_id = completed_round(item_id)
    if round_id is not None:
        start_runs_for_completed_rounds(round_ids=[round_id])


def start_runs_for_completed_rounds(
    *, round_ids: Sequence[int] | None = None
) -> list[AgreementRun]:
    """Start a run for each complete round (every item at its quota) whose labels are newer than
    its last automatic run. Called on submit (on_round_progress) and by Celery beat."""
    items = Item.objects.filter(round=OuterRef("pk"))
    rounds = Round.objects.filter(Exists(items)).exclude(
        Exists(items.filter(submitted_count__lt=F("quota")))
    )
    if round_ids is not None:
        rounds = rounds.filter(pk__in=round_ids)
    started = []
    for round in rounds.select_related("study"):
        with transaction.atomic():
            Round.objects.select_for_update().filter(pk=round.pk).first()  # one starter at a time
            if _has_current_auto_run(round):
                continue
            started.append(
                start_agreement_run(
                    study=round.study, round=round, trigger=AgreementRun.Trigger.ROUND_COMPLETE
                )
            )
    return started


def _has_current_auto_run(round: Round) -> bool:
    last_submit = Annotation.objects.filter(
        assignment__item__round=round, status=Annotation.Status.SUBMITTED
    ).aggregate(last=Max("submitted_at"))["last"]
    runs = AgreementRun.objects.filter(round=round, trigger=AgreementRun.Trigger.ROUND_COMPLETE)
    if last_submit is not None:
        runs = runs.filter(created_at__gte=last_submit)
    return runs.exclude(status=Status.FAILED).exists()


# --- threshold and calibration ----------------------------------------------------------------
def study_threshold(study: Study) -> float:
    """The α a round must reach to pass calibration (AgreementSettings, default 0.8)."""
    found = AgreementSettings.objects.filter(study=study).values_list("threshold", flat=True)
    value = found.first()
    return DEFAULT_THRESHOLD if value is None else float(value)


def set_threshold(*, study: Study, threshold: float) -> AgreementSettings:
    if not 0 <= threshold <= 1:
        raise AgreementError("the threshold is an α between 0 and 1")
    row, _ = AgreementSettings.objects.update_or_create(
        study=study, defaults={"threshold": threshold}
    )
    return row


def calibration_verdict(run: AgreementRun, threshold: float | None = None) -> Verdict:
    """Every facet of the run judged on the lower bound of its headline's 95% interval
    (`threshold.calibration_verdict`), against the study's threshold unless one is given."""
    if threshold is None:
        threshold = study_threshold(run.study)
    return verdict_of((run.result or {}).get("facets", []), threshold)


@transaction.atomic
def mark_calibration_passed(*, run: AgreementRun, user: Any = None) -> CalibrationPass:
    """Record that the run's round passed calibration: for every facet with a defined headline
    (at least one), the lower bound of its 95% interval reached the study's threshold — not
    only the point estimate (threshold.py says why). Facets whose headline is undefined are not
    judged; they are named in the refusal only when no facet is defined."""
    if run.round is None or run.status != Status.SUCCEEDED:
        raise AgreementError("only a finished run of one round can pass calibration")
    threshold = study_threshold(run.study)
    verdict = calibration_verdict(run, threshold)
    if not verdict.passes:
        raise AgreementError(verdict.reason)
    assert verdict.lowest_value is not None and verdict.lowest_low is not None
    passed, _ = CalibrationPass.objects.update_or_create(
        round=run.round,
        defaults={
            "run": run,
            "threshold": threshold,
            "lowest_alpha": verdict.lowest_value,
            "lowest_ci_low": verdict.lowest_low,
            "passed_by": user,
        },
    )
    return passed
