"""The adjudication API: queue, decisions (409 on conflict), discussion and release under the
blind rules, history; the permission of each role."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotator.adjudication.models import Decision
from annotator.paging import EstimatedPaginator
from annotator.studies.models import Assignment, Item
from annotator.studies.services import next_assignment
from tests.adjudication.helpers import label_next, submit

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def disputed(scene):
    return label_next(scene, {"symptom": "hang"}, {"symptom": "oom"}, notes="SECRET-NOTE")


def body(version=0, symptom="oom", **extra):
    return {
        "labels": {"screening": ["relevant"], "symptom": [symptom]},
        "reason": "other",
        "comment": "",
        "version": version,
        **extra,
    }


def test_queue_lists_undecided_items_with_the_count(scene, disputed):
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    data = api(scene.adjudicator).get(f"/api/studies/{scene.study.pk}/queue/").json()
    assert data["count"] == 1
    assert data["results"][0] | {"agreement": 0} == {
        "item": disputed.pk,
        "round": 1,
        "issue": str(disputed.issue),
        "title": disputed.issue.title,
        "agreement": 0,
        "disagreeing_facets": ["symptom"],
        "unsure_facets": [],
    }
    assert data["results"][0]["agreement"] == pytest.approx(0.5)
    filtered = api(scene.owner).get(f"/api/studies/{scene.study.pk}/queue/?facet=fix").json()
    assert filtered["count"] == 0


def test_decision_put_saves_and_a_stale_version_gets_409(scene, disputed):
    url = f"/api/items/{disputed.pk}/decision/"
    first = api(scene.adjudicator).put(url, body(), format="json")
    assert first.status_code == 200, first.json()
    assert first.json()["labels"] == {"screening": ["relevant"], "symptom": ["oom"]}
    assert first.json()["version"] == 1 and first.json()["decided_by"] == "adjudicator"
    second = api(scene.owner).put(url, body(symptom="hang"), format="json")
    assert second.status_code == 409
    assert "adjudicator saved a decision on this item" in second.json()["detail"]
    assert api(scene.owner).get(url).json()["labels"]["symptom"] == ["oom"]
    listed = api(scene.owner).get(f"/api/studies/{scene.study.pk}/decisions/").json()
    assert [d["item"] for d in listed["results"]] == [disputed.pk]
    assert listed["count"] == 1 and listed["count_is_estimate"] is False


def test_decision_list_is_in_item_order_and_past_the_limit_says_its_count_is_an_estimate(
    scene, monkeypatch
):
    labelled = [
        label_next(scene, {"symptom": "hang"}, {"symptom": code})
        for code in ("hang", "oom", "hang")
    ]
    url = f"/api/studies/{scene.study.pk}/decisions/"
    for item in labelled:
        if not Decision.objects.filter(item=item).exists():
            api(scene.owner).put(f"/api/items/{item.pk}/decision/", body(), format="json")
    listed = api(scene.owner).get(url).json()
    ordered = Item.objects.filter(study=scene.study, decision__isnull=False)
    assert [d["item"] for d in listed["results"]] == [i.pk for i in ordered]
    assert listed["count"] == 3 and listed["count_is_estimate"] is False

    # the planner expects a row or so of tables this small: any count past 0 is "many" here
    # (and the page ends at that estimate: at scale it is thousands past the first page)
    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 0)
    with connection.cursor() as cursor:  # the planner's statistics, as autovacuum keeps them
        cursor.execute("ANALYZE adjudication_decision")
    estimated = api(scene.owner).get(url).json()
    assert estimated["count_is_estimate"] is True and estimated["count"] >= 1
    assert estimated["results"][0] == listed["results"][0]


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"labels": {"symptom": ["nope"]}}, {"labels": {"symptom": "no such category 'nope'"}}),
        ({"labels": {"bogus": ["x"]}}, {"labels": {"bogus": "no such facet"}}),
        (
            {"labels": {"symptom": ["hang"]}},
            {"labels": {"screening": "required: choose a category"}},
        ),
        ({"reason": "because"}, {"reason": ['"because" is not a valid choice.']}),
    ],
)
def test_bad_decisions_get_400_by_field_and_write_nothing(scene, disputed, payload, errors):
    response = api(scene.adjudicator).put(
        f"/api/items/{disputed.pk}/decision/", body() | payload, format="json"
    )
    assert response.status_code == 400 and response.json() == errors
    assert not Decision.objects.exists()


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_annotators_and_outsiders_reach_no_adjudication_endpoint(scene, disputed, who):
    client = api(scene.annotators[0] if who == "annotator" else scene.outsider)
    for url in (
        f"/api/studies/{scene.study.pk}/queue/",
        f"/api/studies/{scene.study.pk}/decisions/",
        f"/api/items/{disputed.pk}/history/",
        f"/api/items/{disputed.pk}/decision/",
        f"/api/items/{disputed.pk}/discussion/",
    ):
        assert client.get(url).status_code == 404, url
    assert (
        client.put(f"/api/items/{disputed.pk}/decision/", body(), format="json").status_code == 404
    )
    assert client.post(f"/api/items/{disputed.pk}/release/").status_code == 404
    assert not Decision.objects.exists()


def test_discussion_api_is_blind_until_own_submit_and_release(scene):
    a, b = scene.annotators
    mine = next_assignment(study=scene.study, annotator=a)
    submit(
        scene, next_assignment(study=scene.study, annotator=b), b, notes="B-SECRET", symptom="oom"
    )
    url = f"/api/items/{mine.item_id}/discussion/"
    assert api(a).get(url).status_code == 404
    assert api(scene.adjudicator).post(f"/api/items/{mine.item_id}/release/").status_code == 404
    released = api(scene.owner).post(f"/api/items/{mine.item_id}/release/")
    assert released.status_code == 200 and released.json()["released_at"]
    assert api(a).get(url).status_code == 404
    assert api(a).post(url, {"body": "hi"}, format="json").status_code == 404
    submit(scene, Assignment.objects.get(pk=mine.pk), a, symptom="hang")
    posted = api(a).post(url, {"body": "hang, surely"}, format="json")
    assert posted.status_code == 201
    data = posted.json()
    assert {x["annotator"] for x in data["annotations"]} == {"annotator-0", "annotator-1"}
    assert "B-SECRET" in str(data) and data["comments"][0]["author"] == "annotator-0"
    assert api(scene.owner).post(url, {"body": "  "}, format="json").status_code == 400


def test_history_api_lists_every_change(scene, disputed):
    api(scene.adjudicator).put(f"/api/items/{disputed.pk}/decision/", body(), format="json")
    history = api(scene.owner).get(f"/api/items/{disputed.pk}/history/").json()
    assert [(c["subject"], c["user"]) for c in history] == [
        ("annotation", "annotator-0"),
        ("annotation", "annotator-1"),
        ("decision", "adjudicator"),
    ]
    assert history[-1]["before"] is None and history[-1]["after"]["source"] == "adjudicated"
