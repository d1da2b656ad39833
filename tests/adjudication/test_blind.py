"""Blind adjudication, the adjudicator's confidence and the fast-label flag.

With the study's blind setting on, no route an adjudicator or owner reads names an item's
annotators before the item is decided: they read as Annotator A, B in the order the item was
handed out; after the decision the names show. Confidence is stored with a decision (page and
API) and shown in its history; a label given faster than the study's threshold is flagged."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.test import Client
from django.urls import reverse

from annotator.adjudication.models import AdjudicationSettings, Decision
from annotator.adjudication.services import release_item, set_blind_options
from annotator.exports.services import export_dataset
from annotator.studies.models import Annotation
from tests.adjudication.helpers import Scene, label_next
from tests.adjudication.test_api import api, body
from tests.adjudication.test_views import decision_post

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def as_user(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def disputed(scene: Scene):  # type: ignore[no-untyped-def]
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"}, notes="a note")
    release_item(item=item)
    as_user(scene.annotators[0]).post(
        reverse("adjudication:discussion", args=[item.pk]), {"body": "I read hang in the log"}
    )
    return item


def routes(item) -> list[str]:  # type: ignore[no-untyped-def]
    """Every page and API route that shows an item's annotators."""
    return [
        reverse("adjudication:item", args=[item.pk]),
        reverse("adjudication:discussion", args=[item.pk]),
        reverse("adjudication:history", args=[item.pk]),
        reverse("studies:item", args=[item.pk]),
        reverse("api-discussion", args=[item.pk]),
        reverse("api-history", args=[item.pk]),
    ]


def names(scene: Scene) -> list[str]:
    return [user.username for user in scene.annotators]


def test_without_blindness_the_annotators_are_named(scene: Scene, disputed) -> None:
    client = as_user(scene.adjudicator)
    page = client.get(reverse("adjudication:item", args=[disputed.pk])).content.decode()
    assert all(name in page for name in names(scene))
    assert "Annotator A" not in page and "data-blind" not in page


def test_blind_hides_every_annotator_name_until_the_decision(scene: Scene, disputed) -> None:
    set_blind_options(study=scene.study, blind=True, fast_label_seconds=0)
    for viewer in (scene.adjudicator, scene.owner):
        client = as_user(viewer)
        for url in routes(disputed):
            response = client.get(url)
            assert response.status_code == 200, url
            text = response.content.decode()
            for name in names(scene):
                assert name not in text, (viewer.username, url, name)
            assert "Annotator A" in text and "Annotator B" in text, (viewer.username, url)
    # A refused decision (no reason) comes back in place as the form (htmx), still blind.
    refused = as_user(scene.adjudicator).post(
        reverse("adjudication:decide", args=[disputed.pk]),
        decision_post(scene, disputed, reason=""),
        **HTMX,
    )
    text = refused.content.decode()
    assert "choose the reason" in text and not Decision.objects.filter(item=disputed).exists()
    assert "Annotator A" in text and not any(name in text for name in names(scene))


def test_letters_follow_the_order_of_the_columns(scene: Scene, disputed) -> None:
    set_blind_options(study=scene.study, blind=True, fast_label_seconds=0)
    data = api(scene.adjudicator).get(reverse("api-discussion", args=[disputed.pk])).json()
    by_letter = {a["annotator"]: a["labels"]["symptom"] for a in data["annotations"]}
    assert by_letter == {"Annotator A": ["hang"], "Annotator B": ["oom"]}
    assert [c["author"] for c in data["comments"]] == ["Annotator A"]


def test_an_annotator_keeps_their_own_name_and_reads_the_other_as_a_letter(
    scene: Scene, disputed
) -> None:
    set_blind_options(study=scene.study, blind=True, fast_label_seconds=0)
    first, second = scene.annotators
    text = as_user(second).get(reverse("adjudication:discussion", args=[disputed.pk]))
    page = text.content.decode()
    assert second.username in page and first.username not in page and "Annotator A" in page


