"""The prior-labels API: inspect a workbook, import round 1 of the TOSEM 2023 study through the
same services as the wizard's confirm step, and refuse (writing nothing) a mapping that leaves
values unmatched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.adjudication.models import Decision
from annotator.exports.prior import PROPOSE, import_prior_labels
from annotator.exports.spreadsheets import inspect_workbook
from annotator.studies.models import Annotation, AnnotationLabel, Item, Membership, Study
from annotator.studies.services import add_member
from tests.exports.test_prior_import import MAPPING, import_round1, seed_like, sheet_codebook
from tests.exports.test_spreadsheets import COLUMNS, FINAL_COLUMNS, RATERS, ROUND1, URL_656
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
INSPECT, IMPORT = "/api/prior-labels/inspect/", "/api/prior-labels/import/"


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='tests')[1]}")
    return client


@pytest.fixture
def owner(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="owner")


def post(client: APIClient, url: str, mapping: dict[str, Any] | None = None) -> Any:
    with ROUND1.open("rb") as workbook:
        data: dict[str, Any] = {"file": workbook}
        if mapping is not None:
            data["mapping"] = json.dumps(mapping)
        return client.post(url, data, format="multipart")


def round1_mapping(**target: Any) -> dict[str, Any]:
    return {
        "key_column": "Link",
        "sheet_to_annotator": RATERS,
        "column_to_facet": COLUMNS,
        "final_sheet": "Final",
        "final_column_to_facet": FINAL_COLUMNS,
        **target,
    }


def counts(study: Study) -> tuple[int, int, int, int]:
    return (
        Item.objects.filter(study=study).count(),
        Annotation.objects.filter(assignment__item__study=study).count(),
        AnnotationLabel.objects.filter(annotation__assignment__item__study=study).count(),
        Decision.objects.filter(item__study=study).count(),
    )


def written() -> tuple[int, ...]:
    return (
        Study.objects.count(),
        Item.objects.count(),
        Annotation.objects.count(),
        Decision.objects.count(),
        get_user_model().objects.count(),
    )


def test_inspect_lists_sheets_columns_rows_and_the_key_guess(owner):
    response = post(api(owner), INSPECT)
    assert response.status_code == 200, response.data
    sheets = {s["name"]: s for s in response.data["sheets"]}
    assert {"label1", "label2", "Final"} <= set(sheets)
    assert response.data["key_column"] == "Link"
    expected = inspect_workbook(ROUND1).sheet("label1")
    assert sheets["label1"]["rows"] == expected.rows  # non-blank rows, bad ones included
    assert "Leaf Category" in sheets["label1"]["columns"]
    assert "Leaf Category Final" in sheets["Final"]["columns"]


def test_inspect_refuses_a_file_that_is_not_a_workbook(owner):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = api(owner)
    bad = SimpleUploadedFile("labels.xlsx", b"not a zip")
    response = client.post(INSPECT, {"file": bad}, format="multipart")
    assert response.status_code == 400 and "file" in response.data
    csv = SimpleUploadedFile("labels.csv", b"a,b")
    assert client.post(INSPECT, {"file": csv}, format="multipart").status_code == 400


def test_round1_through_the_api_creates_the_same_round_as_the_wizard(owner):
    version = sheet_codebook(owner)
    response = post(
        api(owner),
        IMPORT,
        round1_mapping(study_name="TOSEM 2023", codebook_version=version.pk, duplicates="drop"),
    )
    assert response.status_code == 201, response.data
    study = Study.objects.get(pk=response.data["study"])
    assert study.name == "TOSEM 2023" and study.rounds.get().pk == response.data["round"]
    assert study.memberships.get(role=Membership.Role.OWNER).user == owner
    body = response.data
    assert (body["items"], body["annotations"], body["decisions"]) == (107, 214, 107)
    assert sorted(body["placeholders"]) == [
        f"s{study.pk}-rater-rater1",
        f"s{study.pk}-rater-rater2",
    ]
    # …the wizard's confirm step (tests/exports/test_views_and_api.py) calls this service with
    # the same mapping: the round it writes has the same rows.
    wizard = import_prior_labels(
        path=ROUND1,
        mapping=MAPPING,
        choices={},
        user=owner,
        study_name="Wizard",
        codebook_version=version,
    )
    assert counts(study) == counts(wizard.study) == (107, 214, body["labels"], 107)
    assert body["labels"] == wizard.labels
    # Every row left out is in the answer, as stored with the round.
    assert body["duplicates"] == "drop" and body["final_only"] == []
    assert body["skipped"] == wizard.record["skipped"] == study.rounds.get().prior_import["skipped"]
    assert {(s["sheet"], s["row"]) for s in body["skipped"]} == {
        ("label1", 20),
        ("label1", 21),
        ("label1", 50),
        ("label1", 51),
        ("label2", 16),
        ("label2", 49),
        ("label2", 50),
        ("Final", 16),
        ("Final", 101),
        ("Final", 49),
        ("Final", 50),
    }


def test_an_unmatched_value_is_named_and_nothing_is_written(owner):
    version = seed_like(owner)
    before = written()
    mapping = {
        "key_column": "Link",
        "sheet_to_annotator": RATERS,
        "column_to_facet": {"Leaf Category": "symptom"},
        "study_name": "S",
        "codebook_version": version.pk,
    }
    response = post(api(owner), IMPORT, mapping)
    assert response.status_code == 400
    assert "map, propose or ignore every unmatched value" in response.data["detail"]
    assert {"PENDING", "hang"} <= set(response.data["unmatched"]["symptom"])
    assert written() == before
    values = {
        "symptom": {v: "" for v in response.data["unmatched"]["symptom"]}
        | {"hang": "hang-timeout", "PENDING": PROPOSE}
    }
    done = post(api(owner), IMPORT, {**mapping, "values": values})
    assert done.status_code == 201, done.data
    # By default a repeated key keeps its first row: horovod#656 is an item, its later rows
    # are listed.
    assert done.data["proposals"] == 1 and done.data["items"] == 108
    assert done.data["duplicates"] == "first"
    repeated = [(s["sheet"], s["row"]) for s in done.data["skipped"] if s["key"] == URL_656]
    assert repeated == [("label1", 51), ("label2", 50)]
    left_out = done.data["left_out_by_facet"]["symptom"]
    pending = next(v for v in left_out["values"] if v["value"] == "PENDING")
    assert pending["mapped_to"] == "propose" and pending["cells"] > 0


def test_a_bad_mapping_or_target_is_refused(owner):
    version = sheet_codebook(owner)
    client = api(owner)
    no_target = post(client, IMPORT, round1_mapping())
    assert no_target.status_code == 400 and "mapping" in no_target.data
    no_key = post(client, IMPORT, {"sheet_to_annotator": RATERS})
    assert no_key.status_code == 400 and "key_column" in no_key.data["mapping"]
    any_row = post(
        client,
        IMPORT,
        round1_mapping(study_name="S", codebook_version=version.pk, duplicates="any"),
    )
    assert any_row.status_code == 400 and "duplicates" in any_row.data["mapping"]
    with ROUND1.open("rb") as workbook:
        no_mapping = client.post(IMPORT, {"file": workbook}, format="multipart")
    assert no_mapping.status_code == 400 and "mapping" in no_mapping.data
    assert not Study.objects.exists() and not Item.objects.exists()


@pytest.mark.parametrize("role", ["annotator", "adjudicator", "outsider"])
def test_only_an_owner_imports_into_an_existing_study(owner, role):
    version = sheet_codebook(owner)
    study = import_round1(owner, version).study
    person = UserFactory(username="someone")
    if role != "outsider":
        add_member(study=study, user=person, role=role)
    before = written()
    response = post(api(person), IMPORT, round1_mapping(study=study.pk))
    assert response.status_code == 404
    assert written() == before and study.rounds.count() == 1


def test_unauthenticated_calls_get_401_and_the_schema_lists_the_routes(client, owner):
    assert APIClient().post(INSPECT).status_code == 401
    assert APIClient().post(IMPORT).status_code == 401
    client.force_login(owner)
    schema = client.get("/api/schema/").content.decode()
    assert INSPECT in schema and IMPORT in schema
