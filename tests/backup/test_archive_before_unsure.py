"""An archive made before annotations carried "unsure" marks (and studies their routing, and
per-item agreement its unsure facets) restores: the fields it lacks take their defaults, which
is why the marks live in a column of the annotation rather than a table of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from annotator.adjudication.models import ItemAgreement
from annotator.backup.restore import restore_study
from annotator.studies.models import Annotation, Study
from annotator.studies.services import update_study
from tests.backup.archives import dump_to, labelled_world, rewrite

pytestmark = pytest.mark.django_db

# member → the fields this version added to its rows
ADDED = {
    "studies.annotation.jsonl": "unsure",
    "studies.study.jsonl": "route_unsure_to_adjudication",
    "adjudication.itemagreement.jsonl": "unsure_facets",
}


@pytest.fixture(scope="module")
def marked(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """A study's archive with unsure marks and the routing off, made in a transaction rolled
    back afterwards."""
    path = tmp_path_factory.mktemp("archives") / "marked.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        world = labelled_world()
        Annotation.objects.update(unsure=["symptom"])
        ItemAgreement.objects.update(unsure_facets=["symptom"])
        study = world.study
        update_study(
            study=study,
            name=study.name,
            guidelines="",
            overlap_k=study.overlap_k,
            route_unsure_to_adjudication=False,
        )
        dump_to(world, path)
        transaction.set_rollback(True)
    return path


def without_added_fields(files: dict[str, bytes]) -> None:
    for member, name in ADDED.items():
        rows = [json.loads(line) for line in files[member].decode().splitlines()]
        assert rows and all(name in row for row in rows)
        files[member] = "".join(
            json.dumps({k: v for k, v in r.items() if k != name}) + "\n" for r in rows
        ).encode()


def manifest_without_added_fields(data: dict[str, Any]) -> None:
    for table in data["tables"]:
        name = ADDED.get(table["member"])
        if name:
            table["fields"] = [f for f in table["fields"] if f["name"] != name]


def test_an_archive_with_the_marks_restores_them(marked):
    study = restore_study(marked).study
    assert study is not None and study.route_unsure_to_adjudication is False
    annotations = Annotation.objects.filter(assignment__item__study=study)
    assert {tuple(a.unsure) for a in annotations} == {("symptom",)}


def test_an_archive_from_before_the_marks_restores_with_the_defaults(marked, tmp_path):
    older = rewrite(
        marked,
        tmp_path / "older.zip",
        members=without_added_fields,
        manifest=manifest_without_added_fields,
        reseal=True,
    )
    study = restore_study(older).study
    assert study is not None
    assert Study.objects.get(pk=study.pk).route_unsure_to_adjudication is True
    annotations = Annotation.objects.filter(assignment__item__study=study)
    assert annotations.count() == 4 and {tuple(a.unsure) for a in annotations} == {()}
    agreements = ItemAgreement.objects.filter(item__study=study)
    assert agreements.count() == 2 and all(a.unsure_facets == [] for a in agreements)
