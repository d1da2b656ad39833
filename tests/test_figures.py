"""A large study's whole-study figures (annotator/figures.py): computed by a real Celery worker,
the last ones served meanwhile and said so, the API's 202 before the first, and a failed job
leaving the last figures in place. FIGURES_INLINE_MAX_ITEMS is 0 here, so the small worlds of
the tests count as large; the existing page tests cover the inline path of small studies."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from annotator.celery import app
from annotator.figures import recompute, study_figures
from annotator.studies.services import next_assignment, submit_annotation
from tests.adjudication.helpers import Scene, label_next, make_scene

WAIT_S = 60


@pytest.fixture
def large(settings: Any) -> None:
    settings.FIGURES_INLINE_MAX_ITEMS = 0
    settings.FIGURES_MIN_INTERVAL_SECONDS = 0  # but in the test of that interval
    cache.clear()


@pytest.fixture
def worker(celery_worker_process: Any, transactional_db: Any, large: None) -> None:
    """The real worker, and rows committed so that it sees them."""


def status_of(html: str) -> str:
    found = re.search(r'data-figures-status="([a-z]+)"', html)
    assert found, html
    return found.group(1)


def polled(client: Client, url: str, until: Callable[[str], bool]) -> str:
    """The figures region as htmx polls it, asked again until `until` holds."""
    deadline = time.monotonic() + WAIT_S
    while True:
        html = client.get(url, headers={"HX-Request": "true"}).content.decode()
        if until(html) or time.monotonic() > deadline:
            return html
        time.sleep(0.2)


def scene_with_labels() -> Scene:
    scene = make_scene(items=4, k=2, annotators=2)
    label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    return scene


def submit_one(scene: Scene) -> None:
    person = scene.annotators[0]
    assignment = next_assignment(study=scene.study, annotator=person)
    assert assignment is not None
    labels = scene.world.labels(screening="relevant", symptom="crash")
    submit_annotation(assignment=assignment, user=person, labels=labels, seconds_spent=30)


def test_the_dashboard_shows_a_placeholder_then_the_figures_the_job_computed(worker):
    scene = scene_with_labels()
    client = Client()
    client.force_login(scene.owner)
    url = reverse("studies:dashboard", args=[scene.study.pk])
    page = client.get(url).content.decode()
    assert status_of(page) == "computing"
    assert "<progress" in page and 'hx-trigger="every 2s"' in page
    assert 'data-annotator="' not in page  # no table before the figures
    region = polled(client, url, lambda html: status_of(html) == "current")
    assert status_of(region) == "current" and 'hx-trigger="every 15s"' in region
    for person in scene.annotators:
        assert f'data-annotator="{person.username}"' in region


def test_after_a_write_the_previous_figures_are_served_marked_stale_then_fresh_ones(worker):
    scene = scene_with_labels()
    client = Client()
    client.force_login(scene.owner)
    url = reverse("studies:dashboard", args=[scene.study.pk])
    client.get(url)
    region = polled(client, url, lambda html: status_of(html) == "current")
    name = scene.annotators[0].username
    done = re.search(rf"<td>{name}</td><td>(\d+)</td>", region)
    assert done is not None
    # A job holds the lock, as while it runs: the page serves what it has, saying so.
    cache.set(f"figures-lock:studies:dashboard:{scene.study.pk}", "running", 60)
    submit_one(scene)
    page = client.get(url).content.decode()
    assert status_of(page) == "updating" and "— updating…" in page
    assert 'hx-trigger="every 2s"' in page
    assert f"<td>{name}</td><td>{done.group(1)}</td>" in page  # the previous count
    cache.delete(f"figures-lock:studies:dashboard:{scene.study.pk}")  # that job ended
    region = polled(client, url, lambda html: status_of(html) == "current")
    assert status_of(region) == "current"
    assert f"<td>{name}</td><td>{int(done.group(1)) + 1}</td>" in region


def test_the_api_answers_202_until_the_figures_then_carries_as_of_and_stale(worker):
    scene = scene_with_labels()
    client = Client()
    client.force_login(scene.owner)
    urls = [
        reverse("api-progress", args=[scene.study.pk]),
        reverse("api-disagreement-analytics", args=[scene.study.pk]),
        reverse("api-analysis", args=[scene.study.pk]),
    ]
    for url in urls:
        first = client.get(url)
        assert first.status_code == 202, url
        assert first["Retry-After"] == "2"
        assert first.json()["computing"] is True and "being computed" in first.json()["detail"]
    for url in urls:
        deadline = time.monotonic() + WAIT_S
        while (answer := client.get(url)).status_code == 202 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer.status_code == 200, url
        body = answer.json()
        for part in body if isinstance(body, list) else [body]:
            assert part["stale"] is False and re.match(r"\d{4}-\d\d-\d\dT", part["as_of"]), url
    progress = client.get(urls[0]).json()
    assert {a["username"] for r in progress for a in r["annotators"]} == {
        p.username for p in scene.annotators
    }
    cache.set(f"figures-lock:studies:dashboard:{scene.study.pk}", "running", 60)
    submit_one(scene)
    stale = client.get(urls[0]).json()
    assert all(r["stale"] is True and r["as_of"] == progress[0]["as_of"] for r in stale)


def test_the_analytics_and_analysis_pages_poll_until_their_figures(worker):
    scene = scene_with_labels()
    client = Client()
    client.force_login(scene.owner)
    for url, shown in [
        (reverse("adjudication:analytics", args=[scene.study.pk]), "Decisions by source"),
        (reverse("exports:analysis", args=[scene.study.pk]), "decided issue"),
    ]:
        page = client.get(url).content.decode()
        assert status_of(page) == "computing" and shown not in page, url
        region = polled(client, url, lambda html: status_of(html) == "current")
        assert status_of(region) == "current" and shown in region, url
        assert 'hx-trigger="every' not in region  # polling stops with the figures


def test_a_large_studys_repository_filter_is_listed_by_a_job_and_a_new_repository_joins_it(
    worker,
):
    """Listing a study's repositories joins every item to its issue: a large study's list is
    a job's, like its counts; a repository whose issues join the study joins it once the next
    job has run, and a repository chosen meanwhile stays chosen."""
    from annotator.issues.models import Issue, Repository
    from annotator.studies.models import Item

    scene = scene_with_labels()
    client = Client()
    client.force_login(scene.owner)
    url = reverse("exports:analysis", args=[scene.study.pk])
    names = sorted({i.issue.repository.full_name for i in Item.objects.filter(study=scene.study)})
    assert listed_in(client.get(url).content.decode()) == []  # not listed yet
    polled(client, url, lambda html: status_of(html) == "current")
    deadline = time.monotonic() + WAIT_S
    while not (listed := listed_in(client.get(url).content.decode())):
        assert time.monotonic() < deadline, "the repositories were never listed"
        time.sleep(0.2)
    assert listed == names
    other = Repository.objects.create(owner="pytorch", name="pytorch")
    issue = Issue.objects.create(repository=other, number=1, title="t", content_hash="0" * 64)
    Item.objects.create(study=scene.study, round=scene.study.rounds.first(), issue=issue, quota=2)
    chosen = client.get(url, {"repository": "pytorch/pytorch"}).content.decode()
    assert '<option value="pytorch/pytorch" selected>' in chosen
    deadline = time.monotonic() + WAIT_S
    while (listed := listed_in(client.get(url).content.decode())) == names:
        assert time.monotonic() < deadline, "the new repository was never listed"
        time.sleep(0.2)
    assert listed == sorted([*names, "pytorch/pytorch"])


def listed_in(page: str) -> list[str]:
    """The repositories the analysis page's repository filter offers."""
    found = re.search(r'<select name="repository">(.*?)</select>', page, re.S)
    assert found, page
    return re.findall(r'<option value="([^"]+)"', found.group(1))


