"""The Hugging Face folder and the replication package through the export page, the API and
the command; the pseudonyms page is for the study's owners only."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.exports.models import ExportJob, Pseudonym
from annotator.exports.services import run_export_job
from annotator.studies.models import Membership
from annotator.studies.services import add_member
from tests.exports.factories import exported_world
from tests.factories import UserFactory


@pytest.fixture
def world(db, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    return exported_world()


def finished(job: ExportJob) -> ExportJob:
    job.refresh_from_db()
    if job.status != ExportJob.Status.SUCCEEDED:  # eager in tests, else run it here
        run_export_job(job_id=job.pk)
        job.refresh_from_db()
    return job


def test_the_owner_exports_a_pseudonymised_package_from_the_page(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    start = reverse("exports:start", args=[world.study.pk])
    page = client.get(start).content.decode()
    assert 'name="pseudonymise"' in page and 'value="replication"' in page
    assert reverse("exports:pseudonyms", args=[world.study.pk]) in page
    response = client.post(
        start,
        {"format": "replication", "table": "final", "pseudonymise": "on", "license": "odc-by"},
    )
    job = finished(ExportJob.objects.get())
    assert response["Location"] == job.get_absolute_url()
    assert (job.format, job.pseudonymise, job.license) == ("replication", True, "odc-by")
    download = client.get(reverse("exports:download", args=[job.pk]))
    assert download["Content-Type"] == "application/zip"
    assert job.filename in download["Content-Disposition"]
    body = b"".join(download.streaming_content)
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        names = archive.namelist()
        long = archive.read(next(n for n in names if n.endswith("data/long.csv"))).decode()
    assert any(n.endswith("CITATION.cff") for n in names)
    assert "annotator-0" not in long and "A01" in long
    listing = client.get(reverse("exports:pseudonyms", args=[world.study.pk])).content.decode()
    assert "annotator-0" in listing and "<code>A01</code>" in listing
    assert "pseudonymised" in client.get(start).content.decode()


def test_pseudonymising_a_csv_is_refused_on_the_form(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    response = client.post(
        reverse("exports:start", args=[world.study.pk]),
        {"format": "csv", "table": "final", "pseudonymise": "on"},
    )
    assert response.status_code == 400
    assert "only the Hugging Face folder and the replication package" in response.content.decode()
    assert not ExportJob.objects.exists()


def test_the_pseudonyms_page_is_the_owners_only(client, world) -> None:  # type: ignore[no-untyped-def]
    adjudicator = UserFactory(username="adj")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    Pseudonym.objects.create(study=world.study, kind="github", key="x", name="x", code="U0001")
    url = reverse("exports:pseudonyms", args=[world.study.pk])
    for person in (adjudicator, world.annotators[0], UserFactory(username="stranger")):
        client.force_login(person)
        assert client.get(url).status_code == 404, person
    client.force_login(adjudicator)
    start = client.get(reverse("exports:start", args=[world.study.pk])).content.decode()
    assert url not in start  # no link to a page they cannot open
    client.force_login(world.owner)
    assert "<code>U0001</code>" in client.get(url).content.decode()


def test_the_api_starts_a_hugging_face_export(world) -> None:  # type: ignore[no-untyped-def]
    client = APIClient()
    token = create_api_token(user=world.owner, name="t")[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    url = f"/api/studies/{world.study.pk}/exports/"
    started = client.post(url, {"format": "huggingface", "pseudonymise": True}, format="json")
    assert started.status_code == 202, started.content
    assert started.data["pseudonymise"] is True and started.data["license"] == "cc-by-4.0"
    job = finished(ExportJob.objects.get(pk=started.data["id"]))
    download = client.get(f"/api/exports/{job.pk}/download/")
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        assert sorted(n.split("/", 1)[1] for n in archive.namelist()) == [
            "README.md",
            "data/final.parquet",
            "data/long.parquet",
        ]
    refused = client.post(url, {"format": "json", "pseudonymise": True}, format="json")
    assert refused.status_code == 400 and "pseudonymise" in refused.data
    bad = client.post(url, {"format": "replication", "license": "gpl"}, format="json")
    assert bad.status_code == 400 and "license" in bad.data
    assert ExportJob.objects.count() == 1


def test_the_command_writes_a_replication_package(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "package.zip"
    printed = io.StringIO()
    call_command(
        "export_dataset",
        str(world.study.pk),
        "--format",
        "replication",
        "--out",
        str(out),
        "--pseudonymise",
        stdout=printed,
    )
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
    assert any(n.endswith("huggingface/README.md") for n in names)
    assert out.with_name("package.zip.md").read_text().startswith("---\n")
    assert Pseudonym.objects.filter(study=world.study, kind="annotator").count() == 3
    with pytest.raises(CommandError, match="pseudonymise: only the Hugging Face folder"):
        call_command(
            "export_dataset",
            str(world.study.pk),
            "--format",
            "csv",
            "--out",
            str(tmp_path / "x.csv"),
            "--pseudonymise",
        )
    assert not (tmp_path / "x.csv").exists()
