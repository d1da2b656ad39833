"""A Celery worker killed outright (SIGKILL of its whole process group) in the middle of an
import, an agreement run, an export and a GitHub sync, against PostgreSQL, Redis and real worker
processes.

Each case: a worker starts the job and is killed once the job row shows it under way; nothing
partial is kept (the sync keeps whole pages and the cursor after them, by design); the job is
still "running", as nothing on the dead worker could say otherwise; the beat sweep, run by a
new worker with the heartbeat timeout shortened, fails it with its error; the broker hands the
killed task out again (as Redis does once its visibility timeout has passed) and that changes
nothing; the job started again succeeds with the full result.

The workers (tests/faults/killable.py) consume a queue of their own, so that a worker another
test module started for the session never picks up these jobs.
"""

from __future__ import annotations

import csv
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections, transaction
from django.utils import timezone
from django.utils.html import escape

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import start_agreement_run
from annotator.exports.models import ExportJob
from annotator.exports.services import (
    partial_directory,
    partial_path,
    remove_export_leftovers,
    start_export_job,
)
from annotator.issues.models import ImportJob, Issue, IssueComment, SyncJob, SyncState
from annotator.issues.services import start_import_job
from annotator.issues.sync import start_sync_job
from annotator.job_sweep import job_models, sweep_lost_jobs
from annotator.jobs import Job, claim_job, finish_job, job_heartbeat, sweep_lost_jobs_task
from annotator.studies.models import AnnotationLabel, Membership
from taxonomy_app.models import Category
from tests.faults.killable import (
    Worker,
    eventually,
    finished,
    queue_nobody_reads_fixture,  # noqa: F401 -- the `queue_nobody_reads` fixture
    redeliver_killed_tasks,
    wait_for,
    wait_until_delivered,
    workers_fixture,  # noqa: F401 -- the `workers` fixture
)
from tests.issues.fake_github import FakeGitHub
from tests.issues.test_import_service import rest_issue
from tests.issues.test_sync import assert_database_matches
from tests.studies.factories import World, make_world

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


# --- a labelled study large enough to be caught mid-way -----------------------------------------
def labelled_study(items: int, annotators: int) -> World:
    """A study of `items` issues on the small codebook, each labelled by every one of
    `annotators` (70% of the time copying the item's "true" category), written with INSERT …
    SELECT: many raters make the agreement run long (a κ for every pair) on few rows."""
    world = make_world(items=1, k=annotators, annotators=1)
    people = get_user_model().objects.bulk_create(
        get_user_model()(username=f"rater-{n}") for n in range(1, annotators)
    )
    Membership.objects.bulk_create(
        Membership(study=world.study, user=person, role=Membership.Role.ANNOTATOR)
        for person in people
    )
    world.annotators += people
    facts = {
        "study": world.study.pk,
        "round": world.round.pk,
        "n": items,
        "k": annotators,
        "repo": world.issues[0].repository_id,
        "people": [p.pk for p in world.annotators],
        "version": world.version.pk,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.42)")
        for statement in _STUDY_SQL:
            cursor.execute(statement, facts)
        for facet in world.version.facets.order_by("order", "pk"):
            leaves = list(
                Category.objects.filter(facet=facet, children__isnull=True)
                .order_by("pk")
                .values_list("pk", flat=True)
            )
            sql = _MULTI_LABELS if facet.kind == "multi" else _SINGLE_LABELS
            for statement in sql:
                cursor.execute(statement, {**facts, "facet": facet.pk, "leaves": leaves})
        cursor.execute(
            "ANALYZE issues_issue, studies_item, studies_assignment, "
            "studies_annotation, studies_annotationlabel"
        )
    return world


