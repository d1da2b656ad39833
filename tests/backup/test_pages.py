"""The backup pages: who may start, see and download a backup (owners) and restore one
(staff); an upload is checked and shown before anything is written."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.backup.models import BackupJob
from annotator.backup.services import UPLOADS, run_backup_job
from annotator.studies.models import Membership, Study
from tests.backup.archives import dump_to, labelled_world, rewrite
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def uploads() -> list[str]:
    return default_storage.listdir(UPLOADS)[1] if default_storage.exists(UPLOADS) else []


def test_only_an_owner_may_start_a_backup(client):
    world = labelled_world()
    url = reverse("studies:backup", args=[world.study.pk])
    for person in [*world.annotators, UserFactory(username="outsider")]:
        client.force_login(person)
        assert client.post(url).status_code == 404
    assert not BackupJob.objects.exists()
    client.force_login(world.owner)
    assert client.get(url).status_code == 405
    response = client.post(url)
    job = BackupJob.objects.get()
    assert response.status_code == 302 and response["Location"] == job.get_absolute_url()
    assert (job.kind, job.status, job.study_id) == ("dump", "queued", world.study.pk)


def test_the_owner_sees_the_backup_and_downloads_it_and_no_one_else_can(client):
    world = labelled_world()
    job = BackupJob.objects.create(kind="dump", study=world.study, study_name="Study")
    run_backup_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    client.force_login(world.annotators[0])
    for name in ("backup:job", "backup:download"):
        assert client.get(reverse(name, args=[job.pk])).status_code == 404
    client.force_login(world.owner)
    page = client.get(reverse("backup:job", args=[job.pk]))
    assert b"Download study-" in page.content
    partial = client.get(reverse("backup:job", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert partial.status_code == 286 and b"<h1>" not in partial.content  # htmx stops polling
    download = client.get(reverse("backup:download", args=[job.pk]))
    assert download["Content-Type"] == "application/zip"
    assert b"".join(download.streaming_content)[:2] == b"PK"
    study_page = client.get(world.study.get_absolute_url())
    assert b'form="backup-form">Download backup</button>' in study_page.content


def test_restore_is_for_staff_only(client):
    world = labelled_world()
    client.force_login(world.owner)
    assert client.get(reverse("studies:restore")).status_code == 404
    assert b"Restore from backup" not in client.get(reverse("studies:list")).content
    client.force_login(UserFactory(username="admin", is_staff=True))
    assert client.get(reverse("studies:restore")).status_code == 200


def test_a_bad_upload_is_refused_on_the_page_and_not_kept(client):
    client.force_login(UserFactory(username="admin", is_staff=True))
    bad = SimpleUploadedFile("export.zip", b"number,title\n1,x\n", "application/zip")
    response = client.post(reverse("studies:restore"), {"archive": bad})
    assert response.status_code == 400
    assert b"export.zip is not a zip archive" in response.content
    assert b"Nothing was kept." in response.content
    assert uploads() == []


def test_staff_see_what_an_archive_holds_confirm_and_get_the_study(client, tmp_path):
    world = labelled_world()
    archive = dump_to(world, tmp_path / "study.zip")
    staff = UserFactory(username="admin", is_staff=True)
    client.force_login(staff)
    upload = SimpleUploadedFile("study.zip", archive.read_bytes(), "application/zip")
    response = client.post(reverse("studies:restore"), {"archive": upload})
    assert response.status_code == 302
    confirm = client.get(response["Location"])
    text = confirm.content.decode()
    assert "Restore “Study”?" in text and "data-restored-as>Study (restored " in text
    assert "<code>studies.annotationlabel</code></td><td>12</td>" in text
    assert "3 with an account here" in text and "0 new" in text
    assert not Study.objects.exclude(pk=world.study.pk).exists()  # nothing written yet

    response = client.post(response["Location"], {"prefer_existing_issues": "on"})
    job = BackupJob.objects.get(kind="restore")
    assert response["Location"] == job.get_absolute_url() and job.prefer_existing_issues
    run_backup_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert Membership.objects.get(study=job.study, user=staff).role == "owner"
    assert uploads() == []  # the uploaded copy is gone once restored
    page = client.get(job.get_absolute_url()).content.decode()
    assert f"Open {job.study.name} →" in page
    assert "reused (auth.user 3, issues.repository 1, issues.issue 2," in page


def test_a_restore_job_whose_archive_fails_its_check_fails_with_the_reason_and_writes_nothing(
    client, tmp_path
):
    world = labelled_world()
    archive = dump_to(world, tmp_path / "study.zip")
    client.force_login(UserFactory(username="admin", is_staff=True))
    upload = SimpleUploadedFile("study.zip", archive.read_bytes(), "application/zip")
    confirm = client.post(reverse("studies:restore"), {"archive": upload})["Location"]
    client.post(confirm)
    job = BackupJob.objects.get(kind="restore")
    tampered = rewrite(
        archive,
        tmp_path / "tampered.zip",
        members=lambda files: files.update({"studies.item.jsonl": b"{}\n"}),
    )
    with default_storage.open(job.file.name, "wb") as stored:  # changed on disk meanwhile
        stored.write(tampered.read_bytes())
    run_backup_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "studies.item.jsonl" in job.error
    assert Study.objects.count() == 1 and uploads() == []
    page = client.get(job.get_absolute_url()).content.decode()
    assert "Nothing was restored: studies.item.jsonl" in page
