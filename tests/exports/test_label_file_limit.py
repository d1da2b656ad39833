"""Label Studio and doccano prior-label files have their own size limit, larger than a
workbook's (settings.LABEL_FILE_MAX_BYTES), on the wizard and the API, while streaming too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from tests.exports.test_labelstudio import tasks
from tests.factories import UserFactory
from tests.taxonomy_app.factories import published_small

pytestmark = pytest.mark.django_db
KB = 1024


def padded_tasks(size: int) -> bytes:
    """A real-shaped Label Studio export of about `size` bytes (long issue text in `data`)."""
    data = tasks()
    base = len(json.dumps(data).encode())
    data[0]["data"]["text"] = "NCCL hangs. " * max(0, (size - base) // 12)
    return json.dumps(data).encode()


def doccano_lines(size: int) -> bytes:
    line = {"id": 1, "text": "x", "html_url": "https://github.com/o/r/issues/1", "label": ["a"]}
    one = (json.dumps(line) + "\n").encode()
    return one * (size // len(one) + 1)


@pytest.fixture
def limits(settings, tmp_path: Path) -> Any:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.WORKBOOK_MAX_BYTES = 64 * KB
    settings.LABEL_FILE_MAX_BYTES = 512 * KB
    return settings


def upload(client: Any, tmp_path: Path, name: str, content: bytes) -> Any:
    path = tmp_path / name
    path.write_bytes(content)
    with path.open("rb") as file:
        return client.post(
            reverse("exports:prior_upload"),
            {
                "format": "labelstudio",
                "file": file,
                "study_name": "Big",
                "codebook_version": published_small().pk,
            },
        )


def stored(settings: Any) -> list[Path]:
    return [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]


def test_a_label_studio_file_past_the_workbook_limit_is_taken(client, limits, tmp_path):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(username="big-owner"))
    content = padded_tasks(300 * KB)
    assert 64 * KB < len(content) < 512 * KB
    response = upload(client, tmp_path, "export.json", content)
    assert response.status_code == 302, response.content.decode()[-1500:]
    assert "/map/" in response["Location"]
    assert len(stored(limits)) == 1


def test_a_label_studio_file_past_its_own_limit_is_refused_naming_it(client, limits, tmp_path):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(username="big-owner"))
    response = upload(client, tmp_path, "export.json", padded_tasks(600 * KB))
    assert response.status_code == 400
    assert "export.json is larger than the limit of 512 KB" in response.content.decode()
    assert stored(limits) == []


def test_a_workbook_keeps_the_workbook_limit_on_the_same_route(client, limits, tmp_path):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(username="big-owner"))
    path = tmp_path / "labels.xlsx"
    path.write_bytes(b"PK\x03\x04" + b"\0" * (100 * KB))
    with path.open("rb") as file:
        response = client.post(
            reverse("exports:prior_upload"),
            {"format": "xlsx", "file": file, "study_name": "W"},
        )
    assert response.status_code == 400
    assert "labels.xlsx is larger than the limit of 64 KB" in response.content.decode()


def test_the_api_takes_a_doccano_file_up_to_its_own_limit(limits) -> None:  # type: ignore[no-untyped-def]
    owner = UserFactory(username="api-big")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=owner, name='t')[1]}")
    from django.core.files.uploadedfile import SimpleUploadedFile

    ok = SimpleUploadedFile("labels.jsonl", doccano_lines(200 * KB), "application/jsonl")
    taken = client.post(
        "/api/prior-labels/inspect/", {"file": ok, "format": "doccano"}, format="multipart"
    )
    assert taken.status_code == 200, taken.content
    big = SimpleUploadedFile("labels.jsonl", doccano_lines(600 * KB), "application/jsonl")
    refused = client.post(
        "/api/prior-labels/inspect/", {"file": big, "format": "doccano"}, format="multipart"
    )
    assert refused.status_code == 400
    assert "labels.jsonl is larger than the limit of 512 KB" in json.dumps(refused.data)