_NEW_ITEMS = "FROM studies_item it WHERE it.study_id = %(study)s AND it.position > 100000"
_NEW_ANNOTATIONS = (
    "FROM studies_annotation an JOIN studies_assignment s ON s.id = an.assignment_id "
    "JOIN studies_item it ON it.id = s.item_id "
    "WHERE it.study_id = %(study)s AND it.position > 100000"
)
_STUDY_SQL = [
    "INSERT INTO issues_issue (repository_id, number, title, body, state, state_reason, labels,"
    " author, is_pull_request, html_url, comments_count, raw, content_hash, imported_at)"
    " SELECT %(repo)s, 100000 + g, 'Issue ' || g, 'NCCL timeout on rank ' || g %% 8, 'open', '',"
    " '[]', 'someone', false, '', 0, '{}', md5(g::text), now() FROM generate_series(1, %(n)s) g",
    "INSERT INTO studies_item (study_id, round_id, issue_id, position, quota, active_count,"
    " submitted_count) SELECT %(study)s, %(round)s, i.id, 100000 + i.number, %(k)s, %(k)s, %(k)s"
    " FROM issues_issue i WHERE i.repository_id = %(repo)s AND i.number > 100000",
    "INSERT INTO studies_assignment (item_id, annotator_id, status, skip_reason, assigned_at,"
    " touched_at, finished_at) SELECT it.id, p, 'submitted', '', now(), now(), now()"
    " " + _NEW_ITEMS.replace("WHERE", ", unnest(%(people)s::int[]) p WHERE"),
    "INSERT INTO studies_annotation (assignment_id, codebook_version_id, status, seconds_spent,"
    " notes, unsure, created_at, updated_at, submitted_at)"
    " SELECT s.id, %(version)s, 'submitted', 30, '', '[]', now(), now(), now()"
    " FROM studies_assignment s JOIN studies_item it ON it.id = s.item_id"
    " WHERE it.study_id = %(study)s AND it.position > 100000",
]
_SINGLE_LABELS = [
    "INSERT INTO studies_annotationlabel (annotation_id, facet_id, category_id)"
    " SELECT an.id, %(facet)s, (%(leaves)s::bigint[])[1 + CASE WHEN random() < 0.7"
    " THEN it.id * 7919 %% cardinality(%(leaves)s::bigint[])"
    " ELSE floor(random() * cardinality(%(leaves)s::bigint[]))::int END] " + _NEW_ANNOTATIONS,
]
_MULTI_LABELS = [  # each category chosen on its own: a set of none, one or both
    "INSERT INTO studies_annotationlabel (annotation_id, facet_id, category_id)"
    " SELECT an.id, %(facet)s, c "
    + _NEW_ANNOTATIONS.replace("WHERE", ", unnest(%(leaves)s::bigint[]) c WHERE")
    + " AND random() < 0.5",
]


# --- the four jobs -------------------------------------------------------------------------------
IMPORT_ISSUES = 8_000  # a file the worker is a second or more into when killed
STUDY_ITEMS, STUDY_RATERS = 400, 40  # 780 rater pairs, 16,000 annotations, 48,000 labels
SYNC_ISSUES, SYNC_COMMENTS, SYNC_PAGE = 600, 150, 100
LOG = "Training hangs at step {n} with ZeRO-3.\r\n```\n" + "NCCL INFO Channel 00/32 : 0 -> 1\n" * 20
LOG += "```"


@dataclass
class Case:
    """One kind of job: how to set it up and start it, how its row shows it under way, and what
    its data must look like after the kill and after it ran again."""

    name: str
    prepare: Callable[[FakeGitHub], Any]
    start: Callable[[Any], Job]
    under_way: Callable[[Any], bool]
    nothing_partial: Callable[[Any, Job], None]
    full_result: Callable[[Any, Job], None]
    viewer: Callable[[Any], Any]
    outcome: str = Job.lost_outcome


def _import_file(github: FakeGitHub) -> bytes:
    records = [rest_issue(n, body=LOG.format(n=n)) for n in range(1, IMPORT_ISSUES + 1)]
    return json.dumps(records).encode()


def _start_import(content: bytes) -> ImportJob:
    with transaction.atomic():
        return start_import_job(uploaded=SimpleUploadedFile("issues.json", content))


def _no_issues(content: bytes, job: Job) -> None:
    assert (Issue.objects.count(), IssueComment.objects.count()) == (0, 0)
    assert (job.created, job.updated, job.unchanged) == (0, 0, 0)


