# ruff: noqa: RUF002, RUF003 -- α and × are the notation of the statistics.
"""An agreement run of a round a machine rater labelled stores `partitions`: the humans' α
(equal to the run's headline), the machine's answers beside them, the substitution test equal to
the `krippendorff` package on the same labels read row by row, and the invalid-answer rate."""

from __future__ import annotations

import html
import json
import zlib

import krippendorff
import numpy as np
import pytest

from annotator.agreement.services import compute_result, run_agreement_run, start_agreement_run
from annotator.machine.models import MachineCall
from annotator.machine.services import declare_rater, run_machine_run, start_run
from tests.agreement.factories import direct_tables, labelled_world
from tests.machine.fake_llm import MODEL, FakeLLM, completion, title_of

pytestmark = pytest.mark.django_db
SCREENING = ["relevant", "not-a-bug"]


def machine_answer(request, n):  # type: ignore[no-untyped-def]
    """A stable answer per issue title; the first call answers a code outside the codebook."""
    seed = zlib.crc32(title_of(request).encode())
    labels = {"screening": SCREENING[seed % 2], "symptom": "hang", "fix": ["version"]}
    if n == 1:
        labels["symptom"] = "no-such-symptom"
    return 200, {}, completion(json.dumps(labels))


def oracle(rows: list[list[str | None]]) -> float:
    data = np.array([[np.nan if c is None else SCREENING.index(c) for c in r] for r in rows]).T
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_an_agreement_run_stores_the_partitions_of_the_humans_and_the_machine(settings):
    settings.LLM_MAX_RETRIES = 0
    world = labelled_world(items=12, annotators=3, agreement=0.7, seed=4)
    with FakeLLM(machine_answer) as fake:
        rater = declare_rater(study=world.study, name="llm", model=MODEL, base_url=fake.base_url)
        run_machine_run(run_id=start_run(rater=rater, round=world.round, enqueue=False).pk)
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    result, _ = compute_result(run)

    partitions = result["partitions"]
    assert partitions["raters"] == [
        {"name": "llm", "model": MODEL, "labeled": 11, "invalid": 1, "invalid_rate": 1 / 12}
    ]
    facets = {f["key"]: f for f in partitions["facets"]}
    headline = next(f for f in result["facets"] if f["key"] == "screening")
    screening = facets["screening"]
    assert screening["human_human"]["value"] == pytest.approx(
        headline["coefficients"]["krippendorff_alpha"]["value"], abs=1e-12
    )

    rows, _ = direct_tables(world)["screening"]
    items = sorted(MachineCall.objects.values_list("item_id", flat=True))
    said = dict(
        MachineCall.objects.filter(outcome="labeled").values_list("item_id", "labels__screening")
    )
    machine = [said[i][0] if i in said else None for i in items]
    keep = [u for u, m in enumerate(machine) if m is not None]
    assert len(keep) == 11  # the invalid answer is no rating
    test = screening["raters"][0]["substitution"]
    assert test["units"] == 11
    assert test["humans"]["value"] == pytest.approx(oracle([rows[u] for u in keep]), abs=1e-9)
    for h, replaced in enumerate(test["replaced"]):
        swapped = [[machine[u] if c == h else x for c, x in enumerate(rows[u])] for u in keep]
        assert replaced["value"] == pytest.approx(oracle(swapped), abs=1e-9)
    assert test["verdict"].startswith("Screening: ") and "95% CI" in test["verdict"]
    assert [p["human"] for p in screening["raters"][0]["human_machine"]["pairs"]] == [
        "annotator-0",
        "annotator-1",
        "annotator-2",
    ]


def test_a_run_without_machine_answers_has_no_partitions():
    world = labelled_world(items=4, annotators=2)
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    result, _ = compute_result(run)
    assert "partitions" not in result


def test_items_still_being_labelled_keep_their_machine_answers_out(settings):
    settings.LLM_MAX_RETRIES = 0
    world = labelled_world(items=6, annotators=2, skip_last=2)  # 2 items wait for a label
    with FakeLLM(machine_answer) as fake:
        rater = declare_rater(study=world.study, name="llm", model=MODEL, base_url=fake.base_url)
        run_machine_run(run_id=start_run(rater=rater, round=world.round, enqueue=False).pk)
    assert MachineCall.objects.count() == 6
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    result, _ = compute_result(run)
    counted = result["partitions"]["raters"][0]
    assert counted["labeled"] + counted["invalid"] == 4  # the 4 complete items only


def test_the_agreement_report_shows_the_partitions_and_the_verdict(client, settings):
    settings.LLM_MAX_RETRIES = 0
    world = labelled_world(items=8, annotators=2, agreement=0.8, seed=2)
    with FakeLLM(machine_answer) as fake:
        rater = declare_rater(study=world.study, name="llm", model=MODEL, base_url=fake.base_url)
        run_machine_run(run_id=start_run(rater=rater, round=world.round, enqueue=False).pk)
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    client.force_login(world.owner)
    text = client.get(f"/agreement/runs/{run.pk}/").content.decode()
    screening = next(f for f in run.result["partitions"]["facets"] if f["key"] == "screening")
    assert "Humans and machine raters" in text and "Substitution test: llm" in text
    assert html.escape(screening["raters"][0]["substitution"]["verdict"]) in text
    assert 'data-partition="human-human"' in text and 'data-partition="pooled"' in text
    assert "invalid-answer rate 0.125" in text  # 1 of 8 answers