@pytest.fixture
def eager(db: Any, large: None) -> Any:
    """Tasks run in the request's process, as without REDIS_URL."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


def test_a_failed_job_keeps_the_last_figures_and_the_page_says_so(eager, client, monkeypatch):
    scene = scene_with_labels()
    client.force_login(scene.owner)
    url = reverse("studies:dashboard", args=[scene.study.pk])
    page = client.get(url).content.decode()  # computed by the job, in process
    assert status_of(page) == "current"
    name = scene.annotators[0].username
    before = re.search(rf"<td>{name}</td><td>(\d+)</td>", page)
    assert before is not None

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr("annotator.studies.services.progress._annotator_tables", broken)
    submit_one(scene)
    page = client.get(url).content.decode()
    assert status_of(page) == "failed"
    assert "RuntimeError: the database went away" in page
    assert f"<td>{name}</td><td>{before.group(1)}</td>" in page  # the last good figures
    assert 'hx-trigger="every 15s"' in page  # no fast polling of a job that ended
    answer = client.get(reverse("api-progress", args=[scene.study.pk])).json()
    assert all(r["stale"] is True for r in answer)
    monkeypatch.undo()
    submit_one(scene)  # the next write computes them again
    page = client.get(url).content.decode()
    assert status_of(page) == "current"
    assert f"<td>{name}</td><td>{int(before.group(1)) + 2}</td>" in page


def test_a_failure_before_any_figures_answers_503_and_the_page_shows_the_error(
    eager, client, monkeypatch
):
    scene = scene_with_labels()
    client.force_login(scene.owner)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("out of memory")

    monkeypatch.setattr("annotator.adjudication.analytics.compute_analytics", broken)
    page = client.get(reverse("adjudication:analytics", args=[scene.study.pk])).content.decode()
    assert status_of(page) == "failed" and "hx-trigger" not in page
    answer = client.get(reverse("api-disagreement-analytics", args=[scene.study.pk]))
    assert answer.status_code == 503 and answer.json()["computing"] is False


def values(n: int) -> dict[str, int]:
    return {"n": n}


def failing(n: int) -> dict[str, int]:
    raise ValueError(f"cannot count {n}")


def test_one_job_at_a_time_per_figures_and_a_failure_keeps_the_value(eager):
    def served(fingerprint: str, compute: str, n: int) -> Any:
        return study_figures(
            "test:figures",
            fingerprint=fingerprint,
            items=1,
            compute=compute,
            params={"n": n},
            timeout=60,
        )

    first = served("a", "tests.test_figures.values", 1)
    assert first.value == {"n": 1} and not first.stale
    cache.set("figures-lock:test:figures", "running", 60)  # a job is running
    held = served("b", "tests.test_figures.values", 2)
    assert held.value == {"n": 1} and held.updating and held.polling
    with pytest.raises(ValueError):  # the task fails, for the worker to log
        recompute("test:figures", "tests.test_figures.failing", {"n": 2}, "b", "running")
    assert cache.get("figures-lock:test:figures") is None  # the job let go of its lock
    failed = served("b", "tests.test_figures.values", 2)
    assert failed.value == {"n": 1} and failed.error == "ValueError: cannot count 2"
    assert failed.stale and not failed.polling
    fresh = served("c", "tests.test_figures.values", 3)  # a newer write tries again
    assert fresh.value == {"n": 3} and not fresh.stale and fresh.as_of >= first.as_of


def test_a_job_starts_at_most_once_per_interval_under_constant_writes(eager, settings):
    """Sooner than FIGURES_MIN_INTERVAL_SECONDS after the last computation the figures are
    served as updating, no job is sent; once the interval has passed the next view sends it."""
    settings.FIGURES_MIN_INTERVAL_SECONDS = 30

    def served(fingerprint: str, n: int) -> Any:
        return study_figures(
            "test:interval",
            fingerprint=fingerprint,
            items=1,
            compute="tests.test_figures.values",
            params={"n": n},
            timeout=60,
        )

    first = served("a", 1)
    assert first.value == {"n": 1} and not first.stale
    soon = served("b", 2)  # a write a moment later: no job yet
    assert soon.value == {"n": 1} and soon.updating and soon.polling
    assert cache.get("figures-lock:test:interval") is None
    last = cache.get("figures-last:test:interval")
    last["computed_at"] -= timedelta(seconds=31)  # the interval has passed
    cache.set("figures-last:test:interval", last, 60)
    later = served("c", 3)
    assert later.value == {"n": 3} and not later.stale
