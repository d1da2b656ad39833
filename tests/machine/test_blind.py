"""No annotator sees a machine label, on any route the URL resolver knows: every GET (page and
htmx partial) with every id of the scene, as an annotator of the study after the machine rater
labelled their item, carries nothing of the machine's answers (its model, its answer's marker)."""

from __future__ import annotations

import json

import pytest

from annotator.machine.models import MachineCall
from annotator.machine.services import declare_rater, run_machine_run, start_run
from annotator.studies.services import next_assignment, submit_annotation
from tests.machine.fake_llm import MODEL, FakeLLM, completion
from tests.studies.factories import make_world
from tests.studies.test_blind_routes import all_urls, record

pytestmark = pytest.mark.django_db
MARKER = "MACHINE-ANSWER-MARKER"


def test_no_route_shows_an_annotator_a_machine_label(client, settings):
    settings.LLM_MAX_RETRIES = 0
    world = make_world(items=2)
    a = world.annotators[0]
    mine = next_assignment(study=world.study, annotator=a)
    labels = {"screening": "relevant", "symptom": "hang", "fix": ["version"]}
    content = json.dumps(labels)
    with FakeLLM(lambda r, n: (200, {}, completion(content, model=MARKER))) as fake:
        rater = declare_rater(study=world.study, name=MARKER, model=MODEL, base_url=fake.base_url)
        run = start_run(rater=rater, round=world.round, enqueue=False)
        run_machine_run(run_id=run.pk)
    assert MachineCall.objects.filter(outcome="labeled", model_returned=MARKER).count() == 2
    submit_annotation(assignment=mine, user=a, labels=world.labels(screening="relevant"))
    ids = [str(mine.pk), str(mine.item_id), str(rater.pk), str(run.pk)]
    values = {
        "study_id": [str(world.study.pk)],
        "assignment_id": [str(mine.pk)],
        "item_id": [str(mine.item_id)],
        "*": ids,
    }
    client.force_login(a)
    answers = record(client, all_urls(values))
    assert sum(200 <= status < 300 for status, _ in answers.values()) > 20  # not vacuous
    assert [key for key, (_, text) in answers.items() if MARKER in text] == []
