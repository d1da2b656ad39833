"""The rest of the studies API (api_more.py): who may call each route, what it returns, and the
item list's constant query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.studies.models import Invitation, Membership, Round, Study
from annotator.studies.services import add_member, next_assignment, submit_annotation
from tests.factories import UserFactory
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='tests')[1]}")
    return client


@pytest.fixture
def people(world):
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    return {
        "owner": world.owner,
        "adjudicator": adjudicator,
        "annotator": world.annotators[0],
        "outsider": UserFactory(username="outsider"),
    }


# route, method, body, expected status for owner / adjudicator / annotator / outsider
ROUTES = [
    ("update/", "patch", {"guidelines": "new"}, (200, 404, 404, 404)),
    ("rounds/", "get", None, (200, 200, 200, 404)),
    ("rounds/create/", "post", {"kind": "calibration"}, (201, 404, 404, 404)),
    ("items/", "get", None, (200, 200, 404, 404)),
    ("my-assignments/", "get", None, (200, 200, 200, 404)),
    ("selections/list/", "get", None, (200, 200, 200, 404)),
    ("invitations/", "get", None, (200, 404, 404, 404)),
    ("invitations/create/", "post", {"role": "annotator"}, (201, 404, 404, 404)),
]
ROLES = ["owner", "adjudicator", "annotator", "outsider"]


@pytest.mark.parametrize(
    ("route", "method", "body", "expected"), ROUTES, ids=[r[0] for r in ROUTES]
)
@pytest.mark.parametrize("role", ROLES)
def test_who_may_call_each_route(world, people, route, method, body, expected, role):
    client = api(people[role])
    url = f"/api/studies/{world.study.pk}/{route}"
    response = getattr(client, method)(url, body, format="json")
    assert response.status_code == expected[ROLES.index(role)], response.data


def test_unauthenticated_calls_get_401(world):
    assert APIClient().get(f"/api/studies/{world.study.pk}/items/").status_code == 401


def test_owner_updates_name_and_guidelines_keeping_k(world):
    owner = api(world.owner)
    url = f"/api/studies/{world.study.pk}/update/"
    response = owner.patch(url, {"name": "  Renamed ", "guidelines": "Read twice."}, format="json")
    assert response.status_code == 200, response.data
    assert (response.data["name"], response.data["guidelines"]) == ("Renamed", "Read twice.")
    response = owner.patch(url, {"guidelines": ""}, format="json")
    study = Study.objects.get(pk=world.study.pk)
    assert (study.name, study.guidelines, study.overlap_k) == ("Renamed", "", 2)
    refused = owner.patch(url, {"name": " "}, format="json")
    assert refused.status_code == 400 and "name" in refused.data


def test_rounds_are_listed_and_created(world):
    owner = api(world.owner)
    created = owner.post(
        f"/api/studies/{world.study.pk}/rounds/create/", {"kind": "calibration"}, format="json"
    )
    assert created.status_code == 201
    assert (created.data["number"], created.data["kind"]) == (2, "calibration")
    default = owner.post(f"/api/studies/{world.study.pk}/rounds/create/", {}, format="json")
    assert (default.data["number"], default.data["kind"]) == (3, "main")
    bad = owner.post(f"/api/studies/{world.study.pk}/rounds/create/", {"kind": "x"}, format="json")
    assert bad.status_code == 400 and "kind" in bad.data["detail"]
    listed = api(world.annotators[0]).get(f"/api/studies/{world.study.pk}/rounds/").data
    assert [(r["number"], r["kind"]) for r in listed["results"]] == [
        (1, "main"),
        (2, "calibration"),
        (3, "main"),
    ]
    assert Round.objects.filter(study=world.study).count() == 3


def test_items_show_state_counters_and_issue_and_filter(world):
    a, b = world.annotators
    mine = next_assignment(study=world.study, annotator=a)
    theirs = next_assignment(study=world.study, annotator=b)
    assert mine.item_id == theirs.item_id
    for assignment, person in ((mine, a), (theirs, b)):
        submit_annotation(
            assignment=assignment, user=person, labels=world.labels(screening="relevant")
        )
    next_assignment(study=world.study, annotator=a)
    url = f"/api/studies/{world.study.pk}/items/"
    owner = api(world.owner)
    data = owner.get(url).data
    assert data["count"] == 4
    states = sorted(row["state"] for row in data["results"])
    assert states == ["complete", "in progress", "unassigned", "unassigned"]
    done = owner.get(url, {"state": "complete"}).data["results"]
    assert [row["id"] for row in done] == [mine.item_id]
    row = done[0]
    issue = mine.item.issue
    assert row["issue"] == {
        "id": issue.pk,
        "repository": "hpcaitech/ColossalAI",
        "number": issue.number,
        "title": issue.title,
    }
    assert (row["quota"], row["active_count"], row["submitted_count"]) == (2, 2, 2)
    assert row["round"] == {
        "id": world.round.pk,
        "number": 1,
        "kind": "main",
        "closed_at": None,
        "closed_reason": "",
    }
    assert row["released_at"] is None
    assert owner.get(url, {"state": "in progress"}).data["count"] == 1
    assert owner.get(url, {"round": world.round.pk}).data["count"] == 4
    assert owner.get(url, {"round": world.round.pk + 999}).data["count"] == 0
    assert owner.get(url, {"state": "nope"}).status_code == 400


def test_my_assignments_are_only_ones_own(world):
    a, b = world.annotators
    mine = next_assignment(study=world.study, annotator=a)
    theirs = next_assignment(study=world.study, annotator=b)
    submit_annotation(assignment=mine, user=a, labels=world.labels(screening="relevant"))
    url = f"/api/studies/{world.study.pk}/my-assignments/"
    rows = api(a).get(url).data["results"]
    assert [(r["id"], r["status"], r["item"]) for r in rows] == [
        (mine.pk, "submitted", mine.item_id)
    ]
    assert rows[0]["submitted_at"] is not None
    assert rows[0]["issue"]["number"] == mine.item.issue.number
    assert rows[0]["round"]["number"] == 1
    rows = api(b).get(url).data["results"]
    assert [(r["id"], r["status"], r["submitted_at"]) for r in rows] == [
        (theirs.pk, "assigned", None)
    ]
    assert api(world.owner).get(url).data["results"] == []


def test_selections_are_listed_with_their_record(world):
    rows = api(world.annotators[0]).get(f"/api/studies/{world.study.pk}/selections/list/").data
    assert rows["count"] == 1
    row = rows["results"][0]
    assert row["filters"] == {"repository": str(world.issues[0].repository_id)}
    assert (row["matched"], row["sampled"], row["added"], row["seed"]) == (4, 4, 4, 1)
    assert row["round"] == world.round.pk and "Issues matching" in row["method_text"]


def test_invitations_are_created_and_listed(world):
    owner = api(world.owner)
    created = owner.post(
        f"/api/studies/{world.study.pk}/invitations/create/", {"role": "adjudicator"}, format="json"
    )
    assert created.status_code == 201
    invitation = Invitation.objects.get()
    assert (created.data["role"], created.data["token"]) == ("adjudicator", invitation.token)
    assert created.data["url"].endswith(f"/studies/join/{invitation.token}/")
    assert created.data["uses"] == 0
    refused = owner.post(
        f"/api/studies/{world.study.pk}/invitations/create/", {"role": "owner"}, format="json"
    )
    assert refused.status_code == 400
    listed = owner.get(f"/api/studies/{world.study.pk}/invitations/").data["results"]
    assert [row["token"] for row in listed] == [invitation.token]


def test_the_schema_lists_the_new_routes(client, world):
    client.force_login(world.owner)
    schema = client.get("/api/schema/").content.decode()
    for route in ("update", "rounds", "rounds/create", "items", "my-assignments"):
        assert f"/api/studies/{{study_id}}/{route}/" in schema
    for route in ("selections/list", "invitations", "invitations/create"):
        assert f"/api/studies/{{study_id}}/{route}/" in schema


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
def test_item_list_queries_are_constant(big):
    world = make_world(items=60 if big else 2)
    for person in world.annotators:
        next_assignment(study=world.study, annotator=person)
    client = api(world.owner)
    url = f"/api/studies/{world.study.pk}/items/"
    client.get(url)  # records the token's last use, which then waits a minute
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200 and response.data["count"] == (60 if big else 2)
    # token + user, membership (+ study), count, page: the same for both sizes (see test ids)
    assert len(queries) == 4, [q["sql"] for q in queries.captured_queries]
