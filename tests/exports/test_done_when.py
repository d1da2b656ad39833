"""Issue 22's done-when, end to end through the API and a real Celery worker: a team's Label
Studio export comes in as round 1 with a mapping, its agreement is computed, and a
pseudonymised replication package comes out that loads with `load_dataset`, whose codebook is
a valid REFI-QDA .qdc, and that names none of the team's annotators."""

from __future__ import annotations

import io
import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.agreement.models import AgreementRun
from annotator.exports.models import ExportJob, Pseudonym
from annotator.studies.models import AnnotationLabel, Study
from taxonomy_app.refi_qda.markup import schema
from tests.exports.test_huggingface import load
from tests.exports.test_labelstudio import FACETS, tasks, write
from tests.factories import UserFactory
from tests.taxonomy_app.factories import published_small

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
PEOPLE = {"7": "Alice Liddell", "8": "bob.smith@example.org"}  # Label Studio users → raters


def wait(url: str, client: APIClient, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(url).json()
        if body["status"] in ("succeeded", "failed"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"{url} still running after {timeout} s")


def test_label_studio_to_a_pseudonymised_replication_package(
    celery_worker_process, tmp_path: Path
) -> None:
    owner = UserFactory(username="team-lead")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=owner, name='t')[1]}")
    version = published_small()
    export = write(tmp_path, tasks())  # the Label Studio export the tests write

    # Round 1 from the Label Studio export, with the mapping the review step takes.
    spec = {
        "data_key": "html_url",
        "column_to_facet": FACETS,
        "sheet_to_annotator": PEOPLE,
        "study_name": "Migrated from Label Studio",
        "codebook_version": version.pk,
    }
    with export.open("rb") as file:
        done = client.post(
            "/api/prior-labels/import/",
            {"file": file, "format": "labelstudio", "mapping": json.dumps(spec)},
            format="multipart",
        )
    assert done.status_code == 201, done.content
    study = Study.objects.get(name="Migrated from Label Studio")
    assert study.rounds.get().number == 1

    # Its agreement, computed by the worker.
    started = client.post(f"/api/studies/{study.pk}/agreement-runs/", {}, format="json")
    assert started.status_code == 202, started.content
    run = wait(f"/api/agreement-runs/{started.json()['id']}/", client)
    assert run["status"] == "succeeded", run
    stored = AgreementRun.objects.get(pk=run["id"])
    assert stored.result and stored.result["facets"]

    # The pseudonymised replication package, written by the worker.
    started = client.post(
        f"/api/studies/{study.pk}/exports/",
        {"format": "replication", "pseudonymise": True},
        format="json",
    )
    assert started.status_code == 202, started.content
    job = wait(f"/api/exports/{started.json()['id']}/", client)
    assert job["status"] == "succeeded", job
    assert job["rows_written"] == job["total_rows"] == ExportJob.objects.get().total_rows
    download = client.get(job["download_url"])
    folder = tmp_path / "package"
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        archive.extractall(folder)
    (root,) = list(folder.iterdir())

    # load_dataset reads its Hugging Face folder, with every imported item.
    loaded = load(root / "huggingface", tmp_path)
    assert len(loaded["rows"]) == study.items.count() == 3
    # Its codebook is a valid REFI-QDA codebook.
    (qdc,) = list((root / "codebook").glob("*.qdc"))
    assert schema().validate(etree.parse(str(qdc))), schema().error_log
    # The agreement run travels with its stored result.
    record = json.loads((root / "agreement" / f"run-{stored.pk}.json").read_text())
    assert record["result"]["facets"][0]["key"] == stored.result["facets"][0]["key"]
    assert record["ratings_tables"]["same_labels_as_the_run"] is True
    # Nobody of the team is named: raters' names, their accounts, the owner.
    codes = dict(Pseudonym.objects.filter(study=study).values_list("name", "code"))
    raters = [n for n in codes if n.startswith(f"s{study.pk}-rater-")]
    assert len(raters) == 2
    for path in root.rglob("*"):
        if path.is_file() and path.suffix != ".parquet":
            text = path.read_text().lower()
            for name in [*PEOPLE.values(), *raters, "team-lead", "alice", "liddell", "bob.smith"]:
                assert name.lower() not in text, (name, path.name)
    long = (root / "data" / "long.csv").read_text()
    labelled = AnnotationLabel.objects.filter(annotation__assignment__item__study=study)
    assert long.count(codes[raters[0]]) + long.count(codes[raters[1]]) >= labelled.count()
    rounds = json.loads((root / "rounds.json").read_text())
    assert set(rounds[0]["prior_import"]["sheets"]) == {codes[r] for r in raters}
