"""Redis down (hung, then killed) under a running web app: labeling and adjudication go on, as
they need only PostgreSQL; starting a job answers at once that jobs are unavailable and leaves
the job queued; once Redis is back, a worker that starts runs every job that waited.

The web app runs under gunicorn (two processes) against the test database and a redis-server of
this test's own (annotator/dispatch.py, annotator/cache.py); nothing is mocked.
"""

from __future__ import annotations

import ast
import json
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.db import connection
from django.utils import timezone

from annotator.adjudication.models import Decision
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import fail_lost_runs
from annotator.dispatch import QUEUE_UNAVAILABLE, STARTUP_RESEND_AFTER, redispatch_waiting_jobs
from annotator.exports.models import ExportJob
from annotator.issues.access import grant_import
from annotator.issues.models import ImportJob
from annotator.studies.models import Annotation, AnnotationLabel
from tests.adjudication.helpers import Scene, make_scene
from tests.conftest import _database_url
from tests.faults.processes import RedisServer, WebClient, app_env, celery_worker, gunicorn
from tests.issues.test_import_service import rest_issue

pytestmark = pytest.mark.django_db(transaction=True)

# Starting a job while Redis is down must answer within this (settings: broker timeouts).
JOB_START_SECONDS = 3.0
# A labeling or adjudication request must not hang on Redis (settings: cache timeouts).
PAGE_SECONDS = 3.0


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.kill()


@pytest.fixture
def app(redis_server: RedisServer, tmp_path: Any) -> dict[str, str]:
    return app_env(
        DATABASE_URL=_database_url(connection.settings_dict["NAME"]),
        REDIS_URL=redis_server.url,
        DJANGO_MEDIA_ROOT=str(tmp_path / "media"),
    )


def test_labeling_goes_on_and_jobs_wait_while_redis_is_down(redis_server, app):
    scene = make_scene(items=2, k=2)
    grant_import(scene.owner)  # the owner also imports issues
    with gunicorn(app) as base:
        owner = WebClient(base).login(scene.owner.username)
        annotators = [WebClient(base).login(u.username) for u in scene.annotators]

        redis_server.pause()  # hung: the kernel accepts, nobody answers
        first = timed(lambda: label_next(scene, annotators[0], "hang"), PAGE_SECONDS * 2)
        started = timed(lambda: start_export_api(owner, scene), JOB_START_SECONDS)
        assert started.status_code == 202 and started.json()["detail"] == QUEUE_UNAVAILABLE

        redis_server.kill()  # dead: connections refused
        adjudicator = WebClient(base).login(scene.adjudicator.username)  # a login too
        second = timed(lambda: label_next(scene, annotators[1], "oom"), PAGE_SECONDS * 2)
        assert first == second  # both labeled the same item, and disagree
        for client, code in zip(annotators, ("oom", "oom"), strict=True):
            timed(lambda c=client, code=code: label_next(scene, c, code), PAGE_SECONDS * 2)
        timed(lambda: adjudicate(scene, adjudicator, first, "hang"), PAGE_SECONDS * 2)

        pages = [start_import_page(owner), start_export_page(owner, scene)]
        pages.append(start_agreement_page(owner, scene))
        for page in pages:
            assert QUEUE_UNAVAILABLE in page.text
            # and still after a reload, when the flash message is gone: the job page says why
            reloaded = owner.get(page.url.removeprefix(base))
            assert reloaded.status_code == 200 and QUEUE_UNAVAILABLE in reloaded.text

        waiting = waiting_jobs()
        # the import, two exports, the run started on the page and the one the round's
        # completion started (the second item was labeled by both)
        assert len(waiting) == 5, waiting
        assert all(job.status == "queued" for job in waiting)

        redis_server.start()  # back, empty: the messages never sent are not there
        with celery_worker(app):
            finished = wait_until_finished(waiting)
            assert [job.status for job in finished] == ["succeeded"] * 5, [
                (job, job.error) for job in finished
            ]
            assert not any(job.notes == QUEUE_UNAVAILABLE for job in finished)
            # the app, never restarted, sends jobs again at once
            again = start_export_api(owner, scene)
            assert again.status_code == 202 and "detail" not in again.json()
            (job,) = wait_until_finished([ExportJob.objects.get(pk=again.json()["id"])])
            assert job.status == "succeeded", job.error


