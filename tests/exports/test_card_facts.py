"""The dataset card's figures are the study's records: the agreement run's stored pairable n
per coefficient, its interval method and AC1's q, what the figures cover, the annotators, k,
the adjudication rule, decisions by source, the label rules and what a prior import left out."""

from __future__ import annotations

import io

import pytest

from annotator.agreement import stats
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.services import export_dataset
from annotator.studies.models import Round
from taxonomy_app.models import Facet, LabelRule
from tests.exports.factories import exported_world


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    world = exported_world()
    run = start_agreement_run(study=world.study, round=None, enqueue=False)
    run_agreement_run(run_id=run.pk)
    world.run = AgreementRun.objects.get(pk=run.pk)
    assert world.run.status == "succeeded", world.run.error
    return world


def card(world, **options) -> str:  # type: ignore[no-untyped-def]
    return export_dataset(study=world.study, format="csv", out=io.BytesIO(), **options).card


def row_of(text: str, facet: str, coefficient: str) -> list[str]:
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:2] == [facet, coefficient]:
            return cells
    raise AssertionError(f"no row {facet} / {coefficient} in the card")


def test_agreement_rows_give_each_coefficients_stored_pairable_n_and_acs_q(world) -> None:  # type: ignore[no-untyped-def]
    text = card(world)
    for facet in world.run.result["facets"]:
        for name in (facet["headline"], "fleiss_kappa", "gwet_ac1", "percent_agreement"):
            stored = facet["coefficients"][name]
            cells = row_of(text, facet["key"], name)
            assert cells[4] == str(stored["n_pairable_units"]), (facet["key"], name)
            assert cells[5] == str(facet["design"]["units"])
        ac1 = facet["coefficients"]["gwet_ac1"]
        note = row_of(text, facet["key"], "gwet_ac1")[6]
        assert note.startswith(f"q = {ac1['q']}: {ac1['extra']['q_rule']}"[:40])
    interval = world.run.result["conventions"]["interval"]
    assert f"- Interval: {interval}." in text
    assert f"- Figures: agreement run {world.run.pk} of all rounds" in text
    assert "- Computed on: the exported items (all rounds of the study: 5 items)" in text


def test_a_filtered_export_computes_agreement_on_the_exported_items(world) -> None:  # type: ignore[no-untyped-def]
    text = card(world, filters={"source": "adjudicated"})
    assert "- Computed on: the exported items only (2), not the whole study." in text
    assert f"with the codebook version and facets of agreement run {world.run.pk}" in text
    # The two adjudicated items' symptoms (factory LABELS): oom / crash, slow / slow.
    ratings = [["oom", "crash"], ["slow", "slow"]]
    alpha = stats.krippendorff_alpha(ratings)
    cells = row_of(text, "symptom", "krippendorff_alpha")
    assert cells[2] == f"{alpha.value:.3f}" and cells[4] == "2"
    p_o = row_of(text, "symptom", "percent_agreement")
    assert (p_o[2], p_o[4]) == ("0.500", "2")
    whole = row_of(card(world), "symptom", "krippendorff_alpha")
    stored = next(f for f in world.run.result["facets"] if f["key"] == "symptom")
    assert whole[4] == str(stored["coefficients"]["krippendorff_alpha"]["n_pairable_units"])
    assert whole[4] != "2"
    decided = card(world, scope="decided")
    assert "- Computed on: the exported items only (4), not the whole study." in decided


def test_a_run_without_recorded_conventions_says_not_recorded(world) -> None:  # type: ignore[no-untyped-def]
    result = dict(world.run.result)
    del result["conventions"]
    AgreementRun.objects.filter(pk=world.run.pk).update(result=result)
    assert "- Interval: not recorded" in card(world)


def test_design_annotators_k_rule_and_decisions_by_source(world) -> None:  # type: ignore[no-untyped-def]
    text = card(world)
    assert "- Annotators: 2 submitted labels on the exported items (2 annotator members" in text
    assert "- k: 2 annotators per item" in text
    assert "- Adjudication rule: an item is decided automatically when every annotator" in text
    assert "| unanimous | 2 |" in text and "| adjudicated | 2 |" in text
    assert "| annotator slip | 2 |" in text
    only = card(world, filters={"source": "unanimous"})
    assert "| unanimous | 2 |" in only and "| adjudicated |" not in only


def test_label_rules_and_prior_left_out_values_are_listed(world) -> None:  # type: ignore[no-untyped-def]
    assert "The codebook version states no label rules." in card(world)
    assert "No exported round was imported with values or rows left out." in card(world)
    fix = Facet.objects.get(version=world.version, key="fix")
    LabelRule.objects.create(version=world.version, kind="max_choices", facet=fix, max_choices=2)
    Round.objects.filter(pk=world.round.pk).update(
        prior_import={
            "left_out": {
                "fix": {
                    "values": [{"value": "n/a", "mapped_to": "ignore", "cells": 3}],
                    "ratings_removed": 2,
                }
            },
            "skipped": [{"sheet": "A", "row": 4, "key": None, "reason": "no key"}],
            "final_only": [],
        }
    )
    text = card(world)
    assert f"- {fix.name}: at most 2 choices" in text
    assert (
        "- round 1, fix: 'n/a' (ignore, 3 cells); 2 ratings left with no label (missing in "
        "agreement)" in text
    )
    assert "- round 1: 1 sheet rows skipped" in text
