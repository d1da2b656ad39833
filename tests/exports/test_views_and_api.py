"""Export, analysis and wizard pages, and the exports API: who may see them (owners and
adjudicators; annotators and strangers get 404), the progress partial, downloads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.exports.models import ExportJob
from annotator.studies.models import Item, Membership, Study
from annotator.studies.services import add_member
from tests.exports.factories import exported_world
from tests.exports.test_prior_import import sheet_codebook
from tests.exports.test_spreadsheets import ROUND1
from tests.factories import UserFactory


@pytest.fixture
def world(db, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    return exported_world()


def test_owner_exports_and_downloads_through_the_pages(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    start = reverse("exports:start", args=[world.study.pk])
    assert client.get(start).status_code == 200
    response = client.post(start, {"format": "csv", "table": "final", "source": "adjudicated"})
    job = ExportJob.objects.get()
    assert response["Location"] == job.get_absolute_url()
    job.refresh_from_db()  # jobs run in-process without a worker (CELERY_TASK_ALWAYS_EAGER)
    if job.status != "succeeded":
        from annotator.exports.services import run_export_job

        run_export_job(job_id=job.pk)
        job.refresh_from_db()
    partial = client.get(job.get_absolute_url(), headers={"HX-Request": "true"})
    assert partial.status_code == 286 and b'id="export-status"' in partial.content
    assert b"<html" not in partial.content
    download = client.get(reverse("exports:download", args=[job.pk]))
    body = b"".join(download.streaming_content)
    assert body.startswith(b"item_id,round,") and body.count(b"\r\n") == 3
    card = client.get(reverse("exports:card", args=[job.pk]))
    assert card.content.startswith(b"# Study: dataset (source = adjudicated)")


def test_a_bad_filter_is_shown_on_the_form(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    response = client.post(
        reverse("exports:start", args=[world.study.pk]),
        {"format": "csv", "table": "final", "repository": "no/such"},
    )
    assert response.status_code == 400 and b"no repository" in response.content
    assert not ExportJob.objects.exists()


def test_annotators_and_strangers_get_404_everywhere(client, world) -> None:  # type: ignore[no-untyped-def]
    job = ExportJob.objects.create(study=world.study, format="csv")
    urls = [
        reverse("exports:start", args=[world.study.pk]),
        job.get_absolute_url(),
        reverse("exports:download", args=[job.pk]),
        reverse("exports:card", args=[job.pk]),
        reverse("exports:analysis", args=[world.study.pk]),
        reverse("exports:analysis_issues", args=[world.study.pk]),
    ]
    for person in (world.annotators[0], UserFactory(username="stranger")):
        client.force_login(person)
        assert [client.get(url).status_code for url in urls] == [404] * len(urls)
        api = APIClient()
        api.credentials(
            HTTP_AUTHORIZATION=f"Token {create_api_token(user=person, name='tests')[1]}"
        )
        for url in (
            f"/api/studies/{world.study.pk}/exports/",
            f"/api/exports/{job.pk}/",
            f"/api/exports/{job.pk}/download/",
            f"/api/studies/{world.study.pk}/analysis/",
        ):
            assert api.get(url).status_code == 404, url


def test_an_unfinished_export_has_nothing_to_download(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    job = ExportJob.objects.create(study=world.study, format="csv", status="failed", error="x")
    assert client.get(reverse("exports:download", args=[job.pk])).status_code == 404
    page = client.get(job.get_absolute_url())
    assert b"left no file" in page.content and b"Download" not in page.content


def test_adjudicator_sees_the_analysis_with_links_csv_and_flow(client, world) -> None:  # type: ignore[no-untyped-def]
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    client.force_login(adjudicator)
    url = reverse("exports:analysis", args=[world.study.pk])
    page = client.get(url).content.decode()
    assert '<svg class="flow"' in page
    assert not re.findall(r"<script(?![^>]*\bsrc=)", page)  # no inline script (CSP)
    assert 'id="cross-symptom-fix"' in page
    issues = reverse("exports:analysis_issues", args=[world.study.pk])
    assert f'href="{issues}?label=symptom%3Afailure' in page
    csv = client.get(url, {"download": "cross-symptom-fix"})
    assert csv["Content-Type"].startswith("text/csv")
    assert csv.content.decode().splitlines() == [  # leaf level by default
        "symptom,version,config",
        "hang,0,1",
        "oom,1,1",
        "crash,0,0",
        "slow,1,0",
        "other,0,0",
    ]
    top = client.get(url, {"download": "cross-symptom-fix", "level": "1", "format": "csv"})
    assert top.content.decode().splitlines() == [
        "symptom,version,config",
        "failure,1,2",
        "slow,1,0",
        "other,0,0",
    ]
    listed = client.get(issues, {"label": ["symptom:failure", "fix:config"]})
    assert listed.content.decode().count("data-row-link") == 2


def test_api_starts_reads_and_downloads_an_export(world) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.credentials(
        HTTP_AUTHORIZATION=f"Token {create_api_token(user=world.owner, name='tests')[1]}"
    )
    created = api.post(
        f"/api/studies/{world.study.pk}/exports/",
        {"format": "jsonl", "screening": "relevant"},
        format="json",
    )
    assert created.status_code == 202, created.content
    job = ExportJob.objects.get(pk=created.json()["id"])
    if job.status != "succeeded":
        from annotator.exports.services import run_export_job

        run_export_job(job_id=job.pk)
    detail = api.get(f"/api/exports/{job.pk}/").json()
    assert detail["status"] == "succeeded" and detail["rows_written"] == 3
    body = b"".join(api.get(detail["download_url"]).streaming_content)
    assert body.count(b"\n") == 3
    bad = api.post(f"/api/studies/{world.study.pk}/exports/", {"format": "docx"}, format="json")
    assert bad.status_code == 400
    analysis = api.get(f"/api/studies/{world.study.pk}/analysis/").json()
    assert [t["id"] for t in analysis["tables"]][:1] == ["share-symptom"]
    assert analysis["levels"] == {"symptom": "leaf"} and analysis["decided"] == 4


def test_the_wizard_imports_round1_and_writes_nothing_before_confirming(
    client, db, settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    owner = UserFactory(username="owner")
    version = sheet_codebook(owner)
    client.force_login(owner)
    with ROUND1.open("rb") as workbook:
        response = client.post(
            reverse("exports:prior_upload"),
            {"file": workbook, "study_name": "TOSEM 2023", "codebook_version": version.pk},
        )
    assert response.status_code == 302, response.content.decode()[-2000:]
    map_url = response["Location"]
    form = client.get(map_url).context["form"]
    data = {name: field.initial or "" for name, field in form.fields.items()}
    # The guesses: key column Link, label1/label2 annotators, Final the final sheet; the
    # facet columns are named after facet keys only in part, so map them as the test does.
    for i, column in enumerate(form.columns):
        data[f"column_{i}"] = {
            "Issue Type": "screening",
            "Distributed-specified": "distributed",
            "Distributed-specified Final": "distributed",
            "Stage": "stage",
            "Stage Final": "stage",
            "Leaf Category": "symptom",
            "Leaf Category Final": "symptom",
            "Fix Pattern": "fix-pattern",
            "Fix Pattern Final": "fix-pattern",
        }.get(column, "")
    assert data["duplicates"] == "first"  # the default; the sheet codebook reads as "drop" does
    data["duplicates"] = "drop"
    response = client.post(map_url, data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    review = client.get(response["Location"])
    assert review.status_code == 200 and b"Confirm and import" in review.content
    # The rows left out, each with sheet, row, key and why, before anything is written.
    skipped = review.context["skipped"]
    assert len(skipped) == 11 and b"11 rows left out" in review.content
    assert "every row dropped (duplicates: drop)" in review.content.decode()
    assert not Study.objects.exists() and not Item.objects.exists()
    done = client.post(response["Location"], {})
    study = Study.objects.get(name="TOSEM 2023")
    assert done["Location"] == study.get_absolute_url()
    assert Item.objects.filter(study=study).count() == 107
    page = client.get(study.get_absolute_url()).content.decode()
    assert "11 rows left out" in page and "closed: imported from earlier labels" in page
    assert "https://github.com/horovod/horovod/issues/656" in page
    assert not list((tmp_path / "prior-labels").iterdir())  # the upload is gone
