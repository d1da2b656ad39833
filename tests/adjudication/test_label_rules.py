"""Label rules on adjudication: the decide page and `PUT /api/items/<id>/decision/` refuse a
decision that breaks the codebook's rules, naming the facet and the rule, and write nothing."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.adjudication.models import Decision
from tests.adjudication.helpers import Scene, label_next, make_scene
from tests.taxonomy_app.factories import published_with_rules

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def scene(db) -> Scene:  # type: ignore[no-untyped-def]
    return make_scene(version=published_with_rules())


@pytest.fixture
def disputed(scene):
    return label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def body(**labels):
    return {"labels": labels, "reason": "other", "comment": "", "version": 0}


@pytest.mark.parametrize(
    ("labels", "errors"),
    [
        ({"screening": ["relevant"]}, {"symptom": "required when Screening is Relevant"}),
        (
            {"screening": ["not-a-bug"], "fix": ["config"]},
            {"fix": "Not a bug allows no fix pattern"},
        ),
        (
            {"screening": ["relevant"], "symptom": ["failure"]},
            {"symptom": "a leaf category: choose one of Program failure's sub-categories"},
        ),
    ],
)
def test_the_api_refuses_a_decision_breaking_a_rule(scene, disputed, labels, errors):
    response = api(scene.adjudicator).put(
        f"/api/items/{disputed.pk}/decision/", body(**labels), format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"labels": errors}
    assert not Decision.objects.filter(item=disputed).exists()


def test_the_api_takes_a_decision_that_keeps_the_rules(scene, disputed):
    response = api(scene.adjudicator).put(
        f"/api/items/{disputed.pk}/decision/",
        body(screening=["relevant"], symptom=["oom"]),
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert Decision.objects.get(item=disputed).labels.count() == 2


def test_the_decide_page_shows_the_facets_rule_and_writes_nothing(scene, disputed):
    client = Client()
    client.force_login(scene.adjudicator)
    labels = scene.world.labels(screening="not-a-bug", symptom="hang")
    data = {f"facet-{f}": ids for f, ids in labels.items() if ids}

    response = client.post(
        reverse("adjudication:decide", args=[disputed.pk]),
        {**data, "reason": "annotator-slip", "comment": "", "version": 0},
        **HTMX,
    )

    text = response.content.decode()
    assert response.status_code == 200 and "<html" not in text
    assert "Not a bug allows no symptom" in text
    assert not Decision.objects.filter(item=disputed).exists()
