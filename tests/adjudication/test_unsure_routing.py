"""Unsure labels and adjudication: with the study's routing on (the default), an item whose
annotators agree but where one marked a facet unsure waits in the queue for a person, with the
reason shown; off, it is decided as before. Changing the setting applies at once to complete
items no person decided. The agreement value is computed on labels only."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import pytest
from django.test import Client
from django.urls import reverse

from annotator.adjudication.models import Change, Decision, ItemAgreement
from annotator.adjudication.services import (
    adjudicate_item,
    disagreement_queue,
    set_majority_rule,
)
from annotator.exports.services import export_dataset
from annotator.studies.models import Item
from annotator.studies.services import next_assignment, submit_annotation, update_study
from tests.adjudication.helpers import Scene, make_scene
from tests.studies.test_api import api

pytestmark = pytest.mark.django_db
AGREED = {"screening": "relevant", "symptom": "hang"}


def label(scene: Scene, *unsure: list[str], codes: tuple[dict[str, Any], ...] = ()) -> Item:
    """Each annotator in turn submits their `codes` (AGREED by default) on their next item (the
    same item, breadth first), marking the facets of their entry in `unsure`."""
    item = None
    for n, (person, marks) in enumerate(zip(scene.annotators, unsure, strict=True)):
        assignment = next_assignment(study=scene.study, annotator=person)
        assert item is None or assignment.item_id == item.pk
        item = assignment.item
        labels = scene.world.labels(**(codes[n] if codes else AGREED))
        submit_annotation(assignment=assignment, user=person, labels=labels, unsure=marks)
    assert item is not None
    return Item.objects.get(pk=item.pk)


def set_routing(scene: Scene, on: bool) -> None:
    study = scene.study
    update_study(
        study=study,
        name=study.name,
        guidelines=study.guidelines,
        overlap_k=study.overlap_k,
        route_unsure_to_adjudication=on,
    )


def queued(scene: Scene) -> list[int]:
    return [entry.item_id for entry in disagreement_queue(study=scene.study)]


def test_an_agreed_item_marked_unsure_waits_in_the_queue_by_default(scene):
    item = label(scene, ["symptom"], [])
    assert scene.study.route_unsure_to_adjudication is True
    assert not Decision.objects.filter(item=item).exists()
    assert queued(scene) == [item.pk]
    agreement = ItemAgreement.objects.get(item=item)
    assert agreement.value == 1.0  # the labels agree: unsure changes no coefficient
    assert agreement.unsure_facets == ["symptom"]
    assert not agreement.disagreeing_facets.exists()
    plain = label(scene, [], [])  # nobody unsure: decided as before
    assert Decision.objects.get(item=plain).source == Decision.Source.UNANIMOUS
    assert queued(scene) == [item.pk]


def test_with_the_routing_off_an_agreed_item_marked_unsure_is_decided_unanimously(scene):
    set_routing(scene, False)
    item = label(scene, ["symptom"], ["fix"])
    assert Decision.objects.get(item=item).source == Decision.Source.UNANIMOUS
    assert queued(scene) == []
    assert ItemAgreement.objects.get(item=item).unsure_facets == ["symptom", "fix"]


def test_changing_the_routing_applies_at_once_to_items_no_person_decided(scene):
    routed = label(scene, ["symptom"], [])
    decided = label(scene, [], ["screening"])
    adjudicate_item(
        item=decided,
        user=scene.adjudicator,
        labels=scene.world.labels(**AGREED),
        reason="other",
        version=0,
    )
    assert queued(scene) == [routed.pk]

    set_routing(scene, False)
    assert queued(scene) == []
    assert Decision.objects.get(item=routed).source == Decision.Source.UNANIMOUS
    assert Decision.objects.get(item=decided).source == Decision.Source.ADJUDICATED

    set_routing(scene, True)
    assert queued(scene) == [routed.pk]
    assert not Decision.objects.filter(item=routed).exists()
    assert Decision.objects.get(item=decided).source == Decision.Source.ADJUDICATED  # stands


def test_a_majority_is_not_decided_automatically_while_someone_is_unsure():
    scene = make_scene(k=3, annotators=3)
    set_majority_rule(study=scene.study, enabled=True)
    oom = {"screening": "relevant", "symptom": "oom"}
    marks = (["symptom"], [], [])
    item = None
    for person, codes, unsure in zip(scene.annotators, (AGREED, AGREED, oom), marks, strict=True):
        assignment = next_assignment(study=scene.study, annotator=person)
        item = assignment.item
        labels = scene.world.labels(**codes)
        submit_annotation(assignment=assignment, user=person, labels=labels, unsure=unsure)
    assert item is not None and queued(scene) == [item.pk]
    set_routing(scene, False)
    assert Decision.objects.get(item=item).source == Decision.Source.MAJORITY


def test_a_resubmit_without_the_mark_lets_the_rules_decide(scene):
    item = label(scene, ["symptom"], [])
    first = item.assignments.get(annotator=scene.annotators[0])
    submit_annotation(
        assignment=first, user=scene.annotators[0], labels=scene.world.labels(**AGREED)
    )
    assert Decision.objects.get(item=item).source == Decision.Source.UNANIMOUS
    assert ItemAgreement.objects.get(item=item).unsure_facets == []
    after = Change.objects.filter(annotation__assignment=first).order_by("at", "pk")
    assert [c.after.get("unsure") for c in after] == [["symptom"], None]  # the trail shows it


def test_the_queue_page_and_api_give_the_reason_and_filter_by_the_unsure_facet(scene):
    routed = label(scene, [], ["symptom"])
    oom = {"screening": "relevant", "symptom": "oom"}
    disputed = label(scene, [], [], codes=(AGREED, oom))
    client = Client()
    client.force_login(scene.adjudicator)
    url = reverse("adjudication:queue", args=[scene.study.pk])
    html = client.get(url).content.decode()
    row = html.split(f'href="/adjudication/items/{routed.pk}/"')[1].split("</tr>")[0]
    assert '<span class="tag unsure">unsure: Symptom</span>' in row
    facets = {f.key: f.pk for f in scene.world.version.facets.all()}
    by_symptom = client.get(url, {"facet": facets["symptom"]}).content.decode()
    assert f"/adjudication/items/{routed.pk}/" in by_symptom
    assert f"/adjudication/items/{disputed.pk}/" in by_symptom
    by_fix = client.get(url, {"facet": facets["fix"]}).content.decode()
    assert f"/adjudication/items/{routed.pk}/" not in by_fix

    data = api(scene.adjudicator).get(f"/api/studies/{scene.study.pk}/queue/").json()
    reasons = {r["item"]: (r["disagreeing_facets"], r["unsure_facets"]) for r in data["results"]}
    assert reasons == {routed.pk: ([], ["symptom"]), disputed.pk: (["symptom"], [])}
    filtered = api(scene.adjudicator).get(f"/api/studies/{scene.study.pk}/queue/", {"facet": "fix"})
    assert filtered.json()["count"] == 0


def test_the_adjudicate_page_marks_the_unsure_annotators_cell(scene):
    item = label(scene, ["symptom"], [])
    client = Client()
    client.force_login(scene.adjudicator)
    html = client.get(reverse("adjudication:item", args=[item.pk])).content.decode()
    symptom = html.split('data-facet-id="')[2].split("</tr>")[0]
    assert "Symptom" in symptom
    cells = symptom.split("<td ")[1:]
    assert ['<span class="tag unsure">unsure</span>' in c for c in cells] == [True, False]


def test_the_export_has_no_agreed_label_for_a_routed_item_until_a_person_decides(scene):
    routed = label(scene, ["symptom"], [])

    def final() -> pd.Series:
        out = io.BytesIO()
        export_dataset(study=scene.study, format="csv", out=out)
        frame = pd.read_csv(io.BytesIO(out.getvalue()))
        return frame[frame["item_id"] == routed.pk].iloc[0]

    row = final()
    assert pd.isna(row["decision_source"]) and pd.isna(row["symptom_l2"])
    assert row["unsure"] == "symptom"
    set_routing(scene, False)
    row = final()
    assert (row["decision_source"], row["symptom_l2"]) == ("unanimous", "hang")
