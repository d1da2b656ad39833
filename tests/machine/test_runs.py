"""A machine rater's run against a local server speaking the chat-completions wire format: it
labels a round, stores every call's provenance, refuses codes outside the codebook, retries
429 and 5xx, stops on 401 and an unknown model with a clear message, resumes without asking
again for answered items, and works with a server that has no structured output."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotator.issues.models import IssueComment
from annotator.machine import prompt, services
from annotator.machine.models import MachineCall, MachineRun
from annotator.machine.services import (
    MachineError,
    declare_rater,
    estimate,
    run_machine_run,
    start_run,
)
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Assignment, Item
from annotator.studies.sampling import simple_sample
from tests.machine.fake_llm import MODEL, RETURNED, FakeLLM, completion, error, title_of
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db
GOOD = {"screening": "relevant", "symptom": "hang", "fix": ["version"]}
STORED = {"screening": ["relevant"], "symptom": ["hang"], "fix": ["version"]}  # codes as lists


@pytest.fixture(autouse=True)
def quick_retries(settings):  # type: ignore[no-untyped-def]
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_TIMEOUT_SECONDS = 5
    settings.LLM_API_KEY = "test-key"


def answer(labels: dict[str, Any]) -> str:
    return json.dumps(labels)


def always(labels: dict[str, Any]):  # type: ignore[no-untyped-def]
    return lambda request, n: (200, {}, completion(answer(labels)))


def rater_for(world: World, fake: FakeLLM, **options: Any):  # type: ignore[no-untyped-def]
    return declare_rater(
        study=world.study,
        name="llm",
        model=MODEL,
        base_url=fake.base_url,
        parameters={"temperature": 0, "seed": 7},
        **options,
    )


def run_round(world: World, rater, **options: Any) -> MachineRun:  # type: ignore[no-untyped-def]
    run = start_run(rater=rater, round=world.round, enqueue=False, **options)
    return run_machine_run(run_id=run.pk)


def test_a_run_labels_the_round_and_keeps_every_calls_provenance():
    world = make_world(items=3)
    with FakeLLM(always(GOOD)) as fake:
        run = run_round(world, rater_for(world, fake))
    assert run.status == "succeeded" and run.progress == 100
    assert run.counts == {"items": 3, "labeled": 3, "invalid": 0, "failed": 0, "skipped": 0}
    calls = list(MachineCall.objects.order_by("item__position"))
    assert [c.labels for c in calls] == [STORED] * 3
    first, sent = calls[0], fake.requests[0]
    assert first.model_returned == RETURNED and first.structured
    assert first.messages == sent["messages"] and first.prompt_sha256 == prompt.prompt_hash(
        sent["messages"]
    )
    assert (
        sent["temperature"] == 0
        and sent["seed"] == 7
        and first.parameters
        == {
            "temperature": 0,
            "seed": 7,
        }
    )
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["symptom"]["enum"][-1] is None
    assert "hang" in schema["properties"]["symptom"]["enum"]
    assert first.response["usage"]["prompt_tokens"] == 900 and first.prompt_tokens == 900
    assert first.completion_tokens == 40 and first.latency_ms is not None
    assert first.prompt_cut["rule"] == prompt.CUT_RULE
    assert {k.lower(): v for k, v in fake.headers[0].items()}["authorization"] == "Bearer test-key"
    # the codebook is in the prompt: codes, definitions; and the issue's title
    system = sent["messages"][0]["content"]
    assert "`hang`" in system and "## Facet `symptom`" in system
    titles = {title_of(r) for r in fake.requests}
    assert titles == set(Item.objects.values_list("issue__title", flat=True))
    # machine labels are never assignments: no human k was used
    assert not Assignment.objects.exists()
    assert set(Item.objects.values_list("active_count", flat=True)) == {0}


def test_an_answer_outside_the_codebook_is_stored_invalid_never_mapped():
    world = make_world(items=3)
    answers = iter(
        [
            answer({**GOOD, "symptom": "hangs"}),  # no such code
            "I think it is a hang.",  # not JSON
            answer({**GOOD, "symptom": ["hang", "oom"]}),  # two in a single-choice facet
        ]
    )
    with FakeLLM(lambda request, n: (200, {}, completion(next(answers)))) as fake:
        run = run_round(world, rater_for(world, fake))
    assert run.counts["invalid"] == 3 and run.counts["labeled"] == 0
    problems = list(
        MachineCall.objects.order_by("item__position").values_list("problem", flat=True)
    )
    assert "['hangs'] not codes of this facet" in problems[0] and "'symptom'" in problems[0]
    assert problems[1].startswith("not JSON")
    assert "one code only" in problems[2]
    assert all(c.labels == {} for c in MachineCall.objects.all())


def test_429_with_retry_after_and_a_500_are_retried():
    world = make_world(items=1)
    script = {
        1: (429, {"retry-after": "0"}, {"error": {"message": "slow down", "type": "rate_limit"}}),
        2: error(500, "overloaded", "server_error"),
    }

    def respond(request, n):  # type: ignore[no-untyped-def]
        return script.get(n) or (200, {}, completion(answer(GOOD)))

    with FakeLLM(respond) as fake:
        run = run_round(world, rater_for(world, fake))
    assert len(fake.requests) == 3
    assert run.counts["labeled"] == 1 and MachineCall.objects.get().outcome == "labeled"


def test_a_call_failing_after_its_retries_is_kept_as_failed_and_asked_again_next_run():
    world = make_world(items=2)
    with FakeLLM(lambda request, n: error(503, "down", "server_error")) as fake:
        rater = rater_for(world, fake)
        run = run_round(world, rater)
    assert run.status == "succeeded" and run.counts["failed"] == 2
    assert len(fake.requests) == 2 * 3  # each call tried 1 + LLM_MAX_RETRIES times
    assert "after retries" in MachineCall.objects.first().problem
    with FakeLLM(always(GOOD)) as fake:
        rater.base_url = fake.base_url
        rater.save()
        again = run_round(world, rater)
    assert again.counts["labeled"] == 2 and len(fake.requests) == 2


def test_401_stops_the_run_with_a_clear_message_and_answers_so_far_are_kept():
    world = make_world(items=4)

    def respond(request, n):  # type: ignore[no-untyped-def]
        if n <= 2:
            return 200, {}, completion(answer(GOOD))
        return error(401, "Incorrect API key provided", "invalid_api_key")

    with FakeLLM(respond) as fake:
        rater = rater_for(world, fake)
        run = run_round(world, rater)
    assert run.status == "failed" and "LLM_API_KEY" in run.error
    assert run.counts["labeled"] == 2
    # started again against a server that answers: only the two unanswered items are asked
    with FakeLLM(always(GOOD)) as fake:
        rater.base_url = fake.base_url
        rater.save()
        again = run_round(world, rater)
    assert len(fake.requests) == 2
    assert again.counts == {"items": 4, "labeled": 2, "invalid": 0, "failed": 0, "skipped": 2}
    assert MachineCall.objects.filter(outcome="labeled").count() == 4


def test_an_unknown_model_stops_the_run_naming_it():
    world = make_world(items=1)
    with FakeLLM(always(GOOD)) as fake:
        rater = declare_rater(
            study=world.study, name="x", model="no-such-model", base_url=fake.base_url
        )
        run = run_round(world, rater)
    assert run.status == "failed" and "'no-such-model'" in run.error and "404" in run.error
    assert not MachineCall.objects.exists()


def test_a_server_without_structured_output_is_asked_plainly_and_its_answers_parsed():
    world = make_world(items=2)
    fenced = iter(["```json\n" + answer(GOOD) + "\n```", "labels: hang"])

    def respond(request, n):  # type: ignore[no-untyped-def]
        if "response_format" in request:
            return error(400, "response_format is not supported by this server")
        return 200, {}, completion(next(fenced))

    with FakeLLM(respond) as fake:
        run = run_round(world, rater_for(world, fake))
    assert run.counts["labeled"] == 1 and run.counts["invalid"] == 1
    assert len(fake.requests) == 3  # one refused with the schema, then two without
    assert not any(c.structured for c in MachineCall.objects.all())


def test_samples_per_item_and_a_seeded_sample_of_items():
    world = make_world(items=4)
    with FakeLLM(always(GOOD)) as fake:
        rater = rater_for(world, fake, samples=2)
        run = run_round(world, rater, sample_size=2, seed=3)
    assert run.counts["labeled"] == 4 and len(fake.requests) == 4
    assert MachineCall.objects.values("item").distinct().count() == 2
    assert sorted(MachineCall.objects.values_list("sample", flat=True)) == [0, 0, 1, 1]


def test_the_estimate_counts_calls_and_tokens_before_a_run():
    world = make_world(items=3)
    with FakeLLM(always(GOOD)) as fake:
        rater = rater_for(world, fake, samples=2)
        figures = estimate(rater, world.round)
        assert not fake.requests  # nothing is sent
    assert figures["items"] == 3 and figures["calls"] == 6 and figures["prompt_tokens"] > 0


def test_the_estimate_builds_every_prompt_up_to_its_sample_then_scales_a_sample(
    monkeypatch, django_assert_max_num_queries
):
    world = make_world(items=5)
    IssueComment.objects.create(issue=world.issues[0], key="c1", body="x" * 400)
    with FakeLLM(always(GOOD)) as fake:
        rater = rater_for(world, fake, samples=2)
        whole = estimate(rater, world.round)
        monkeypatch.setattr(services, "ESTIMATE_SAMPLE", 2)
        with django_assert_max_num_queries(8):
            part = estimate(rater, world.round)
    schema = codebook_schema(world.study.codebook_version)

    def tokens(item: Item) -> int:
        thread = prompt.Thread(
            item.issue.title,
            item.issue.body,
            list(item.issue.comments.order_by("created_at", "pk").values_list("body", flat=True)),
        )
        sent, _ = prompt.messages(schema, thread, rater.token_budget)
        return sum(prompt.estimate_tokens(m["content"]) for m in sent)

    by_id = {i.pk: tokens(i) for i in Item.objects.filter(round=world.round)}
    assert whole == {
        "items": 5,
        "calls": 10,
        "prompt_tokens": 2 * sum(by_id.values()),
        "sampled": 5,
    }
    drawn = simple_sample(sorted(by_id), 2, 0)
    scaled = int(sum(by_id[pk] for pk in drawn) * 5 / 2 + 0.5)
    assert part == {"items": 5, "calls": 10, "prompt_tokens": 2 * scaled, "sampled": 2}


def test_without_a_server_the_feature_refuses_to_start(settings):
    settings.LLM_BASE_URL = ""
    world = make_world(items=1)
    rater = declare_rater(study=world.study, name="llm", model=MODEL)
    with pytest.raises(MachineError, match="LLM_BASE_URL"):
        start_run(rater=rater, round=world.round, enqueue=False)


def test_the_command_prints_what_it_did():
    world = make_world(items=2)
    out = StringIO()
    with FakeLLM(always(GOOD)) as fake:
        call_command(
            "run_machine_rater",
            str(world.study.pk),
            "--rater",
            "llm",
            "--model",
            MODEL,
            "--base-url",
            fake.base_url,
            stdout=out,
        )
        assert out.getvalue().strip() == "labeled 2, invalid 0, failed 0"
        out = StringIO()
        call_command("run_machine_rater", str(world.study.pk), "--rater", "llm", stdout=out)
    assert out.getvalue().strip() == "labeled 0, invalid 0, failed 0 (answered before: 2)"
    with pytest.raises(CommandError, match="no machine rater 'other'"):
        call_command("run_machine_rater", str(world.study.pk), "--rater", "other")
