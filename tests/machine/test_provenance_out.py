"""Provenance out: the long table carries `annotator_origin` (human | machine) with the machine
rater's labels as their own rows once an item's human labels are all in, and the dataset card
has an "LLM use" section (model, version returned, parameters, dates, prompt template version,
invalid-answer rate, the agreement partitions and the substitution verdicts)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.services import export_dataset
from annotator.machine.services import declare_rater, run_machine_run, start_run
from annotator.studies.services import next_assignment, submit_annotation
from tests.agreement.factories import labelled_world
from tests.machine.fake_llm import MODEL, RETURNED, FakeLLM, completion
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db
ANSWER = {"screening": "relevant", "symptom": "hang", "fix": ["version", "config"]}


def answers(request, n):  # type: ignore[no-untyped-def]
    """Valid answers, but the second call answers a code outside the codebook."""
    labels = dict(ANSWER, symptom="no-such-code") if n == 2 else ANSWER
    return 200, {}, completion(json.dumps(labels), tokens=(1000, 50))


def machine_run(world):  # type: ignore[no-untyped-def]
    with FakeLLM(answers) as fake:
        rater = declare_rater(
            study=world.study,
            name="llm",
            model=MODEL,
            base_url=fake.base_url,
            parameters={"temperature": 0, "seed": 7},
        )
        run_machine_run(run_id=start_run(rater=rater, round=world.round, enqueue=False).pk)


def long_table(world) -> tuple[pd.DataFrame, str]:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    result = export_dataset(study=world.study, format="csv", out=out, table="long")
    return pd.read_csv(io.BytesIO(out.getvalue())), result.card


def test_the_long_table_marks_each_labels_origin_and_the_card_reports_llm_use(settings):
    settings.LLM_MAX_RETRIES = 0
    world = labelled_world(items=6, annotators=2, agreement=0.8, seed=1)
    machine_run(world)
    agreement = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    run_agreement_run(run_id=agreement.pk)
    agreement.refresh_from_db()

    frame, card = long_table(world)
    humans = frame[frame["row_kind"].isin(["annotation", "after_discussion"])]
    machine = frame[frame["row_kind"] == "machine"]
    assert set(humans["annotator_origin"]) == {"human"}
    assert set(machine["annotator_origin"]) == {"machine"} and set(machine["annotator"]) == {"llm"}
    assert frame[frame["row_kind"] == "decision"]["annotator_origin"].isna().all()
    # 5 valid answers (one invalid is no label), 4 labels each (fix holds two codes)
    assert len(machine) == 5 * 4 and machine["item_id"].nunique() == 5
    assert sorted(machine[machine["facet"] == "fix"]["category"].unique()) == ["config", "version"]

    section = card[card.index("## LLM use") :]
    assert f"Model: {MODEL}; version returned by the server: {RETURNED}" in section
    assert "Parameters: seed = 7, temperature = 0; answers per item: 1" in section
    assert "Prompt template: version v1" in section
    assert "Calls: 5 valid, 1 invalid, 0 failed; invalid-answer rate 0.167" in section
    assert "tokens: 6000 prompt, 300 completion" in section
    assert f"### Agreement partitions (run {agreement.pk} of round 1)" in section
    screening = next(f for f in agreement.result["partitions"]["facets"] if f["key"] == "screening")
    verdict = screening["raters"][0]["substitution"]["verdict"]
    assert f"- {verdict}" in section
    hh = screening["human_human"]
    assert hh["value"] is not None and hh["ci"] is not None  # planted agreement: defined
    cell = f"{hh['value']:.3f} [{hh['ci'][0]:.3f}, {hh['ci'][1]:.3f}]"
    assert f"| Screening | llm | {cell} |" in section


def test_machine_rows_wait_for_the_humans_and_a_study_without_a_model_has_no_section(settings):
    settings.LLM_MAX_RETRIES = 0
    world = make_world(items=2)
    a = world.annotators[0]
    mine = next_assignment(study=world.study, annotator=a)
    assert mine is not None
    submit_annotation(assignment=mine, user=a, labels=world.labels(screening="relevant"))
    frame, card = long_table(world)
    assert "## LLM use" not in card and set(frame["annotator_origin"].dropna()) == {"human"}
    machine_run(world)
    frame, card = long_table(world)
    assert (frame["row_kind"] == "machine").sum() == 0  # no item has all its human labels yet
    assert "## LLM use" in card and "No agreement run of the exported items" in card
