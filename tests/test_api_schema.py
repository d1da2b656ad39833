"""The OpenAPI document is generated once per process and served from that copy after."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView

from annotator.api_schema import forget_schema, render_ahead

FORMATS = {
    "yaml": "application/vnd.oai.openapi",
    "json": "application/vnd.oai.openapi+json",
}


@pytest.fixture
def generations(monkeypatch):  # type: ignore[no-untyped-def]
    """How many times the document was generated (drf-spectacular's generator, counted)."""
    forget_schema()
    calls = []
    generate = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    yield calls
    forget_schema()


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", FORMATS)
def test_schema_is_the_document_drf_spectacular_generates(client, rf, fmt):
    forget_schema()
    served = client.get("/api/schema/", HTTP_ACCEPT=FORMATS[fmt])
    again = client.get("/api/schema/", HTTP_ACCEPT=FORMATS[fmt])

    fresh = SpectacularAPIView.as_view()(rf.get("/api/schema/", HTTP_ACCEPT=FORMATS[fmt]))
    fresh.render()
    assert served.status_code == again.status_code == 200
    assert served.content == again.content == fresh.content
    assert served["Content-Type"] == again["Content-Type"] == fresh["Content-Type"]
    assert served["Content-Disposition"] == fresh["Content-Disposition"]


@pytest.mark.django_db
def test_schema_is_generated_once_per_format(client, generations):
    for _ in range(3):
        assert client.get("/api/schema/", HTTP_ACCEPT=FORMATS["yaml"]).status_code == 200
    assert len(generations) == 1

    json_doc = client.get("/api/schema/", {"format": "json"})
    assert json_doc.status_code == 200
    assert "/api/studies/{study_id}/queue/" in json_doc.json()["paths"]
    assert client.get("/api/schema/", {"format": "json"}).content == json_doc.content
    assert len(generations) == 2


@pytest.mark.django_db
def test_schema_head_answers_like_get(client):
    forget_schema()
    get = client.get("/api/schema/")
    head = client.head("/api/schema/")
    assert head.status_code == 200
    assert head["Content-Type"] == get["Content-Type"]


@pytest.mark.django_db
def test_schema_rendered_ahead_serves_the_first_requests(client, generations):
    """What the server renders as a process starts is what the first requests get: the default
    (a client naming no type, as a browser or curl) and Swagger UI's `?format=json`."""
    render_ahead()
    assert len(generations) == 2

    yaml_doc = client.get("/api/schema/")
    json_doc = client.get("/api/schema/", {"format": "json"})
    assert yaml_doc.status_code == json_doc.status_code == 200
    assert yaml_doc["Content-Type"].startswith(FORMATS["yaml"])
    assert "/api/studies/{study_id}/queue/" in json_doc.json()["paths"]
    assert len(generations) == 2


@pytest.mark.django_db
def test_the_lists_that_read_on_from_their_last_row_document_after(client):
    forget_schema()
    paths = client.get("/api/schema/", {"format": "json"}).json()["paths"]

    def parameters(path: str) -> set[str]:
        return {p["name"] for p in paths[path]["get"].get("parameters", [])}

    assert "after" in parameters("/api/studies/{study_id}/decisions/")
    assert "after" in parameters("/api/studies/{study_id}/annotations/")
    assert "page" in parameters("/api/issues/") and "after" not in parameters("/api/issues/")