@pytest.fixture
def own_queue():  # type: ignore[no-untyped-def]
    """Jobs sent by these tests go to a queue no worker reads (a worker another module started
    for the whole session listens on the default one, and would take them)."""
    from annotator.celery import app

    default, app.conf.task_default_queue = app.conf.task_default_queue, f"test-{uuid.uuid4().hex}"
    try:
        yield app.conf.task_default_queue
    finally:
        app.conf.task_default_queue = default


def test_jobs_waiting_for_the_queue_are_sent_once_by_concurrent_senders(settings, own_queue):
    """Beat and a starting worker may send again at the same moment: each job goes out once."""
    import redis

    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: run the suite with `make test`")
    queue = redis.Redis.from_url(settings.REDIS_URL)
    queue.delete(own_queue)
    scene = make_scene(items=1, k=2)
    jobs = [ExportJob.objects.create(study=scene.study, notes=QUEUE_UNAVAILABLE) for _ in range(6)]
    start = threading.Barrier(3)
    sent: list[int] = []

    def send() -> None:
        start.wait()
        try:
            sent.append(redispatch_waiting_jobs())
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    messages = queue.lrange(own_queue, 0, -1)
    queue.delete(own_queue)
    assert sum(sent) == 6
    headers = [json.loads(message)["headers"] for message in messages]
    assert {h["task"] for h in headers} == {"annotator.exports.tasks.export_dataset_task"}
    assert sorted(ast.literal_eval(h["argsrepr"])[0] for h in headers) == [job.pk for job in jobs]
    assert not ExportJob.objects.filter(notes=QUEUE_UNAVAILABLE).exists()


def test_a_starting_worker_sends_again_jobs_queued_long_ago(settings, own_queue):
    """A Redis restarted without persistence lost the messages it held: the jobs stay queued,
    unmarked. A worker that starts sends those queued for over a minute again (a second
    message for a job already taken is refused by the task's claim)."""
    import redis

    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: run the suite with `make test`")
    queue = redis.Redis.from_url(settings.REDIS_URL)
    queue.delete(own_queue)
    scene = make_scene(items=1, k=2)
    lost, recent = (ExportJob.objects.create(study=scene.study) for _ in range(2))
    ExportJob.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=5))

    assert redispatch_waiting_jobs() == 0  # beat: only jobs marked as never sent
    assert redispatch_waiting_jobs(resend_older_than=STARTUP_RESEND_AFTER) == 1
    messages = queue.lrange(own_queue, 0, -1)
    queue.delete(own_queue)
    (headers,) = [json.loads(message)["headers"] for message in messages]
    assert list(ast.literal_eval(headers["argsrepr"])) == [lost.pk] != [recent.pk]


def test_the_agreement_sweep_leaves_runs_that_wait_for_the_queue(settings):
    """Runs queued past the time limit count as lost, unless they wait for the queue."""
    scene = make_scene(items=1, k=2)
    version = scene.study.codebook_version
    waiting = AgreementRun.objects.create(
        study=scene.study, codebook_version=version, notes=QUEUE_UNAVAILABLE
    )
    lost = AgreementRun.objects.create(study=scene.study, codebook_version=version)
    later = timezone.now() + timedelta(seconds=settings.AGREEMENT_TIME_LIMIT_SECONDS + 60)

    assert fail_lost_runs(now=later) == 1
    waiting.refresh_from_db()
    lost.refresh_from_db()
    assert (waiting.status, lost.status) == ("queued", "failed")


