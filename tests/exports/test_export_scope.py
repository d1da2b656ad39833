"""Decided items only: the final export without the rows of undecided items, through the
service, the command, the export page and the API, and the card saying which scope it holds."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.exports.models import ExportJob
from annotator.exports.services import export_dataset, run_export_job
from tests.exports.factories import exported_world


@pytest.fixture
def world(db, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    return exported_world()


def _export(world, **options) -> tuple[pd.DataFrame, str]:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    result = export_dataset(study=world.study, format="csv", out=out, **options)
    return pd.read_csv(io.BytesIO(out.getvalue())), result.card


def test_decided_only_leaves_no_padded_rows_and_the_card_says_so(world) -> None:  # type: ignore[no-untyped-def]
    everything, card_all = _export(world)
    decided, card = _export(world, scope="decided")
    assert len(everything) == 5 and everything["decision_source"].isna().sum() == 1
    assert len(decided) == 4 and decided["decision_source"].notna().all()
    assert "microsoft/DeepSpeed" not in set(decided["repository"])
    assert (
        "- Scope: decided items only: 4 of the 5 items passing the filters; the 1 without a "
        "decision are left out" in card
    )
    assert "the 1 without a decision yet are rows with empty final labels" in card_all
    assert "| items exported | 4 |" in card


def test_decided_only_applies_to_the_long_table_too(world) -> None:  # type: ignore[no-untyped-def]
    everything, _ = _export(world, table="long")
    decided, _ = _export(world, table="long", scope="decided")
    undecided_item = everything[everything["repository"] == "microsoft/DeepSpeed"]["item_id"]
    assert len(undecided_item) and not set(undecided_item) & set(decided["item_id"])
    assert len(decided) == len(everything) - len(undecided_item)


def test_an_unknown_scope_is_refused_by_name(world) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown scope 'some'"):
        export_dataset(study=world.study, format="csv", out=io.BytesIO(), scope="some")


def test_command_flag_exports_decided_items_only(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "final.csv"
    stdout = io.StringIO()
    call_command(
        "export_dataset",
        str(world.study.pk),
        "--format",
        "csv",
        "--out",
        str(out),
        "--decided-only",
        stdout=stdout,
    )
    assert stdout.getvalue().strip() == f"wrote 4 rows to {out}"
    assert pd.read_csv(out)["decision_source"].notna().all()
    assert "- Scope: decided items only" in (tmp_path / "final.csv.md").read_text()


def _finish(job: ExportJob) -> ExportJob:
    job.refresh_from_db()
    if job.status != "succeeded":
        run_export_job(job_id=job.pk)
        job.refresh_from_db()
    return job


def test_the_page_offers_decided_items_only(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    start = reverse("exports:start", args=[world.study.pk])
    assert "Decided items only" in client.get(start).content.decode()
    client.post(start, {"format": "csv", "table": "final", "decided_only": "on"})
    job = _finish(ExportJob.objects.get())
    assert (job.scope, job.rows_written) == ("decided", 4)
    assert "decided items only" in client.get(job.get_absolute_url()).content.decode()
    assert "- Scope: decided items only" in job.card


def test_the_api_takes_a_scope_and_names_a_bad_one(world) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.credentials(
        HTTP_AUTHORIZATION=f"Token {create_api_token(user=world.owner, name='tests')[1]}"
    )
    url = f"/api/studies/{world.study.pk}/exports/"
    bad = api.post(url, {"format": "csv", "scope": "undecided"}, format="json")
    assert bad.status_code == 400 and "scope" in bad.json()
    assert not ExportJob.objects.exists()
    created = api.post(url, {"format": "csv", "scope": "decided"}, format="json")
    assert created.status_code == 202 and created.json()["scope"] == "decided"
    job = _finish(ExportJob.objects.get(pk=created.json()["id"]))
    assert (job.rows_written, job.total_rows) == (4, 4)


def test_the_export_pages_write_filters_for_people(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    start = reverse("exports:start", args=[world.study.pk])
    client.post(start, {"format": "csv", "table": "final", "repository": "microsoft/DeepSpeed"})
    job = _finish(ExportJob.objects.get())
    assert (
        "Filters: repository = microsoft/DeepSpeed"
        in client.get(job.get_absolute_url()).content.decode()
    )
    assert "csv · final · repository = microsoft/DeepSpeed" in client.get(start).content.decode()
