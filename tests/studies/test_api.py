"""The studies API: token auth, the labeling loop, errors, blindness, the schema."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.studies.models import Annotation, Study

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='tests')[1]}")
    return client


def test_owner_creates_a_study_adds_an_annotator_and_selects_issues(world):
    owner = api(world.owner)
    created = owner.post(
        "/api/studies/create/",
        {"name": "API study", "codebook_version": world.version.pk, "overlap_k": 2},
        format="json",
    )
    assert created.status_code == 201, created.data
    study_id = created.data["id"]
    member = owner.post(
        f"/api/studies/{study_id}/members/", {"username": "scripted", "create": True}, format="json"
    )
    assert member.status_code == 201 and member.data["password"]
    selection = owner.post(
        f"/api/studies/{study_id}/selections/",
        {"repository": world.issues[0].repository_id, "sample_size": 2, "seed": 7},
        format="json",
    )
    assert selection.status_code == 201, selection.data
    assert (selection.data["matched"], selection.data["added"], selection.data["seed"]) == (4, 2, 7)
    assert Study.objects.get(pk=study_id).items.count() == 2


def test_annotator_labels_through_the_api(world):
    a = api(world.annotators[0])
    nxt = a.post(f"/api/studies/{world.study.pk}/next-item/")
    assert nxt.status_code == 200
    assignment = nxt.data["id"]
    refused = a.post(
        f"/api/assignments/{assignment}/submit/", {"labels": {"symptom": ["hang"]}}, format="json"
    )
    assert refused.status_code == 400 and refused.data["labels"] == {
        "screening": "required: choose a category"
    }
    unknown = a.post(
        f"/api/assignments/{assignment}/submit/", {"labels": {"screening": ["nope"]}}, format="json"
    )
    assert unknown.status_code == 400 and "nope" in unknown.data["labels"]["screening"]
    draft = a.put(
        f"/api/assignments/{assignment}/draft/",
        {"labels": {"symptom": ["hang"]}, "seconds_spent": 5},
        format="json",
    )
    assert draft.data["status"] == "draft" and draft.data["labels"] == {"symptom": ["hang"]}
    done = a.post(
        f"/api/assignments/{assignment}/submit/",
        {"labels": {"screening": ["relevant"], "fix": ["version", "config"]}},
        format="json",
    )
    assert done.status_code == 200 and done.data["labels"] == {
        "screening": ["relevant"],
        "fix": ["version", "config"],
    }
    assert Annotation.objects.get().status == "submitted"


def test_api_is_blind_and_progress_is_for_owners(world):
    a, b = world.annotators
    for person in (a, b):
        client = api(person)
        assignment = client.post(f"/api/studies/{world.study.pk}/next-item/").data["id"]
        client.post(
            f"/api/assignments/{assignment}/submit/",
            {"labels": {"screening": ["relevant"]}, "notes": person.username},
            format="json",
        )
    listed = api(a).get(f"/api/studies/{world.study.pk}/annotations/").data["results"]
    assert [row["annotator"] for row in listed] == [a.username]
    assert api(a).get(f"/api/studies/{world.study.pk}/progress/").status_code == 404
    owner = api(world.owner)
    listed = owner.get(f"/api/studies/{world.study.pk}/annotations/").data
    assert len(listed["results"]) == 2
    # an exact count while the annotations are few (past 10,000: the database's estimate)
    assert listed["count"] == 2 and listed["count_is_estimate"] is False
    progress = owner.get(f"/api/studies/{world.study.pk}/progress/").data
    assert progress[0]["in_progress"] == 3 or progress[0]["complete"] == 1


def test_unauthenticated_calls_get_401_and_the_schema_lists_the_routes(client, world):
    assert APIClient().post(f"/api/studies/{world.study.pk}/next-item/").status_code == 401
    client.force_login(world.owner)
    schema = client.get("/api/schema/").content.decode()
    for path in (
        "/api/studies/{study_id}/next-item/",
        "/api/assignments/{assignment_id}/submit/",
        "/api/studies/{study_id}/annotations/",
        "/api/studies/{study_id}/selections/",
    ):
        assert path in schema