def _all_issues(content: bytes, job: Job) -> None:
    assert job.summary == f"created {IMPORT_ISSUES}, updated 0, unchanged 0, skipped 0"
    assert Issue.objects.count() == IMPORT_ISSUES


def _start_run(world: World) -> AgreementRun:
    with transaction.atomic():
        return start_agreement_run(study=world.study, user=world.owner)


def _no_result(world: World, run: Job) -> None:
    assert run.result is None
    assert not AgreementRun.objects.filter(result__isnull=False).exists()


def _full_agreement(world: World, run: Job) -> None:
    assert run.progress == 100 and len(run.result["raters"]) == STUDY_RATERS
    assert [facet["key"] for facet in run.result["facets"]] == ["screening", "symptom", "fix"]
    assert run.result["facets"][0]["design"]["units"] == STUDY_ITEMS
    assert run.inputs["counts"] and run.inputs["label_table_sha256"]


def _start_export(world: World) -> ExportJob:
    with transaction.atomic():
        return start_export_job(study=world.study, format="csv", table="long", user=world.owner)


def _no_file(world: World, job: Job) -> None:
    assert job.file == "" and job.size_bytes == 0
    assert not [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]


def _full_export(world: World, job: Job) -> None:
    labels = AnnotationLabel.objects.filter(annotation__status="submitted").count()
    assert job.rows_written == job.total_rows == labels
    with job.file.open("r") as written:
        assert sum(1 for _ in csv.reader(written)) == labels + 1  # and a header
    assert not list(partial_directory().iterdir())


def _slow_github(github: FakeGitHub) -> FakeGitHub:
    github.populate(issues=SYNC_ISSUES, comments=SYNC_COMMENTS)
    github.page_delay = 0.2
    return github


def _start_sync(github: FakeGitHub) -> SyncJob:
    github.served.clear()
    with transaction.atomic():
        return start_sync_job(repository=github.full_name, api_url=github.url)


def _whole_pages(github: FakeGitHub, job: Job) -> None:
    """What a sync keeps by design: whole pages of issues, and the cursor right after them."""
    state = SyncState.objects.get()
    next_page = int(urllib.parse.parse_qs(urllib.parse.urlsplit(state.next_url).query)["page"][0])
    written = Issue.objects.count()
    assert state.phase == SyncState.Phase.ISSUES and written >= 2 * SYNC_PAGE
    assert written == (next_page - 1) * SYNC_PAGE
    assert IssueComment.objects.count() == 0 and state.last_synced_at is None


def _resumed_to_the_end(github: FakeGitHub, job: Job) -> None:
    assert_database_matches(github)
    pages = [
        s.query["page"] for s in github.served if s.path.endswith("/issues") and s.status == 200
    ]
    last = SYNC_ISSUES // SYNC_PAGE
    assert int(pages[0]) > 2 and pages == [str(n) for n in range(int(pages[0]), last + 1)]
    assert SyncState.objects.get().phase == SyncState.Phase.IDLE


def _staff(context: Any) -> Any:
    return get_user_model().objects.create_superuser("staff", "staff@example.org", None)


