"""No annotator sees a machine label, on any route the URL resolver knows: every GET (page and
htmx partial) with every id of the scene (study, assignment, item, machine rater, run and call),
as an annotator of the study after the machine rater labelled the items, carries nothing of the
machine's answers (its rater name, the model id its server returned). Walked twice: once the
annotator has submitted their own item, and again once every human label is in — when the
owner's item page does show the machine's answer (the control: the marker is findable)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotator.machine.models import MachineCall
from annotator.machine.services import declare_rater, run_machine_run, start_run
from annotator.studies.services import next_assignment, submit_annotation
from tests.machine.fake_llm import MODEL, FakeLLM, completion
from tests.studies.factories import make_world
from tests.studies.test_blind_routes import all_urls, record

pytestmark = pytest.mark.django_db
MARKER = "MACHINE-ANSWER-MARKER"


def leaks(client, values) -> list[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    answers = record(client, all_urls(values))
    assert sum(200 <= status < 300 for status, _ in answers.values()) > 20  # not vacuous
    return [key for key, (_, text) in answers.items() if MARKER in text]


def test_no_route_shows_an_annotator_a_machine_label(client, settings):
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_BASE_URL = ""
    world = make_world(items=2)
    a, b = world.annotators
    mine = next_assignment(study=world.study, annotator=a)
    assert mine is not None
    labels = {"screening": "relevant", "symptom": "hang", "fix": ["version"]}
    content = json.dumps(labels)
    with FakeLLM(lambda r, n: (200, {}, completion(content, model=MARKER))) as fake:
        rater = declare_rater(study=world.study, name=MARKER, model=MODEL, base_url=fake.base_url)
        run = start_run(rater=rater, round=world.round, enqueue=False)
        run_machine_run(run_id=run.pk)
    assert MachineCall.objects.filter(outcome="labeled", model_returned=MARKER).count() == 2
    submit_annotation(assignment=mine, user=a, labels=world.labels(screening="relevant"))
    call = MachineCall.objects.get(item=mine.item)
    ids = [str(mine.pk), str(mine.item_id), str(rater.pk), str(run.pk), str(call.pk)]
    values = {
        "study_id": [str(world.study.pk)],
        "assignment_id": [str(mine.pk)],
        "item_id": [str(mine.item_id)],
        "*": ids,
    }
    client.force_login(a)
    assert leaks(client, values) == []

    for person in (a, b):  # every human label is in: owners and adjudicators may now see it
        while (left := next_assignment(study=world.study, annotator=person)) is not None:
            submit_annotation(
                assignment=left, user=person, labels=world.labels(screening="relevant")
            )
    client.force_login(world.owner)
    owner_page = client.get(reverse("studies:item", args=[mine.item_id])).content.decode()
    assert MARKER in owner_page  # the control: the walk would find it where it is shown
    for person in (a, b):
        client.force_login(person)
        assert leaks(client, values) == []