def test_a_logout_while_redis_hangs_is_not_undone_when_redis_answers_again(
    redis_server, settings, client, monkeypatch
):
    """The session deleted at logout could not be deleted from the hung cache; once Redis
    answers, that stale copy is deleted before anything is read, so the old cookie is dead."""
    import annotator.cache

    monkeypatch.setattr(annotator.cache, "_health", annotator.cache._Health())
    monkeypatch.setattr(annotator.cache, "RETRY_AFTER", 0.1)
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    settings.CACHES = {
        "default": {
            "BACKEND": "annotator.cache.TolerantRedisCache",
            "LOCATION": redis_server.url,
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }
    scene = make_scene(items=1, k=2)
    client.force_login(scene.owner)
    page = f"/studies/{scene.study.pk}/"
    assert client.get(page).status_code == 200
    cookie = client.cookies["sessionid"].value

    redis_server.pause()
    try:
        assert client.post("/logout/").status_code == 302
    finally:
        redis_server.resume()
    time.sleep(0.2)  # the cache is asked again after RETRY_AFTER
    client.cookies["sessionid"] = cookie
    again = client.get(page)
    assert again.status_code == 302 and again["Location"].startswith("/login/")


# --- what people do -----------------------------------------------------------------------------
def label_next(scene: Scene, client: WebClient, symptom: str) -> int:
    """Open the next item, autosave a draft, submit; returns the item's id. Checks the labels
    reached the database exactly."""
    opened = client.get(f"/studies/{scene.study.pk}/annotate/")
    assert opened.status_code == 302, opened.status_code
    page = client.follow(opened)
    assert page.status_code == 200 and "facet-" in page.text
    assignment = int(opened.headers["Location"].rstrip("/").rsplit("/", 1)[1])
    labels = scene.world.labels(screening="relevant", symptom=symptom)
    form = {f"facet-{facet}": ids for facet, ids in labels.items() if ids}
    draft = client.post(f"/studies/assignments/{assignment}/draft/", form, headers=HTMX)
    assert draft.status_code == 200, draft.status_code
    assert Annotation.objects.get(assignment=assignment).status == "draft"
    submitted = client.post(f"/studies/assignments/{assignment}/submit/", form)
    assert submitted.status_code == 302, submitted.status_code
    annotation = Annotation.objects.get(assignment=assignment)
    stored = AnnotationLabel.objects.filter(annotation=annotation)
    assert annotation.status == "submitted"
    assert sorted(stored.values_list("category_id", flat=True)) == sorted(
        c for ids in labels.values() for c in ids
    )
    return annotation.assignment.item_id


def adjudicate(scene: Scene, client: WebClient, item_id: int, symptom: str) -> None:
    assert client.get(f"/adjudication/studies/{scene.study.pk}/").status_code == 200
    assert client.get(f"/adjudication/items/{item_id}/").status_code == 200
    labels = scene.world.labels(screening="relevant", symptom=symptom)
    form = {f"facet-{facet}": ids for facet, ids in labels.items() if ids}
    form.update(reason="annotator-slip", comment="", version=0)
    decided = client.post(f"/adjudication/items/{item_id}/decide/", form)
    assert decided.status_code == 302, decided.status_code
    decision = Decision.objects.get(item=item_id)
    assert (decision.source, decision.decided_by_id) == ("adjudicated", scene.adjudicator.pk)


def start_import_page(client: WebClient) -> requests.Response:
    content = json.dumps([rest_issue(n) for n in range(1, 6)]).encode()
    files = {"file": ("issues.json", content, "application/json")}
    return follow_timed(client, "/issues/import/", {"format": "auto", "repository": ""}, files)


def start_export_page(client: WebClient, scene: Scene) -> requests.Response:
    form = {"format": "csv", "table": "final"}
    return follow_timed(client, f"/exports/studies/{scene.study.pk}/", form)


def start_agreement_page(client: WebClient, scene: Scene) -> requests.Response:
    return follow_timed(client, f"/agreement/studies/{scene.study.pk}/start/", {})


def start_export_api(client: WebClient, scene: Scene) -> requests.Response:
    return client.post(f"/api/studies/{scene.study.pk}/exports/", {"format": "json"})


def follow_timed(
    client: WebClient, path: str, data: dict[str, Any], files: Any = None
) -> requests.Response:
    started = timed(lambda: client.post(path, data, files=files), JOB_START_SECONDS)
    assert started.status_code == 302, (path, started.status_code)
    return client.follow(started)  # the job's page, with the message


# --- helpers ----------------------------------------------------------------------------------
HTMX = {"HX-Request": "true"}


def timed(action: Any, limit: float) -> Any:
    began = time.monotonic()
    result = action()
    took = time.monotonic() - began
    assert took < limit, f"took {took:.1f} s (limit {limit} s)"
    return result


def waiting_jobs() -> list[Any]:
    return [
        job
        for model in (ImportJob, ExportJob, AgreementRun)
        for job in model.objects.filter(notes=QUEUE_UNAVAILABLE).order_by("pk")
    ]


def wait_until_finished(jobs: list[Any], timeout: float = 120) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job in jobs:
            job.refresh_from_db()
        if all(job.is_finished for job in jobs):
            return jobs
        time.sleep(0.3)
    raise AssertionError(f"jobs not finished after {timeout} s: {[(j, j.status) for j in jobs]}")