CASES = [
    Case(
        "import",
        _import_file,
        _start_import,
        lambda job: job.bytes_read > 0,
        _no_issues,
        _all_issues,
        _staff,
    ),
    Case(
        "agreement run",
        lambda github: labelled_study(STUDY_ITEMS, STUDY_RATERS),
        _start_run,
        lambda run: run.progress > 0,
        _no_result,
        _full_agreement,
        lambda world: world.owner,
    ),
    Case(
        "export",
        lambda github: labelled_study(STUDY_ITEMS, STUDY_RATERS),
        _start_export,
        lambda job: job.rows_written > 0,
        _no_file,
        _full_export,
        lambda world: world.owner,
    ),
    Case(
        "GitHub sync",
        _slow_github,
        _start_sync,
        lambda job: job.phase == "issues" and job.pages >= 2,
        _whole_pages,
        _resumed_to_the_end,
        _staff,
        SyncJob.lost_outcome,
    ),
]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_job_whose_worker_is_killed_keeps_nothing_partial_fails_and_runs_again(
    case: Case, workers: Callable[..., Worker], github: FakeGitHub, client: Any
) -> None:
    context = case.prepare(github)
    first = workers()
    job = wait_for(case.start(context), lambda job: job.status == "running" and case.under_way(job))
    first.kill()

    job.refresh_from_db()
    assert job.status == "running"  # nothing on the dead worker could say otherwise
    assert job.worker == f"{socket.gethostname()}:{first.process.pid}"
    case.nothing_partial(context, job)
    if isinstance(job, ExportJob):
        assert partial_path(job).stat().st_size > 0  # killed while writing its file

    second = workers(JOB_HEARTBEAT_TIMEOUT_SECONDS="1")
    while timezone.now() < job.heartbeat_at + timedelta(seconds=1.5):
        time.sleep(0.1)
    sweep_lost_jobs_task.delay()
    job = finished(job)
    assert job.status == "failed"
    assert job.error.startswith(
        f"The worker running this job ({job.worker}) stopped before it finished (worker lost at "
    )
    assert job.error.endswith(f"; {case.outcome}. Start it again.")
    case.nothing_partial(context, job)
    if isinstance(job, ExportJob):  # the sweep goes on to remove the stray partial file
        assert eventually(lambda: not partial_path(job).exists())
    client.force_login(case.viewer(context))
    page = client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert escape(job.error) in page.content.decode()

    assert redeliver_killed_tasks() == 1
    wait_until_delivered()
    redelivered = type(job).objects.get(pk=job.pk)
    assert (redelivered.status, redelivered.error) == ("failed", job.error)
    assert redelivered.finished_at == job.finished_at
    case.nothing_partial(context, redelivered)

    again = finished(case.start(context))
    assert again.status == "succeeded", again.error
    assert again.worker == f"{socket.gethostname()}:{second.process.pid}"
    case.full_result(context, again)


# --- the parts, without killing anything ---------------------------------------------------------
def test_the_sweep_fails_the_running_jobs_whose_heartbeat_stopped_and_no_other(settings) -> None:
    now = timezone.now()
    timeout = timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT_SECONDS)
    old, fresh = now - timeout - timedelta(seconds=1), now - timeout + timedelta(seconds=5)
    lost = ImportJob.objects.create(
        original_name="a.json",
        status="running",
        started_at=old,
        heartbeat_at=old,
        worker="node-1:41",
    )
    alive = ImportJob.objects.create(
        original_name="b.json",
        status="running",
        started_at=old,
        heartbeat_at=fresh,
        worker="node-2:42",
    )
    waiting = ImportJob.objects.create(original_name="c.json")  # queued: Redis may be down
    ImportJob.objects.filter(pk=waiting.pk).update(created_at=old)
    sync = SyncJob.objects.create(repository_name="a/b", status="running", heartbeat_at=old)

    swept = sweep_lost_jobs(now=now)

    assert {(type(job), job.pk) for job in swept} == {(ImportJob, lost.pk), (SyncJob, sync.pk)}
    lost.refresh_from_db()
    assert (lost.status, lost.finished_at) == ("failed", now)
    assert lost.error == (
        f"The worker running this job (node-1:41) stopped before it finished (worker lost at "
        f"{old:%Y-%m-%d %H:%M:%S} UTC); nothing it wrote was kept. Start it again."
    )
    assert SyncJob.objects.get().error.endswith(f"; {SyncJob.lost_outcome}. Start it again.")
    statuses = dict(ImportJob.objects.values_list("pk", "status"))
    assert (statuses[alive.pk], statuses[waiting.pk]) == ("running", "queued")
    assert {model.__name__ for model in job_models()} >= {
        "ImportJob",
        "SyncJob",
        "AgreementRun",
        "ExportJob",
    }


