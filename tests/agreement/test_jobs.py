"""Agreement runs through a real Celery worker process over Redis, against PostgreSQL."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import compute_result, start_agreement_run
from tests.agreement.factories import labelled_world

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for(run: AgreementRun, timeout: float = 60) -> tuple[AgreementRun, list[tuple[str, int]]]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        seen.append((run.status, run.progress))
        if run.is_finished:
            return run, seen
        time.sleep(0.02)
    raise AssertionError(f"run {run.pk} still {run.status} after {timeout} s")


def started(world, **options) -> AgreementRun:
    with transaction.atomic():
        return start_agreement_run(study=world.study, user=world.owner, **options)


def test_worker_computes_and_stores_the_result(celery_worker_process):
    world = labelled_world(items=10, annotators=3)
    run, seen = wait_for(started(world))
    assert run.status == AgreementRun.Status.SUCCEEDED, run.error
    assert run.progress == 100 and run.started_at and run.finished_at
    result, inputs = compute_result(run)
    assert run.result == result
    assert run.inputs["label_table_sha256"] == inputs["label_table_sha256"]
    assert all(status != "succeeded" or progress == 100 for status, progress in seen)


def test_worker_failure_is_recorded_with_no_result(celery_worker_process):
    world = labelled_world(items=4, annotators=2)
    run, _ = wait_for(started(world, facets=["colour"]))
    assert run.status == AgreementRun.Status.FAILED
    assert "unknown facet keys" in run.error and "colour" in run.error
    assert run.result is None and run.finished_at is not None