def test_the_names_show_once_the_item_is_decided(scene: Scene, disputed) -> None:
    set_blind_options(study=scene.study, blind=True, fast_label_seconds=0)
    client = as_user(scene.adjudicator)
    response = client.post(
        reverse("adjudication:decide", args=[disputed.pk]), decision_post(scene, disputed)
    )
    assert response.status_code == 302
    for url in routes(disputed):
        text = client.get(url).content.decode()
        assert all(name in text for name in names(scene)), url
        assert "Annotator A" not in text, url


def test_confidence_is_saved_from_the_page_and_the_api_and_shown(scene: Scene, disputed) -> None:
    client = as_user(scene.adjudicator)
    post = {**decision_post(scene, disputed), "confidence": "2"}
    assert client.post(reverse("adjudication:decide", args=[disputed.pk]), post).status_code == 302
    decision = Decision.objects.get(item=disputed)
    assert decision.confidence == Decision.Confidence.MEDIUM
    page = client.get(reverse("adjudication:item", args=[disputed.pk])).content.decode()
    assert "confidence medium" in page  # the current decision, and its history snapshot
    url = reverse("api-decision", args=[disputed.pk])
    answer = api(scene.adjudicator).put(url, body(version=1, confidence=3), format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["confidence"] == 3
    bad = api(scene.adjudicator).put(url, body(version=2, confidence=7), format="json")
    assert bad.status_code == 400 and "confidence" in bad.json()
    assert Decision.objects.get(item=disputed).confidence == Decision.Confidence.HIGH
    out = io.BytesIO()
    export_dataset(study=scene.study, format="csv", out=out, table="final")
    final = pd.read_csv(io.BytesIO(out.getvalue()))
    row = final[final["number"] == disputed.issue.number].iloc[0]
    assert row["confidence"] == 3


def test_labels_faster_than_the_threshold_are_flagged(scene: Scene, disputed) -> None:
    first, second = Annotation.objects.filter(assignment__item=disputed).order_by(
        "assignment__assigned_at", "pk"
    )
    Annotation.objects.filter(pk=first.pk).update(seconds_spent=3)
    Annotation.objects.filter(pk=second.pk).update(seconds_spent=40)
    url = reverse("adjudication:item", args=[disputed.pk])
    assert "data-fast" not in as_user(scene.adjudicator).get(url).content.decode()
    set_blind_options(study=scene.study, blind=False, fast_label_seconds=10)
    page = as_user(scene.adjudicator).get(url).content.decode()
    assert page.count("data-fast") == 1
    header = page[page.index("data-fast") - 300 : page.index("data-fast")]
    assert first.assignment.annotator.username in header


def test_the_owner_sets_blindness_and_the_flag_on_the_items_page(scene: Scene) -> None:
    client = as_user(scene.owner)
    rules = reverse("adjudication:rules", args=[scene.study.pk])
    response = client.post(rules, {"blind": "on", "fast_label_seconds": "8"}, follow=True)
    assert "Blind adjudication on; labels under 8 s flagged" in response.content.decode()
    stored = AdjudicationSettings.objects.get(study=scene.study)
    assert stored.blind and stored.fast_label_seconds == 8
    page = client.get(reverse("adjudication:items", args=[scene.study.pk])).content.decode()
    assert 'name="blind"' in page and "checked" in page[page.index('name="blind"') - 80 :]
    refused = client.post(rules, {"fast_label_seconds": "-1"}, follow=True)
    assert "Nothing was changed" in refused.content.decode()
    stored.refresh_from_db()
    assert stored.blind and stored.fast_label_seconds == 8
    adjudicator = as_user(scene.adjudicator).post(rules, {"blind": ""})
    assert adjudicator.status_code in (403, 404)
    stored.refresh_from_db()
    assert stored.blind
