# ruff: noqa: RUF001, RUF003 -- α in the report's text.
"""The machine rater's done-when journey, in Chromium with a real Celery worker: the owner points
a machine rater at a local OpenAI-compatible server (tests/machine/fake_llm.py) through the pages,
reads the estimate, starts a run on the round and watches its progress bar to the end; the two
annotators label; the worker computes the round's agreement when the last label is in; the owner
reads human-human, human-machine and the substitution test per facet with their intervals on the
agreement report. Neither annotator meets a machine label at any point: their pages are read in
their own browser contexts before the machine answers, after it, and after the round completes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import Browser, Page, expect

from annotator.agreement.models import AgreementRun
from annotator.machine.models import MachineCall, MachineRun
from annotator.studies.services import next_assignment, submit_annotation
from tests.browser import log_in
from tests.machine.fake_llm import MODEL, FakeLLM, completion, title_of
from tests.studies.factories import World, make_world

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]
MARKER = "MARKER-MODEL-2026-11"  # the model id the server returns: only machine answers carry it
SCREENSHOTS = Path("/tmp")


def planted(world: World) -> dict[str, dict[str, str]]:
    """Each issue's screening per rater: the annotators agree on all but the last issue; the
    machine agrees with the first annotator on all but the first."""
    titles = [i.title for i in world.issues]
    truth = ["relevant", "not-a-bug", "relevant", "not-a-bug"]
    flip = {"relevant": "not-a-bug", "not-a-bug": "relevant"}
    out = {}
    for n, title in enumerate(titles):
        out[title] = {
            "a": truth[n],
            "b": flip[truth[n]] if n == 3 else truth[n],
            "machine": flip[truth[n]] if n == 0 else truth[n],
        }
    return out


def wait_for(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError("timed out waiting")


def annotator_pages_show_no_machine_label(page: Page, base: str, world: World) -> int:
    """Every page an annotator can reach for their study and items: none carries the marker."""
    urls = [f"/studies/{world.study.pk}/annotate/", f"/studies/{world.study.pk}/mine/"]
    urls += [f"/studies/{world.study.pk}/"]
    urls += [f"/studies/items/{item.pk}/" for item in world.round.items.all()]
    urls += [f"/machine/studies/{world.study.pk}/", f"/api/studies/{world.study.pk}/"]
    seen = 0
    for url in urls:
        response = page.goto(base + url)
        assert response is not None
        body = page.content()
        assert MARKER not in body and "llm-rater" not in body, url
        seen += response.ok
    return seen


def test_owner_runs_a_machine_rater_and_reads_the_substitution_test(
    live_server, browser: Browser, celery_worker_process, settings
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    world = make_world(items=4, k=2, annotators=2)
    plan = planted(world)

    def answer(request: dict[str, Any], n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
        labels = {"screening": plan[title_of(request)]["machine"], "symptom": "hang"}
        return 200, {}, completion(json.dumps(labels), model=MARKER)

    contexts = {who: browser.new_context(viewport={"width": 1280, "height": 720}) for who in "oab"}
    owner, ann_a, ann_b = (contexts[w].new_page() for w in "oab")
    for page, user in (
        (owner, world.owner),
        (ann_a, world.annotators[0]),
        (ann_b, world.annotators[1]),
    ):
        user.set_password("pw-journey")
        user.save()
        log_in(page, live_server.url, user.username, "pw-journey")
    for page in (ann_a, ann_b):  # the annotate page hands each their first item
        assert annotator_pages_show_no_machine_label(page, live_server.url, world) >= 4

    with FakeLLM(answer) as fake:
        settings.LLM_BASE_URL = fake.base_url  # the web server's configuration: the link shows
        owner.goto(f"{live_server.url}/studies/{world.study.pk}/")
        owner.get_by_role("link", name="Machine raters").click()
        owner.get_by_label("Name", exact=True).fill("llm-rater")
        owner.get_by_label("Model", exact=True).fill(MODEL)
        owner.get_by_label("Base URL").fill(fake.base_url)  # the worker has no LLM_BASE_URL
        owner.get_by_label("Temperature").fill("0")
        owner.get_by_label("Seed").fill("7")
        owner.get_by_role("button", name="Declare").click()
        expect(owner.get_by_role("heading", name="Machine rater llm-rater")).to_be_visible()
        owner.get_by_role("button", name="Estimate").click()
        expect(owner.locator("[data-estimate]")).to_contain_text("4 calls for 4 items")
        owner.screenshot(path=str(SCREENSHOTS / "machine-rater.png"))
        owner.get_by_role("button", name="Start run").click()
        expect(owner.locator("#machine-progress")).to_be_visible()
        assert "/machine/runs/" in owner.url
        expect(owner.locator("#run-status")).to_have_attribute(
            "data-status", "succeeded", timeout=60_000
        )
        expect(owner.locator("[data-counts]")).to_contain_text("labeled 4, invalid 0, failed 0")
        expect(owner.locator("[data-call]")).to_have_count(4)
        owner.screenshot(path=str(SCREENSHOTS / "machine-run.png"), full_page=True)
    assert len(fake.requests) == 4 and fake.requests[0]["temperature"] == 0
    run = MachineRun.objects.get()
    assert run.status == "succeeded" and run.worker  # run by the worker process
    assert MachineCall.objects.filter(model_returned=MARKER).count() == 4

    for page in (ann_a, ann_b):  # the machine has answered; the annotators see none of it
        assert annotator_pages_show_no_machine_label(page, live_server.url, world) >= 4
    for who, person in (("a", world.annotators[0]), ("b", world.annotators[1])):
        while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
            code = plan[assignment.item.issue.title][who]
            submit_annotation(
                assignment=assignment, user=person, labels=world.labels(screening=code)
            )
    agreement = wait_for(
        lambda: AgreementRun.objects.filter(study=world.study, status="succeeded").first()
    )
    assert "partitions" in agreement.result
    for page in (ann_a, ann_b):  # every human label is in: still nothing for annotators
        assert annotator_pages_show_no_machine_label(page, live_server.url, world) >= 7

    owner.goto(f"{live_server.url}/agreement/runs/{agreement.pk}/")
    section = owner.locator("#machine-partitions")
    expect(section).to_be_visible()
    screening = next(f for f in agreement.result["partitions"]["facets"] if f["key"] == "screening")
    hh = screening["human_human"]
    hm = screening["raters"][0]["human_machine"]
    sub = screening["raters"][0]["substitution"]
    table = section.locator('[data-partitions-facet="screening"]')
    expect(table.locator('[data-partition="human-human"]')).to_contain_text(f"{hh['value']:.3f}")
    expect(table.locator('[data-partition="human-human"]')).to_contain_text(
        f"{hh['ci'][0]:.3f} – {hh['ci'][1]:.3f}"
    )
    expect(table.locator('[data-partition="human-machine"]')).to_contain_text(f"{hm['value']:.3f}")
    test = section.locator('[data-substitution="screening"]')
    expect(test.locator('[data-substitution-row="replaced"]')).to_have_count(2)
    expect(test.locator("[data-verdict]")).to_have_text(sub["verdict"])
    assert sub["verdict"].startswith("Screening: replacing one human annotator by llm-rater")
    test.scroll_into_view_if_needed()
    owner.screenshot(path=str(SCREENSHOTS / "machine-partitions.png"))
    box = test.locator("[data-verdict]").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280

    item = world.round.items.order_by("position").first()
    owner.goto(f"{live_server.url}/studies/items/{item.pk}/")  # the owner may now read them
    expect(owner.locator("[data-machine-answers]")).to_contain_text(MARKER)
    owner.locator("#machine-labels").scroll_into_view_if_needed()
    owner.screenshot(path=str(SCREENSHOTS / "machine-item.png"))
    owner.goto(f"{live_server.url}/adjudication/items/{item.pk}/")
    expect(owner.locator("[data-machine-answers]")).to_contain_text(MARKER)
    owner.get_by_role("button", name="Hide machine labels").click()
    expect(owner.locator("[data-machine-hidden]")).to_be_visible()
    expect(owner.locator("[data-machine-answers]")).to_have_count(0)
    for context in contexts.values():
        context.close()
    assert fake.base_url == django_settings.LLM_BASE_URL  # the web server was configured
