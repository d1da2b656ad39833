"""The codebook REST API: reads, owner-only writes, published versions answer 409, schema."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from taxonomy_app.models import Category, Codebook, Proposal
from tests.factories import UserFactory
from tests.taxonomy_app.factories import category, small_document
from tests.taxonomy_app.test_import_export import snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client, owner):  # type: ignore[no-untyped-def]
    client.force_login(owner)
    return client


def post(client, name, pk=None, data=None):  # type: ignore[no-untyped-def]
    url = reverse(name, args=[pk] if pk is not None else [])
    return client.post(url, data or {}, content_type="application/json")


def test_api_requires_authentication(client, v1):
    assert client.get(reverse("api-codebook-list")).status_code in {401, 403}


def test_version_detail_nests_facets_and_categories(
    logged_in_client, v1, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8):
        response = logged_in_client.get(reverse("api-version-detail", args=[v1.pk]))

    body = response.json()
    assert (body["number"], body["status"]) == (1, "published")
    assert [f["key"] for f in body["facets"]] == ["screening", "symptom", "fix"]
    assert {c["code"] for c in body["facets"][1]["categories"]} >= {"hang", "failure"}


@pytest.mark.parametrize(
    ("method", "name", "payload"),
    [
        ("patch", "api-category-detail", {"definition": "Changed."}),
        ("delete", "api-category-detail", None),
        ("post", "api-category-archive", {}),
        ("post", "api-category-move", {"direction": "down"}),
        ("post", "api-category-split", {"names": ["A", "B"]}),
    ],
)
def test_published_version_cannot_change_through_the_api(api, v1, method, name, payload):
    hang = category(v1, "symptom", "hang")
    before = snapshot()

    response = getattr(api, method)(
        reverse(name, args=[hang.pk]), json.dumps(payload or {}), content_type="application/json"
    )

    assert response.status_code == 409
    assert "is published and cannot change" in response.json()["detail"]
    assert snapshot() == before
    assert Category.objects.get(pk=hang.pk).definition == "Waits."


def test_publishing_a_published_version_answers_409(api, v1):
    assert post(api, "api-version-publish", v1.pk).status_code == 409


def test_only_the_owner_changes_a_codebook(logged_in_client, v1):
    response = post(logged_in_client, "api-codebook-draft", v1.codebook_id)

    assert response.status_code == 403
    assert v1.codebook.draft() is None


def test_owner_drafts_edits_and_publishes_through_the_api(api, v1):
    draft = post(api, "api-codebook-draft", v1.codebook_id).json()
    hang = Category.objects.get(facet__version_id=draft["id"], code="hang")

    edited = api.patch(
        reverse("api-category-detail", args=[hang.pk]),
        {"name": "Hang or timeout"},
        content_type="application/json",
    )
    published = post(api, "api-version-publish", draft["id"], {"changelog": "Renamed hang."})
    diff = api.get(reverse("api-version-diff", args=[draft["id"]])).json()

    assert edited.json()["name"] == "Hang or timeout"
    assert published.json()["status"] == "published"
    assert [(c["code"], c["fields"][0]["field"]) for c in diff["changed"]] == [("hang", "name")]


def test_cycle_through_the_api_is_refused_with_400(api, v1):
    draft = post(api, "api-codebook-draft", v1.codebook_id).json()
    failure = Category.objects.get(facet__version_id=draft["id"], code="failure")
    hang = Category.objects.get(facet__version_id=draft["id"], code="hang")

    response = post(api, "api-category-move", failure.pk, {"parent": hang.pk})

    assert response.status_code == 400
    assert "cycle in the hierarchy" in response.json()["detail"]


def test_split_returns_the_affected_labels(api, v1, labels):
    labels["l1"] = category(v1, "symptom", "hang").pk
    draft = post(api, "api-codebook-draft", v1.codebook_id).json()
    hang = Category.objects.get(facet__version_id=draft["id"], code="hang")

    response = post(api, "api-category-split", hang.pk, {"names": ["Deadlock", "Timeout"]})

    assert response.status_code == 200
    assert response.json()["affected_labels"] == ["l1"]
    assert [c["code"] for c in response.json()["categories"]] == ["deadlock", "timeout"]


def test_import_with_a_bad_file_answers_400_and_writes_nothing(api, v1):
    document = small_document()
    document["facets"][1]["categories"][1]["parent"] = "nowhere"
    before = snapshot()

    response = post(
        api, "api-codebook-import", data={"content": json.dumps(document), "format": "json"}
    )

    assert response.status_code == 400
    assert "category 'hang': field 'parent': unknown parent 'nowhere'" in response.json()["detail"]
    assert snapshot() == before


def test_export_and_import_through_the_api(api, v1):
    exported = api.get(reverse("api-version-export", args=[v1.pk, "yaml"]))
    Codebook.objects.filter(pk=v1.codebook_id).update(slug="renamed")

    response = post(
        api, "api-codebook-import", data={"content": exported.content.decode(), "publish": True}
    )

    assert exported["Content-Type"].startswith("application/yaml")
    assert 'filename="small-bugs-v1.yaml"' in exported["Content-Disposition"]
    assert response.status_code == 201
    assert response.json()["status"] == "published"


def test_proposal_flow_through_the_api(api, v1, client):
    annotator = UserFactory()
    client.force_login(annotator)
    symptom = v1.facets.get(key="symptom")
    created = post(
        client,
        "api-proposal-list",
        data={"facet": symptom.pk, "name": "Bus error", "issue": "org/repo#5"},
    )
    refused = post(client, "api-proposal-accept", created.json()["id"])

    api.force_login(v1.codebook.created_by)
    accepted = post(api, "api-proposal-accept", created.json()["id"])
    listed = api.get(
        reverse("api-proposal-list"), {"codebook": v1.codebook_id, "status": "accepted"}
    )

    assert (created.status_code, refused.status_code, accepted.status_code) == (201, 403, 200)
    assert accepted.json()["code"] == "bus-error"
    assert [p["name"] for p in listed.json()["results"]] == ["Bus error"]
    assert Proposal.objects.get().proposed_by == annotator


def test_reject_without_a_reason_is_a_400(api, v1):
    proposal = Proposal.objects.create(facet=v1.facets.first(), name="X")

    assert post(api, "api-proposal-reject", proposal.pk, {"reason": ""}).status_code == 400


def test_schema_lists_the_codebook_endpoints(logged_in_client):
    response = logged_in_client.get(reverse("api-schema"), {"format": "json"})

    paths = json.loads(response.content)["paths"]
    for path in [
        "/api/codebooks/",
        "/api/codebooks/import/",
        "/api/codebooks/{id}/draft/",
        "/api/codebook-versions/{id}/",
        "/api/codebook-versions/{id}/publish/",
        "/api/codebook-versions/{id}/diff/",
        "/api/facets/{id}/categories/",
        "/api/categories/{id}/merge/",
        "/api/categories/{id}/split/",
        "/api/proposals/",
        "/api/proposals/{id}/accept/",
    ]:
        assert path in paths, path


def test_facet_edit_through_the_api(api, v1):
    payload = {"name": "Fix patterns", "kind": "multi", "required": True, "help": "All that apply."}
    published = api.put(
        reverse("api-facet-detail", args=[v1.facets.get(key="fix").pk]),
        payload,
        content_type="application/json",
    )
    draft = post(api, "api-codebook-draft", v1.codebook_id).json()
    facet = v1.codebook.draft().facets.get(key="fix")

    edited = api.put(
        reverse("api-facet-detail", args=[facet.pk]), payload, content_type="application/json"
    )

    assert published.status_code == 409
    assert (edited.status_code, edited.json()["name"], edited.json()["version"]) == (
        200,
        "Fix patterns",
        draft["id"],
    )
