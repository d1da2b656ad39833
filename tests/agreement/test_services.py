# ruff: noqa: RUF003 -- α, κ in names and comments.
"""Agreement runs in process: the stored result against the statistics computed directly on the
same table and against the reference packages; failures leave no partial result."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from annotator.agreement import stats, summary
from annotator.agreement.models import AgreementRun, CalibrationPass
from annotator.agreement.services import (
    AgreementError,
    fail_lost_runs,
    load_label_table,
    mark_calibration_passed,
    run_agreement_run,
    set_threshold,
    start_agreement_run,
)
from tests.agreement.factories import direct_tables, labelled_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return labelled_world(items=14, annotators=3, skip_last=3)


def computed(world, **options) -> AgreementRun:
    run = start_agreement_run(study=world.study, enqueue=False, **options)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.SUCCEEDED, run.error
    return run


def test_bridge_builds_the_same_tables_as_the_orm_row_by_row(world):
    direct = direct_tables(world)
    loaded = load_label_table(study_id=world.study.pk, version=world.version)

    assert [f.key for f in loaded.facets] == list(direct)
    for facet in loaded.facets:
        rows, declared = direct[facet.key]
        expected = stats.encode_table(rows, categories=declared)
        assert facet.table.n_units == expected.n_units
        got = [
            [facet.table.values[c] if c >= 0 else None for c in row] for row in facet.table.codes
        ]
        want = [[expected.values[c] if c >= 0 else None for c in row] for row in expected.codes]
        assert got == want
        assert set(facet.table.labels) == set(declared)


@pytest.mark.parametrize("name", summary.COEFFICIENTS)
def test_stored_coefficients_equal_stats_on_the_same_table(world, name):
    run = computed(world)
    for key, (rows, declared) in direct_tables(world).items():
        options = {}
        parent = {c["code"]: c["parent"] for c in run.facet_result(key)["categories"]}
        if name == "gwet_ac1" and any(parent.values()) and key != "fix":
            # a hierarchy's AC1 counts its leaves as q, not its groups (test_stats_ac1_q.py)
            leaves = stats.hierarchy_leaves(declared, parent)
            options["q"] = stats.hierarchy_q(rows, leaves, categories=declared)
        want = getattr(stats, name)(rows, categories=declared, **options).to_dict()
        got = run.facet_result(key)["coefficients"][name]
        assert got["value"] == pytest.approx(want["value"], abs=1e-12, nan_ok=True)
        assert got["se"] == pytest.approx(want["se"], abs=1e-12)
        assert got["n_pairable_units"] == want["n_pairable_units"]
        assert got["n_units_left_out"] == want["n_units_left_out"]


def test_stored_alpha_matches_the_krippendorff_package(world):
    krippendorff = pytest.importorskip("krippendorff")
    run = computed(world)
    for key in ("screening", "symptom"):
        rows, declared = direct_tables(world)[key]
        index = {c: i for i, c in enumerate(declared)}
        data = np.array([[np.nan if c is None else index[c] for c in row] for row in rows]).T
        want = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        got = run.facet_result(key)["coefficients"]["krippendorff_alpha"]["value"]
        assert got == pytest.approx(want, abs=1e-9)


def test_stored_fleiss_and_cohen_match_statsmodels_and_sklearn(world):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    metrics = pytest.importorskip("sklearn.metrics")
    run = computed(world)
    rows, declared = direct_tables(world)["screening"]
    complete = [row for row in rows if None not in row]
    counts, _ = inter_rater.aggregate_raters(np.array(complete, dtype=object))
    complete_run = stats.fleiss_kappa(complete, categories=declared)
    assert complete_run.value == pytest.approx(inter_rater.fleiss_kappa(counts), abs=1e-9)
    pair = [(row[0], row[1]) for row in rows if row[0] is not None and row[1] is not None]
    want = metrics.cohen_kappa_score([a for a, _ in pair], [b for _, b in pair], labels=declared)
    pairwise = run.facet_result("screening")["pairwise_cohen"]
    assert pairwise["cells"][0][1] == pytest.approx(want, abs=1e-9)
    entry = pairwise["pairs"][0]
    assert (entry["i"], entry["j"], entry["n"]) == (0, 1, len(pair))
    assert entry["kappa"] == pytest.approx(want, abs=1e-9)
    assert entry["p_o"] == pytest.approx(sum(a == b for a, b in pair) / len(pair), abs=1e-12)
    assert entry["ci"][0] < entry["kappa"] <= entry["ci"][1]


def test_result_has_the_report_sections_and_hierarchy_levels(world):
    run = computed(world)
    symptom = run.facet_result("symptom")
    assert [level["depth"] for level in symptom["levels"]] == [0, 1]
    assert {c["code"] for c in symptom["categories"]} >= {"hang", "failure"}
    assert len(symptom["confusion"]["cells"]) == len(symptom["confusion"]["labels"])
    assert symptom["design"]["raters"] == 3
    fix = run.facet_result("fix")
    assert fix["multilabel"] and fix["headline"] == "krippendorff_alpha_masi"
    assert [c["category"] for c in fix["per_category"]] == ["version", "config"]
    rows, declared = direct_tables(world)["fix"]
    want = stats.per_category_alpha(rows, categories=declared)["config"].value
    assert fix["per_category"][1]["alpha"] == pytest.approx(want, abs=1e-12)


def test_inputs_make_the_run_reproducible(world):
    first, second = computed(world), computed(world)
    assert first.result == second.result
    inputs = first.inputs
    assert inputs["label_table_sha256"] == second.inputs["label_table_sha256"]
    assert inputs["counts"]["annotations"] == 14 * 3 - 3
    assert inputs["versions"]["numpy"] == np.__version__ and "annotator" in inputs["versions"]
    assert "pairable" in inputs["population"] and inputs["conventions"]


def test_fast_per_category_alpha_equals_the_jackknife_path(world, monkeypatch):
    table = load_label_table(study_id=world.study.pk, version=world.version)
    for facet in table.facets:
        slow = summary.per_category(facet.table)
        monkeypatch.setattr(summary, "PER_CATEGORY_JACKKNIFE_LIMIT", 0)
        fast = summary.per_category(facet.table)
        monkeypatch.undo()
        for a, b in zip(slow, fast, strict=True):
            assert a["category"] == b["category"]
            assert a["alpha"] == pytest.approx(b["alpha"], abs=1e-12)
            assert a["p_o"] == pytest.approx(b["p_o"], abs=1e-12)


def test_one_round_only(world):
    from annotator.studies.services import create_round

    create_round(study=world.study)
    run = computed(world, round=world.round)
    assert run.result["round"] == world.round.number


def test_failure_midway_leaves_the_run_failed_with_no_result(world, monkeypatch):
    calls = []

    def explode(table, **kwargs):
        calls.append(kwargs["key"])
        if len(calls) == 2:
            raise MemoryError("out of memory in facet two")
        return {"key": kwargs["key"]}

    monkeypatch.setattr("annotator.agreement.services.facet_summary", explode)
    run = start_agreement_run(study=world.study, enqueue=False)
    with pytest.raises(MemoryError):
        run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.FAILED
    assert "out of memory in facet two" in run.error
    assert run.result is None and run.finished_at is not None


def test_a_redelivered_run_of_a_dead_worker_is_failed_not_recomputed(world):
    run = start_agreement_run(study=world.study, enqueue=False)
    AgreementRun.objects.filter(pk=run.pk).update(status="running", progress=40)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AgreementRun.Status.FAILED and "worker" in run.error
    assert run.result is None


def test_sweep_fails_runs_left_running_past_the_time_limit(world, settings):
    from datetime import timedelta

    from django.utils import timezone

    run = start_agreement_run(study=world.study, enqueue=False)
    AgreementRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
    assert fail_lost_runs() == 0
    later = timezone.now() + timedelta(seconds=settings.AGREEMENT_TIME_LIMIT_SECONDS + 1)
    assert fail_lost_runs(now=later) == 1
    run.refresh_from_db()
    assert run.status == "failed" and "time limit" in run.error and run.result is None


def test_database_refuses_a_result_on_a_run_not_succeeded(world):
    run = start_agreement_run(study=world.study, enqueue=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgreementRun.objects.filter(pk=run.pk).update(result={"partial": True})


def test_calibration_is_judged_on_the_lower_bound_not_the_point_estimate():
    world = labelled_world(items=30, annotators=2, agreement=0.85)
    run = computed(world, round=world.round)
    judged = [
        f["coefficients"][f["headline"]]
        for f in run.result["facets"]
        if f["coefficients"][f["headline"]]["value"] is not None
    ]
    lowest = min(c["value"] for c in judged)
    low = min(c["ci"][0] for c in judged)
    assert 0 < low < lowest
    set_threshold(study=world.study, threshold=(low + lowest) / 2)
    with pytest.raises(AgreementError, match=r"lower bound .* < "):
        mark_calibration_passed(run=run)
    assert not CalibrationPass.objects.exists()
    set_threshold(study=world.study, threshold=low)
    passed = mark_calibration_passed(run=run, user=world.owner)
    assert passed.lowest_alpha == pytest.approx(lowest)
    assert passed.lowest_ci_low == pytest.approx(low)
    with pytest.raises(IntegrityError), transaction.atomic():
        CalibrationPass.objects.filter(pk=passed.pk).update(lowest_ci_low=low - 0.01)
    with pytest.raises(IntegrityError), transaction.atomic():
        CalibrationPass.objects.create(round=world.round, run=run, threshold=0.9, lowest_alpha=0.1)
