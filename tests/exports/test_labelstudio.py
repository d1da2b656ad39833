"""Label Studio JSON exports as prior rounds (label by label, refusals that write nothing, the
wizard, the command, the API) and the Label Studio export's round trip."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.adjudication.models import Decision, DecisionLabel
from annotator.exports.prior import PriorImportError, PriorMapping, import_prior_labels
from annotator.exports.services import export_dataset
from annotator.exports.spreadsheets import SpreadsheetError
from annotator.issues.models import Issue
from annotator.studies.models import Annotation, AnnotationLabel, Item, Study
from tests.exports.factories import exported_world
from tests.factories import UserFactory
from tests.studies.factories import make_world
from tests.taxonomy_app.factories import published_small

pytestmark = pytest.mark.django_db
URL = "https://github.com/hpcaitech/ColossalAI/issues/{}"
FACETS = {"screening": "screening", "symptom": "symptom", "fix": "fix"}


def choices(name: str, *values: str) -> dict[str, Any]:
    return {
        "from_name": name,
        "to_name": "text",
        "type": "choices",
        "value": {"choices": list(values)},
    }


def annotation(pk: int, who: Any, result: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": pk,
        "completed_by": who,
        "result": result,
        "was_cancelled": False,
        "lead_time": 10.0,
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-01-01T00:00:00Z",
        **extra,
    }


def tasks() -> list[dict[str, Any]]:
    hang = choices("symptom", "Hang")
    return [
        {
            "id": 11,
            "data": {"html_url": URL.format(1), "text": "NCCL hangs"},
            "annotations": [
                annotation(1, 7, [choices("screening", "Relevant"), hang], lead_time=12.4),
                annotation(
                    2,
                    {"id": 8, "email": "b@example.org"},
                    [
                        choices("screening", "Relevant"),
                        {
                            "from_name": "symptom",
                            "to_name": "text",
                            "type": "taxonomy",
                            "value": {"taxonomy": [["Program failure", "Out of memory"]]},
                        },
                    ],
                    lead_time=30,
                ),
            ],
            "predictions": [{"model_version": "m", "result": [choices("symptom", "Crash")]}],
            "total_annotations": 2,
            "cancelled_annotations": 0,
        },
        {
            "id": 12,
            "data": {"html_url": URL.format(2)},
            "annotations": [
                annotation(3, 7, [choices("screening", "Not a bug")]),
                annotation(4, 8, [], was_cancelled=True),
            ],
            "predictions": [],
            "total_annotations": 1,
            "cancelled_annotations": 1,
        },
        {"id": 13, "data": {"html_url": URL.format(3)}, "annotations": [], "predictions": []},
        {
            "id": 14,
            "data": {"html_url": URL.format(4)},
            "annotations": [
                annotation(
                    5,
                    8,
                    [
                        choices("screening", "Relevant"),
                        choices("symptom", "Slow"),
                        choices("fix", "Fix version", "Fix config"),
                    ],
                )
            ],
        },
    ]


def write(tmp_path: Path, data: Any, name: str = "export.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def mapping(**changes: Any) -> PriorMapping:
    base: dict[str, Any] = {
        "key_column": "html_url",
        "sheet_to_annotator": {},
        "column_to_facet": FACETS,
        "format": "labelstudio",
        "data_key": "html_url",
    }
    return PriorMapping(**(base | changes))


def run(path: Path, prior: PriorMapping | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    return import_prior_labels(
        path=path,
        mapping=prior or mapping(),
        choices=kw.get("choices", {}),
        user=UserFactory(username="owner"),
        study_name="LS",
        codebook_version=kw.get("version") or published_small(),
    )


def labels_of(study: Study) -> dict[tuple[str, int], dict[str, list[str]]]:
    out: dict[tuple[str, int], dict[str, list[str]]] = {}
    rows = AnnotationLabel.objects.filter(annotation__assignment__item__study=study).values_list(
        "annotation__assignment__annotator__first_name",
        "annotation__assignment__item__issue__number",
        "facet__key",
        "category__code",
    )
    for rater, number, facet, code in rows:
        name = rater.split("-rater-")[1]
        out.setdefault((name, number), {}).setdefault(facet, []).append(code)
    return {k: {f: sorted(c) for f, c in v.items()} for k, v in out.items()}


def nothing_written() -> bool:
    return not any(m.objects.exists() for m in (Study, Item, Annotation, Decision, Issue))


def test_a_label_studio_export_imports_label_by_label(tmp_path: Path) -> None:
    result = run(write(tmp_path, tasks()))
    assert labels_of(result.study) == {
        ("7", 1): {"screening": ["relevant"], "symptom": ["hang"]},
        ("8", 1): {"screening": ["relevant"], "symptom": ["oom"]},  # the taxonomy's leaf
        ("7", 2): {"screening": ["not-a-bug"]},
        ("8", 4): {"screening": ["relevant"], "symptom": ["slow"], "fix": ["config", "version"]},
    }
    assert result.items == 3 and result.annotations == 4  # task 13 skipped: no item
    seconds = Annotation.objects.filter(assignment__item__study=result.study)
    assert sorted(seconds.values_list("seconds_spent", flat=True)) == [10, 10, 12, 30]
    record = result.round.prior_import
    assert record["format"] == "labelstudio" and record["data_key"] == "html_url"
    assert record["not_labels"] == {"cancelled_annotations": 1, "skipped_tasks": 1}
    reasons = {(s["row"], s["reason"]) for s in record["skipped"]}
    assert (13, "no annotations (a skipped or unlabelled task)") in reasons
    assert (12, "annotation 4 by 8 was cancelled (skipped)") in reasons
    assert result.round.closed_at is not None


def test_predictions_can_be_read_as_a_rater_and_annotators_renamed(tmp_path: Path) -> None:
    prior = mapping(predictions="rater", sheet_to_annotator={"7": "ann", "8": "", "m": "unused"})
    result = run(write(tmp_path, tasks()), prior)
    found = labels_of(result.study)
    assert found[("m", 1)] == {"symptom": ["crash"]}
    assert set(found) == {("ann", 1), ("ann", 2), ("m", 1)}


@pytest.mark.parametrize(
    ("data", "prior", "message"),
    [
        ("[{not json", {}, "export.json is not JSON (line 1, column 3"),
        (
            [{"id": 5, "data": {"text": "x"}, "annotations": []}],
            {},
            "task 5: no field 'html_url' (the data_key naming the issue)",
        ),
        (
            [
                {
                    "id": 6,
                    "data": {"html_url": URL.format(1)},
                    "annotations": [annotation(9, 7, [choices("severity", "High")])],
                }
            ],
            {},
            "task 6, annotation 9: field 'from_name': 'severity' is mapped to no facet",
        ),
        (
            [
                {
                    "id": 7,
                    "data": {"html_url": URL.format(1)},
                    "annotations": [annotation(9, 7, [choices("symptom", "Gremlins")])],
                }
            ],
            {},
            "map, propose or ignore every unmatched value: symptom: 'Gremlins' (first in task 7, "
            "from_name 'symptom')",
        ),
        (
            tasks(),
            {"sheet_to_annotator": {"7": "ann"}},
            "task 11, annotation 2: field 'completed_by': '8' is not in the mapping's",
        ),
    ],
)
def test_bad_files_name_the_task_and_field_and_write_nothing(
    tmp_path: Path, data: Any, prior: dict[str, Any], message: str
) -> None:
    version = published_small()
    with pytest.raises((SpreadsheetError, PriorImportError)) as error:
        run(write(tmp_path, data), mapping(**prior), version=version)
    assert message in str(error.value)
    assert nothing_written()


def test_the_wizard_imports_a_label_studio_export(client, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = UserFactory(username="wizard-owner")
    client.force_login(owner)
    version = published_small()
    path = write(tmp_path, tasks())
    with path.open("rb") as file:
        response = client.post(
            reverse("exports:prior_upload"),
            {
                "format": "labelstudio",
                "file": file,
                "study_name": "W",
                "codebook_version": version.pk,
            },
        )
    assert response.status_code == 302, response.content.decode()[-2000:]
    page = client.get(response["Location"])
    form = page.context["form"]
    assert form.fields["data_key"].initial == "html_url"
    data = {name: field.initial or "" for name, field in form.fields.items()}
    data |= {f"source_{i}": FACETS[s] for i, s in enumerate(form.sources)}
    review = client.post(response["Location"], data)
    assert review.status_code == 302, review.content.decode()[-2000:]
    shown = client.get(review["Location"])
    assert b"was cancelled" in shown.content and not Study.objects.exists()
    done = client.post(review["Location"], {})
    study = Study.objects.get(name="W")
    assert done["Location"] == study.get_absolute_url()
    assert len(labels_of(study)) == 4


def test_the_wizard_refuses_a_label_studio_file_that_is_no_json(client, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(UserFactory(username="o"))
    path = write(tmp_path, "hello", name="export.xlsx")
    with path.open("rb") as file:
        response = client.post(
            reverse("exports:prior_upload"),
            {
                "format": "labelstudio",
                "file": file,
                "study_name": "W",
                "codebook_version": published_small().pk,
            },
        )
    assert response.status_code == 400
    assert "expected a Label Studio JSON export (.json)" in response.content.decode()


def test_the_command_imports_and_refuses_writing_nothing(tmp_path: Path) -> None:
    world = make_world(items=1)
    before = Item.objects.count()
    path = write(tmp_path, tasks())
    spec = tmp_path / "mapping.json"
    spec.write_text(json.dumps({"data_key": "html_url", "column_to_facet": FACETS}))
    out = io.StringIO()
    call_command(
        "import_prior_labels",
        str(world.study.pk),
        str(path),
        "--format",
        "labelstudio",
        "--mapping",
        str(spec),
        stdout=out,
    )
    assert "items 3, annotations 4" in out.getvalue()
    assert "cancelled_annotations 1, skipped_tasks 1" in out.getvalue()
    spec.write_text(json.dumps({"data_key": "url", "column_to_facet": FACETS}))
    count = Item.objects.count()
    with pytest.raises(CommandError, match="task 11: no field 'url'"):
        call_command(
            "import_prior_labels",
            str(world.study.pk),
            str(path),
            "--format",
            "labelstudio",
            "--mapping",
            str(spec),
        )
    assert Item.objects.count() == count > before


def test_the_api_imports_a_label_studio_export(tmp_path: Path) -> None:
    owner = UserFactory(username="api-owner")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=owner, name='t')[1]}")
    version = published_small()
    path = write(tmp_path, tasks())
    with path.open("rb") as file:
        inspect = client.post(
            "/api/prior-labels/inspect/",
            {"file": file, "format": "labelstudio"},
            format="multipart",
        )
    assert inspect.status_code == 200, inspect.content
    assert inspect.data["key_column"] == "html_url"
    assert sorted(inspect.data["label_sources"]) == ["fix", "screening", "symptom"]
    spec = {
        "data_key": "html_url",
        "column_to_facet": FACETS,
        "study_name": "A",
        "codebook_version": version.pk,
    }
    with path.open("rb") as file:
        done = client.post(
            "/api/prior-labels/import/",
            {"file": file, "format": "labelstudio", "mapping": json.dumps(spec)},
            format="multipart",
        )
    assert done.status_code == 201, done.content
    assert (done.data["items"], done.data["annotations"]) == (3, 4)
    with path.open("rb") as file:
        bad = client.post(
            "/api/prior-labels/import/",
            {"file": file, "format": "labelstudio", "mapping": json.dumps(spec | {"data_key": ""})},
            format="multipart",
        )
    assert bad.status_code == 400 and "data_key" in bad.data["mapping"]


def test_the_label_studio_export_round_trips(tmp_path: Path) -> None:
    world = exported_world()
    out = io.BytesIO()
    export_dataset(study=world.study, format="labelstudio", out=out)
    exported = json.loads(out.getvalue())
    assert len(exported) == 5 and {"title", "body", "html_url", "repository", "number"} <= set(
        exported[0]["data"]
    )
    region = exported[0]["predictions"][0]["result"][0]
    assert region["to_name"] == "text" and region["type"] == "choices"
    assert exported[-1]["predictions"] == []  # undecided
    path = write(tmp_path, exported)
    prior = mapping(predictions="rater", key_column="html_url")
    result = import_prior_labels(
        path=path,
        mapping=prior,
        choices={},
        user=world.owner,
        study_name="Again",
        codebook_version=world.version,
    )
    expected: dict[int, dict[str, list[str]]] = {}
    for number, facet, code in DecisionLabel.objects.filter(
        decision__item__study=world.study
    ).values_list("decision__item__issue__number", "facet__key", "category__code"):
        expected.setdefault(number, {}).setdefault(facet, []).append(code)
    got = {number: labels for (_, number), labels in labels_of(result.study).items()}
    assert got == {n: {f: sorted(c) for f, c in v.items()} for n, v in expected.items()}