def test_a_redelivered_task_leaves_a_live_workers_job_alone_and_fails_a_lost_ones(
    settings,
) -> None:
    now = timezone.now()
    job = SyncJob.objects.create(
        repository_name="a/b", status="running", started_at=now, heartbeat_at=now, worker="node-9:7"
    )
    assert not claim_job(SyncJob, job.pk)
    job.refresh_from_db()
    assert (job.status, job.worker, job.error) == ("running", "node-9:7", "")

    stale = now - timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT_SECONDS + 1)
    SyncJob.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    assert not claim_job(SyncJob, job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "(node-9:7) stopped before it finished" in job.error


def test_the_heartbeat_beats_through_a_silent_step_and_stops_once_the_job_is_lost() -> None:
    job = ImportJob.objects.create(original_name="a.json")
    assert claim_job(ImportJob, job.pk)
    claimed = ImportJob.objects.get(pk=job.pk).heartbeat_at
    with job_heartbeat(ImportJob, job.pk, every=0.05):
        time.sleep(0.3)  # a step that reports no progress
        assert ImportJob.objects.get(pk=job.pk).heartbeat_at > claimed
        ImportJob.objects.filter(pk=job.pk).update(status="failed")  # the sweep, meanwhile
        time.sleep(0.2)
        last = ImportJob.objects.get(pk=job.pk).heartbeat_at
        time.sleep(0.2)
        assert ImportJob.objects.get(pk=job.pk).heartbeat_at == last
    assert not [t for t in threading.enumerate() if t.name.startswith("heartbeat")]
    assert not finish_job(ImportJob, job.pk, status="succeeded")
    assert ImportJob.objects.get(pk=job.pk).status == "failed"


def _sweep_from_another_connection(monkeypatch, module: Any) -> None:
    """Make the job's next progress report be followed by a sweep that finds it lost, as if
    its heartbeat had stalled: the sweep runs in a thread, on that thread's own connection."""
    real = module.report_progress

    def report_then_swept(*args: Any, **fields: Any) -> None:
        real(*args, **fields)
        later = timezone.now() + timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT_SECONDS + 1)
        sweeper = threading.Thread(target=_sweep_and_close, args=(later,))
        sweeper.start()
        sweeper.join()

    monkeypatch.setattr(module, "report_progress", report_then_swept)


def _sweep_and_close(now: Any) -> None:
    try:
        sweep_lost_jobs(now=now)
    finally:
        connections.close_all()


def test_an_import_failed_as_lost_while_still_running_keeps_nothing(
    monkeypatch, settings, tmp_path, queue_nobody_reads
) -> None:
    from annotator.issues import services

    settings.MEDIA_ROOT = tmp_path
    content = json.dumps([rest_issue(n) for n in range(1, 1501)]).encode()
    job = _start_import(content)
    _sweep_from_another_connection(monkeypatch, services)

    services.run_import_job(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == "failed" and "nothing it wrote was kept" in job.error
    assert Issue.objects.count() == 0 and job.created == 0


def test_an_agreement_run_failed_as_lost_while_still_running_stores_no_result(
    monkeypatch,
) -> None:
    from annotator.agreement import services

    world = labelled_study(20, 3)
    run = services.start_agreement_run(study=world.study, enqueue=False)
    _sweep_from_another_connection(monkeypatch, services)

    services.run_agreement_run(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "failed" and run.result is None and "stopped before" in run.error


def test_what_killed_exports_left_is_removed_but_not_a_running_exports_file(
    settings, tmp_path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    world = make_world(items=1)
    running = ExportJob.objects.create(study=world.study, status="running")
    lost = ExportJob.objects.create(study=world.study, status="failed", finished_at=timezone.now())
    partial_path(running).write_bytes(b"study,item\n1,")
    partial_path(lost).write_bytes(b"study,item\n1,")
    stored = default_storage.save(f"exports/{lost.filename}", ContentFile(b"study,item\n1,"))
    try:
        assert remove_export_leftovers() == 2
        assert partial_path(running).exists() and not partial_path(lost).exists()
        assert not default_storage.exists(stored)
    finally:
        partial_path(running).unlink(missing_ok=True)
