"""The adjudication API: queue, decisions (409 on conflict), discussion and release under the
blind rules, history; the permission of each role."""

from __future__ import annotations

import urllib.parse

import pytest
from django.db import connection
from rest_framework.test import APIClient

from annotator.adjudication.models import Decision
from annotator.paging import EstimatedPaginator
from annotator.studies.models import Annotation, Assignment, Item
from annotator.studies.services import create_round, next_assignment
from tests.adjudication.helpers import label_next, make_scene, submit

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


@pytest.fixture
def seven_decided(db):  # type: ignore[no-untyped-def]
    """Seven decided items, in two rounds, whose positions run against their ids."""
    scene = make_scene(items=7)
    for _ in range(7):
        label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})  # agreed: decided
    items = list(Item.objects.filter(study=scene.study).order_by("pk"))
    later = create_round(study=scene.study)
    for n, item in enumerate(items):
        Item.objects.filter(pk=item.pk).update(
            position=len(items) - n, round=later if n < 2 else item.round
        )
    return scene


def _query(link):  # type: ignore[no-untyped-def]
    return urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)


def _walk(client, url, key="item"):  # type: ignore[no-untyped-def]
    pages, links = [], []
    while url:
        body = client.get(url).json()
        pages.append([row[key] for row in body["results"]])
        links.append((body["next"], body["previous"]))
        url = body["next"]
        assert len(pages) < 10, "the next links go round"
    return pages, links


@pytest.mark.parametrize("estimated", [False, True])
def test_next_links_read_on_from_the_last_decision_and_give_the_pages_numbers_give(
    seven_decided, monkeypatch, estimated
):
    from annotator.api_pagination import EstimatedPagination

    monkeypatch.setattr(EstimatedPagination, "page_size", 3)
    if estimated:  # "about N": the pages are read to the last row, however short the estimate
        monkeypatch.setattr(EstimatedPaginator, "exact_limit", 0)
    client = api(seven_decided.owner)
    url = f"/api/studies/{seven_decided.study.pk}/decisions/"

    pages, links = _walk(client, url)

    in_order = [i.pk for i in Item.objects.filter(study=seven_decided.study)]  # Item.Meta
    assert Decision.objects.filter(item__study=seven_decided.study).count() == 7
    assert pages == [in_order[0:3], in_order[3:6], in_order[6:7]]
    numbered = [
        [d["item"] for d in client.get(url, {"page": n}).json()["results"]] for n in (1, 2, 3)
    ]
    assert numbered == pages  # by number, the position before each is looked up first
    assert client.get(url, {"page": 4}).status_code == 404  # past the last row
    last_of = [Item.objects.get(pk=page[-1]) for page in pages[:2]]
    assert [_query(link) for link, _ in links[:2]] == [
        {"page": [str(n)], "after": [f"{i.round_id}.{i.position}.{i.pk}"]}
        for n, i in zip((2, 3), last_of, strict=True)
    ]
    previous = [back for _, back in links]
    assert (
        previous[0] is None and _query(previous[1]) == {} and _query(previous[2]) == {"page": ["2"]}
    )
    assert (
        client.get(previous[2]).json()["results"] == client.get(url, {"page": 2}).json()["results"]
    )


def test_a_bad_or_spent_position_is_refused_and_changes_nothing(seven_decided):
    client = api(seven_decided.owner)
    url = f"/api/studies/{seven_decided.study.pk}/decisions/"
    last = Item.objects.filter(study=seven_decided.study).last()

    for bad in ("1.2", "a.b.c", "1.2.3.4", ""):
        response = client.get(url, {"page": 2, "after": bad})
        assert response.status_code == 400, bad
        assert "after" in response.json() and "whole numbers" in response.json()["after"][0]
    spent = client.get(url, {"page": 2, "after": f"{last.round_id}.{last.position}.{last.pk}"})
    assert spent.status_code == 404 and spent.json() == {"detail": "Invalid page."}
    assert client.get(url, {"page": "x", "after": "1.2.3"}).status_code == 404


def test_the_annotation_list_reads_on_from_its_last_row(seven_decided, monkeypatch):
    from annotator.api_pagination import EstimatedPagination

    monkeypatch.setattr(EstimatedPagination, "page_size", 4)
    client = api(seven_decided.owner)

    pages, links = _walk(client, f"/api/studies/{seven_decided.study.pk}/annotations/", "id")

    stored = list(
        Annotation.objects.filter(assignment__item__study=seven_decided.study)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    ids = [a for page in pages for a in page]
    assert len(stored) == 14 and len(pages) == 4
    assert [_query(link)["after"] for link, _ in links[:3]] == [
        [str(page[-1])] for page in pages[:3]
    ]
    assert ids == stored


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
