"""The machine-rater pages and API as the owner uses them: declare a rater, read the estimate,
start a run (one at a time per rater, a limit on the server), watch its progress and read its
calls; absent without a server; the owner's and adjudicators' view of an item's machine labels
only once its human labels are in, and the toggle that hides them; 404 for everyone else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotator.machine.models import MachineRater, MachineRun
from annotator.machine.services import (
    ConcurrencyLimit,
    declare_rater,
    run_machine_run,
    start_run,
)
from annotator.studies.models import Membership
from annotator.studies.services import add_member, next_assignment, submit_annotation
from tests.factories import UserFactory
from tests.machine.fake_llm import MODEL, RETURNED, FakeLLM, completion
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db
ANSWER = {"screening": "relevant", "symptom": "hang", "fix": ["version"]}


@pytest.fixture(autouse=True)
def quick(settings):  # type: ignore[no-untyped-def]
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_BASE_URL = ""


@pytest.fixture
def fake():  # type: ignore[no-untyped-def]
    with FakeLLM(lambda r, n: (200, {}, completion(json.dumps(ANSWER)))) as server:
        yield server


def labelled_by_machine(world: World, fake: FakeLLM) -> MachineRater:
    rater = declare_rater(study=world.study, name="llm", model=MODEL, base_url=fake.base_url)
    run_machine_run(run_id=start_run(rater=rater, round=world.round, enqueue=False).pk)
    return rater


def submit_all(world: World) -> None:
    for person in world.annotators:
        while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
            submit_annotation(
                assignment=assignment, user=person, labels=world.labels(screening="not-a-bug")
            )


def test_without_a_server_the_feature_is_absent_and_the_study_works(client):
    world = make_world(items=2)
    client.force_login(world.owner)
    page = client.get(reverse("studies:detail", args=[world.study.pk]))
    assert page.status_code == 200 and b"data-machine-link" not in page.content
    assert client.get(reverse("machine:raters", args=[world.study.pk])).status_code == 404
    api = client.post(
        f"/api/studies/{world.study.pk}/machine-raters/",
        {"name": "llm", "model": MODEL},
        content_type="application/json",
    )
    assert api.status_code == 400 and "base_url" in api.json()
    assert not MachineRater.objects.exists()


def test_the_owner_declares_estimates_and_starts_a_run_through_the_pages(client, settings, fake):
    settings.LLM_BASE_URL = fake.base_url
    world = make_world(items=3)
    client.force_login(world.owner)
    detail = client.get(reverse("studies:detail", args=[world.study.pk]))
    assert b"data-machine-link" in detail.content
    declared = client.post(
        reverse("machine:raters", args=[world.study.pk]),
        {"name": "llm", "model": MODEL, "temperature": "0", "samples": "1", "token_budget": "6000"},
    )
    rater = MachineRater.objects.get()
    assert declared.status_code == 302 and declared["Location"] == f"/machine/raters/{rater.pk}/"
    assert rater.parameters == {"temperature": 0.0} and rater.base_url == ""
    page = client.get(
        reverse("machine:rater", args=[rater.pk]), {"round": world.round.pk, "sample_size": "2"}
    )
    text = page.content.decode()
    assert "This run would make <strong>2</strong> calls for 2 items" in text
    started = client.post(reverse("machine:start", args=[rater.pk]), {"round": world.round.pk})
    run = MachineRun.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/machine/runs/{run.pk}/"
    queued = client.get(started["Location"]).content.decode()
    assert 'hx-get="/machine/runs/' in queued and 'id="machine-progress"' in queued
    again = client.post(reverse("machine:start", args=[rater.pk]), {"round": world.round.pk})
    assert again.status_code == 400 and f"has run {run.pk} queued" in again.content.decode()
    assert MachineRun.objects.count() == 1

    run_machine_run(run_id=run.pk)
    poll = client.get(reverse("machine:run", args=[run.pk]), headers={"HX-Request": "true"})
    assert poll.status_code == 286 and "labeled 3, invalid 0, failed 0" in poll.content.decode()
    done = client.get(reverse("machine:run", args=[run.pk])).content.decode()
    assert done.count("data-call=") == 3 and RETURNED in done and 'value="100"' in done


def test_a_bad_declaration_names_the_field_and_writes_nothing(client, settings, fake):
    settings.LLM_BASE_URL = fake.base_url
    world = make_world(items=1)
    client.force_login(world.owner)
    page = client.post(
        reverse("machine:raters", args=[world.study.pk]),
        {"name": "llm", "model": MODEL, "temperature": "9", "samples": "1", "token_budget": "6000"},
    )
    assert page.status_code == 400 and "Ensure this value is less than or equal to 2" in (
        page.content.decode()
    )
    api = client.post(
        f"/api/studies/{world.study.pk}/machine-raters/",
        {"name": "llm", "model": MODEL, "parameters": {"temprature": 1}},
        content_type="application/json",
    )
    assert (
        api.status_code == 400
        and "field 'parameters': unknown ['temprature']" in api.json()["detail"]
    )
    hot = client.post(
        f"/api/studies/{world.study.pk}/machine-raters/",
        {"name": "llm", "model": MODEL, "parameters": {"temperature": "hot", "seed": 1}},
        content_type="application/json",
    )
    assert hot.status_code == 400
    assert hot.json()["detail"] == (
        "field 'parameters.temperature': a number from 0 to 2, not 'hot'"
    )
    assert not MachineRater.objects.exists()


def test_the_api_declares_starts_and_limits_runs(client, settings, fake):
    settings.LLM_MAX_CONCURRENT_RUNS = 1
    world = make_world(items=2)
    client.force_login(world.owner)
    declared = client.post(
        f"/api/studies/{world.study.pk}/machine-raters/",
        {"name": "llm", "model": MODEL, "base_url": fake.base_url, "parameters": {"seed": 3}},
        content_type="application/json",
    )
    assert declared.status_code == 201, declared.content
    rater_id = declared.json()["id"]
    estimate = client.get(f"/api/machine-raters/{rater_id}/estimate/", {"round": 1}).json()
    assert estimate["calls"] == 2 and estimate["prompt_tokens"] > 0
    started = client.post(
        f"/api/machine-raters/{rater_id}/runs/", {"round": 1}, content_type="application/json"
    )
    assert started.status_code == 202 and started.json()["status"] == "queued"
    other = declare_rater(study=world.study, name="other", model=MODEL, base_url=fake.base_url)
    refused = client.post(
        f"/api/machine-raters/{other.pk}/runs/", {"round": 1}, content_type="application/json"
    )
    assert refused.status_code == 409
    assert "LLM_MAX_CONCURRENT_RUNS = 1" in refused.json()["detail"]
    with pytest.raises(ConcurrencyLimit):
        start_run(rater=other, round=world.round, enqueue=False)
    run_machine_run(run_id=started.json()["id"])
    read = client.get(f"/api/machine-runs/{started.json()['id']}/").json()
    assert read["status"] == "succeeded" and read["invalid_rate"] == 0.0
    assert read["counts"]["labeled"] == 2
    bad_round = client.post(
        f"/api/machine-raters/{other.pk}/runs/", {"round": 9}, content_type="application/json"
    )
    assert bad_round.status_code == 400 and "round" in bad_round.json()


def _as(client, world: World, role: str):  # type: ignore[no-untyped-def]
    person = UserFactory(username=f"a-{role}")
    add_member(study=world.study, user=person, role=role)
    client.force_login(person)
    return person


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
def test_only_the_owner_reaches_the_machine_pages_and_api(client, settings, fake, role):
    settings.LLM_BASE_URL = fake.base_url
    world = make_world(items=1)
    rater = labelled_by_machine(world, fake)
    run, call = rater.runs.get(), rater.calls.get()
    _as(client, world, role)
    urls = [
        reverse("machine:raters", args=[world.study.pk]),
        reverse("machine:rater", args=[rater.pk]),
        reverse("machine:run", args=[run.pk]),
        reverse("machine:call", args=[call.pk]),
        f"/api/studies/{world.study.pk}/machine-raters/",
        f"/api/machine-raters/{rater.pk}/runs/",
        f"/api/machine-raters/{rater.pk}/estimate/?round=1",
        f"/api/machine-runs/{run.pk}/",
    ]
    assert {url: client.get(url).status_code for url in urls} == {url: 404 for url in urls}
    start = client.post(reverse("machine:start", args=[rater.pk]), {"round": world.round.pk})
    assert start.status_code == 404 and MachineRun.objects.count() == 1


def test_owner_and_adjudicator_see_machine_labels_only_after_the_humans_and_can_hide_them(
    client, fake
):
    world = make_world(items=1)
    labelled_by_machine(world, fake)
    item = world.round.items.get()
    adjudicator = _as(client, world, Membership.Role.ADJUDICATOR)
    pages = [
        reverse("studies:item", args=[item.pk]),
        reverse("adjudication:item", args=[item.pk]),
    ]
    for viewer in (world.owner, adjudicator):
        client.force_login(viewer)
        for url in pages:
            text = client.get(url).content.decode()
            assert "data-machine-waiting" in text and "data-machine-code" not in text
    submit_all(world)
    for viewer in (world.owner, adjudicator):
        client.force_login(viewer)
        for url in pages:
            text = client.get(url).content.decode()
            assert text.count("data-machine-code") == 3  # screening, symptom, fix
            answers = text[text.index("data-machine-answers") :]
            assert answers.index("Screening:") < answers.index("Symptom:")  # codebook order
            assert "data-machine-waiting" not in text
    hide = client.post(
        reverse("machine:labels_shown", args=[world.study.pk]), {"hide": "1", "next": pages[1]}
    )
    assert hide.status_code == 302 and hide["Location"] == pages[1]
    hidden = client.get(pages[1]).content.decode()
    assert "data-machine-hidden" in hidden and "data-machine-code" not in hidden
    for bad in ("abc", "https://elsewhere.example/", "//elsewhere.example/"):
        away = client.post(
            reverse("machine:labels_shown", args=[world.study.pk]), {"hide": "1", "next": bad}
        )
        assert away.status_code == 302 and away["Location"] == f"/studies/{world.study.pk}/"
    client.post(reverse("machine:labels_shown", args=[world.study.pk]), {"hide": "0"})
    assert "data-machine-code" in client.get(pages[0]).content.decode()


def test_a_calls_page_shows_the_prompt_and_the_answer_only_after_the_humans(client, fake):
    world = make_world(items=1)
    rater = labelled_by_machine(world, fake)
    call = rater.calls.get()
    client.force_login(world.owner)
    before = client.get(reverse("machine:call", args=[call.pk])).content.decode()
    assert call.prompt_sha256 in before and "data-answer-hidden" in before
    assert '"hang"' not in before and "data-response" not in before
    submit_all(world)
    after = client.get(reverse("machine:call", args=[call.pk])).content.decode()
    assert "data-response" in after and RETURNED in after


def test_machine_labels_never_decide_an_item(fake):
    from annotator.adjudication.models import Decision

    world = make_world(items=1)
    labelled_by_machine(world, fake)
    assert not Decision.objects.exists()
    submit_all(world)  # two humans agree on not-a-bug; the machine said relevant
    decision: Any = Decision.objects.get(item__round=world.round)
    assert decision.source == "unanimous"
    codes = set(decision.labels.values_list("category__code", flat=True))
    assert "relevant" not in codes and "not-a-bug" in codes


def test_without_llm_base_url_a_rater_declared_on_the_page_needs_its_own(client, fake):
    world = make_world(items=1)
    declare_rater(study=world.study, name="first", model=MODEL, base_url=fake.base_url)
    client.force_login(world.owner)
    form = {"name": "second", "model": MODEL, "samples": "1", "token_budget": "6000"}
    page = client.post(reverse("machine:raters", args=[world.study.pk]), form)
    assert page.status_code == 400
    assert "LLM_BASE_URL is not set on this server: give a base URL" in page.content.decode()
    assert list(MachineRater.objects.values_list("name", flat=True)) == ["first"]
    form["base_url"] = fake.base_url
    assert client.post(reverse("machine:raters", args=[world.study.pk]), form).status_code == 302
