# ruff: noqa: RUF001, RUF002 -- κ in the report's labels.
"""A run stores Brennan–Prediger, Conger's and Light's κ beside the headline set (never instead
of it), each equal to stats.py's on the run's own table, and the report shows them under the
headline rows; above the size limit they are left out and the run's conventions say why."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.agreement import stats, summary
from annotator.agreement.labels import load_label_table
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from tests.agreement.factories import labelled_world

pytestmark = pytest.mark.django_db


def computed(world) -> AgreementRun:
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    return run


def test_the_run_stores_them_equal_to_stats_and_the_report_shows_them(client):
    world = labelled_world(items=8, annotators=3)
    run = computed(world)
    assert run.status == "succeeded"
    table = load_label_table(
        study_id=world.study.pk, version=world.version, round_id=world.round.pk
    )
    for facet in table.facets:
        stored = run.facet_result(facet.key)["more_coefficients"]
        assert set(stored) == set(summary.MORE_COEFFICIENTS)
        for name in summary.MORE_COEFFICIENTS:
            expected = getattr(stats, name)(facet.table)
            assert stored[name]["value"] == pytest.approx(expected.value, abs=1e-14, nan_ok=True)
            assert stored[name]["n_pairable_units"] == expected.n_pairable_units
    assert run.result["conventions"]["more_coefficients"] == summary.MORE_RULE
    client.force_login(world.owner)
    html = client.get(reverse("agreement:study", args=[world.study.pk])).content.decode()
    assert html.count("data-more-coefficients") == len(table.facets)
    value = run.facet_result("symptom")["more_coefficients"]["brennan_prediger"]["value"]
    assert "Brennan–Prediger κ" in html and f"{value:.3f}" in html


def test_above_the_limit_the_run_leaves_them_out(monkeypatch):
    world = labelled_world(items=8, annotators=2)
    monkeypatch.setattr(summary, "MORE_LIMIT", 3)
    run = computed(world)
    assert all(f["more_coefficients"] == {} for f in run.result["facets"])
