"""Shared issues changed under a study: who may change them, what is kept, what people see.

Only staff and importers import (tested with the other import permissions); here an importer
who is in no study re-imports an issue a study has labeled, with a new title and body. The
earlier text is kept as a revision naming the import and the importer, the issue is marked
changed, the annotator who labeled it keeps reading the text they labeled (the current one a
click away), and the issue page lists its earlier texts."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotator.issues.access import grant_import
from annotator.issues.models import ImportJob, Issue, IssueRevision
from annotator.issues.services import import_issues, run_import_job, start_import_job
from annotator.studies.models import Assignment
from annotator.studies.services import next_assignment, submit_annotation
from tests.factories import IssueFactory, UserFactory
from tests.issues.test_import_service import rest_issue, run
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db


def labeled_world():
    world = make_world(items=2, k=1, annotators=1)
    annotator = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=annotator)
    labels = world.labels(screening="relevant", symptom="hang")
    submit_annotation(assignment=assignment, user=annotator, labels=labels)
    return world, Assignment.objects.get(pk=assignment.pk)


def reimport(issue: Issue, user, **fields) -> ImportJob:
    record = rest_issue(issue.number, repo=issue.repository.full_name, **fields)
    upload = SimpleUploadedFile("issues.json", json.dumps([record]).encode())
    job = start_import_job(uploaded=upload, user=user)
    run_import_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED, job.error
    return job


def test_a_reimport_keeps_the_labeled_text_and_names_who_changed_it():
    world, assignment = labeled_world()
    issue = assignment.item.issue
    old_title, old_body = issue.title, issue.body
    importer = UserFactory(username="importer-elsewhere")  # in no study
    grant_import(importer)

    job = reimport(issue, importer, title="Rewritten title", body="Rewritten body")

    issue.refresh_from_db()
    assert (issue.title, issue.body) == ("Rewritten title", "Rewritten body")
    assert issue.changed_at is not None
    revision = IssueRevision.objects.get(issue=issue)
    assert (revision.title, revision.body) == (old_title, old_body)
    assert (revision.source, revision.import_job_id, revision.replaced_by) == (
        "import",
        job.pk,
        importer,
    )

    client = Client()
    client.force_login(world.annotators[0])
    page = client.get(assignment.get_absolute_url()).content.decode()
    assert f"<h1>{old_title} " in page
    assert "data-labeled-text" in page and "You see the text you labeled" in page
    assert "changed on GitHub since you labeled it" in page
    assert "Rewritten body" in page.split("The current text", 1)[1]  # a click away
    detail = client.get(reverse("issues:detail", args=[issue.pk])).content.decode()
    assert "Earlier texts" in detail and "importer-elsewhere" in detail and old_title in detail


def test_a_change_of_state_only_keeps_no_revision_and_unheld_issues_keep_none():
    _world, assignment = labeled_world()
    issue = assignment.item.issue
    importer = UserFactory(username="importer")
    grant_import(importer)
    reimport(issue, importer, title=issue.title, body=issue.body, state="closed")
    assert not IssueRevision.objects.exists()
    issue.refresh_from_db()
    assert issue.state == "closed" and issue.changed_at is None

    loose = IssueFactory(repository=issue.repository, number=9000)
    run([rest_issue(9000, repo=issue.repository.full_name, title="Other", body="Other")])
    loose.refresh_from_db()
    assert loose.title == "Other" and loose.changed_at is not None  # changed, but no study
    assert not IssueRevision.objects.filter(issue=loose).exists()


def test_an_annotator_who_labeled_after_the_change_sees_the_current_text():
    world = make_world(items=2, k=1, annotators=1)
    issue = world.issues[0]
    importer = UserFactory(username="importer")
    grant_import(importer)
    reimport(issue, importer, title="New title", body="New body")
    annotator = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=annotator)
    while assignment.item.issue_id != issue.pk:  # label the other item first
        submit_annotation(
            assignment=assignment,
            user=annotator,
            labels=world.labels(screening="relevant", symptom="hang"),
        )
        assignment = next_assignment(study=world.study, annotator=annotator)
    client = Client()
    client.force_login(annotator)
    page = client.get(assignment.get_absolute_url()).content.decode()
    assert "<h1>New title " in page and "data-labeled-text" not in page


def test_a_failed_import_keeps_no_revision():
    _world, assignment = labeled_world()
    issue = assignment.item.issue
    good = rest_issue(issue.number, repo=issue.repository.full_name, title="T2", body="B2")
    bad = rest_issue(issue.number + 500, repo=issue.repository.full_name)
    bad["html_url"] = "javascript:alert(1)"
    with pytest.raises(Exception, match="html_url"):
        import_issues(stream=io.BytesIO(json.dumps([good, bad]).encode()))
    assert not IssueRevision.objects.exists()
    issue.refresh_from_db()
    assert issue.changed_at is None and issue.title != "T2"
