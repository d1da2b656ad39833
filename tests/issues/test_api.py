"""REST API for issues and imports: token auth, filters, uploads, schema."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.issues.access import grant_import
from annotator.issues.models import ImportJob
from tests.factories import IssueCommentFactory, IssueFactory, RepositoryFactory, UserFactory
from tests.issues.test_import_service import ISSUES

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    client = APIClient()
    importer = UserFactory()
    grant_import(importer)  # imports and syncs need it
    _, secret = create_api_token(user=importer, name="tests")
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def test_anonymous_requests_are_refused():
    response = APIClient().get("/api/issues/")

    assert response.status_code == 401


def test_issue_list_filters_and_names_the_repository(api):
    repository = RepositoryFactory(owner="NVIDIA", name="Megatron-LM")
    IssueFactory(repository=repository, number=1, state="open")
    IssueFactory(repository=repository, number=2, state="closed")

    response = api.get("/api/issues/", {"state": "closed"})

    assert response.status_code == 200
    assert response.json()["count"] == 1
    assert response.json()["results"][0]["repository"] == "NVIDIA/Megatron-LM"
    assert response.json()["results"][0]["number"] == 2


def test_issue_detail_includes_body_and_comments(api):
    issue = IssueFactory(body="the body")
    IssueCommentFactory(issue=issue, body="first")

    data = api.get(f"/api/issues/{issue.pk}/").json()

    assert data["body"] == "the body"
    assert [c["body"] for c in data["comments"]] == ["first"]


def test_upload_through_the_api_returns_the_queued_job(api):
    upload = SimpleUploadedFile("issues.json", ISSUES.read_bytes())

    response = api.post("/api/imports/", {"file": upload}, format="multipart")

    assert response.status_code == 202
    job = ImportJob.objects.get()
    assert response.json()["id"] == job.pk
    assert response.json()["status"] == "queued"
    assert api.get(f"/api/imports/{job.pk}/").json()["original_name"] == "issues.json"


def test_upload_with_a_bad_repository_is_refused_with_the_field_named(api):
    upload = SimpleUploadedFile("issues.json", b"[]")

    response = api.post(
        "/api/imports/", {"file": upload, "repository": "no-slash"}, format="multipart"
    )

    assert response.status_code == 400
    assert "repository" in response.json()
    assert ImportJob.objects.count() == 0


def test_schema_lists_the_issue_and_import_routes(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    paths = response.json()["paths"]
    assert {"/api/issues/", "/api/issues/{id}/", "/api/imports/", "/api/imports/{id}/"} <= set(
        paths
    )
