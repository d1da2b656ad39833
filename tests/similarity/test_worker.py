"""A near-duplicate pass started from the owner's page runs in a real Celery worker process
over Redis, against PostgreSQL, and its page shows the outcome."""

from __future__ import annotations

import time

import pytest

from annotator.similarity.models import DuplicateGroup, DuplicatePass, SimilarIssues
from tests.factories import IssueFactory, RepositoryFactory
from tests.similarity.test_duplicates import OTHERS, report, respaced
from tests.studies.factories import make_world

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def wait_for(job: DuplicatePass, timeout: float = 120) -> list[tuple[str, int]]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        seen.append((job.status, job.progress))
        if job.is_finished:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"pass {job.pk} still {job.status} after {timeout} s")


def test_a_pass_started_on_the_page_runs_in_the_worker(celery_worker_process, client):
    world = make_world()
    repository = RepositoryFactory(owner="deepspeedai", name="DeepSpeed")
    first = IssueFactory(repository=repository, title="hang", body=report())
    second = IssueFactory(repository=repository, title="hang", body=respaced(report(pid="7")))
    for i, text in enumerate(OTHERS):
        IssueFactory(repository=repository, title=f"Other {i}", body=text)
    client.force_login(world.owner)
    answer = client.post(
        f"/similarity/studies/{world.study.pk}/duplicates/passes/",
        {"repository": repository.pk},
    )
    job = DuplicatePass.objects.get()
    assert answer["Location"] == f"/similarity/passes/{job.pk}/"
    seen = wait_for(job)
    assert job.status == "succeeded", job.error
    assert job.progress == 100 and job.worker and job.finished_at
    assert all(status != "succeeded" or progress == 100 for status, progress in seen)
    group = DuplicateGroup.objects.get()
    assert set(group.members.values_list("issue_id", flat=True)) == {first.pk, second.pk}
    assert SimilarIssues.objects.filter(issue__repository=repository).count() == 5
    page = client.get(answer["Location"]).content.decode()
    assert "1 group of near-duplicates" in page
