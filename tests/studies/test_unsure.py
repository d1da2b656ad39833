"""The "unsure" mark per facet: saved with drafts and submits (service, page, API) and shown
back, refused for a facet the codebook does not have (nothing written), never carried by the
pickers kept per codebook version into another annotation's page; the study's routing setting
on its edit page and in the API; the dashboard's and the progress API's counts."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotator.adjudication.models import Change
from annotator.studies.errors import UnsureError
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Study
from annotator.studies.services import next_assignment, save_draft, submit_annotation
from tests.studies.test_api import api

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


class UnsureBoxes(HTMLParser):
    """The page's `unsure` checkboxes: facet key → (checked, accessible name)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.boxes: dict[str, tuple[bool, str]] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "input" and found.get("name") == "unsure":
            assert found["type"] == "checkbox"
            self.boxes[found["value"] or ""] = ("checked" in found, found["aria-label"] or "")

    @property
    def checked(self) -> list[str]:
        return [key for key, (checked, _) in self.boxes.items() if checked]


def boxes(client, assignment) -> UnsureBoxes:  # type: ignore[no-untyped-def]
    response = client.get(assignment.get_absolute_url())
    assert response.status_code == 200
    return UnsureBoxes(response.content.decode())


def start(world, index=0):  # type: ignore[no-untyped-def]
    person = world.annotators[index]
    return person, next_assignment(study=world.study, annotator=person)


def posted(world, unsure=(), **codes):  # type: ignore[no-untyped-def]
    labels = {f"facet-{f}": ids for f, ids in world.labels(**codes).items()}
    return labels | {"seconds": "3", "unsure": list(unsure)}


# --- the service ------------------------------------------------------------------------------
def test_drafts_and_submits_keep_the_unsure_facets_in_the_codebooks_order(world):
    a, assignment = start(world)
    labels = world.labels(screening="relevant", symptom="hang")
    save_draft(assignment=assignment, user=a, labels=labels, unsure=["fix", "screening", "fix"])
    assert Annotation.objects.get().unsure == ["screening", "fix"]  # fix: none chosen
    submit_annotation(assignment=assignment, user=a, labels=labels, unsure=["symptom"])
    annotation = Annotation.objects.get()
    assert (annotation.status, annotation.unsure) == ("submitted", ["symptom"])
    submit_annotation(assignment=assignment, user=a, labels=labels)
    assert Annotation.objects.get().unsure == []  # each save says what is unsure now


@pytest.mark.parametrize("save", [save_draft, submit_annotation], ids=["draft", "submit"])
def test_an_unknown_unsure_facet_is_refused_by_name_and_nothing_is_written(world, save):
    a, assignment = start(world)
    with pytest.raises(UnsureError) as refused:
        save(
            assignment=assignment,
            user=a,
            labels=world.labels(screening="relevant"),
            unsure=["symptom", "colour"],
        )
    assert "field 'unsure': no facet 'colour' in codebook version 1" in str(refused.value)
    assert "facets: screening, symptom, fix" in str(refused.value)
    assert not Annotation.objects.exists() and not AnnotationLabel.objects.exists()
    assert not Change.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ASSIGNED


# --- the annotate page ------------------------------------------------------------------------
def test_the_page_labels_each_unsure_box_and_shows_the_saved_ones_checked(client, world):
    a, assignment = start(world)
    client.force_login(a)
    page = boxes(client, assignment)
    assert page.boxes == {
        "screening": (False, "Unsure about Screening"),
        "symptom": (False, "Unsure about Symptom"),
        "fix": (False, "Unsure about Fix pattern"),
    }
    draft = client.post(
        reverse("studies:draft", args=[assignment.pk]),
        posted(world, unsure=["symptom"], screening="relevant"),
        **HTMX,
    )
    assert draft.status_code == 200 and "Draft saved" in draft.content.decode()
    assert Annotation.objects.get().unsure == ["symptom"]
    assert boxes(client, assignment).checked == ["symptom"]

    submitted = client.post(
        reverse("studies:submit", args=[assignment.pk]),
        posted(world, unsure=["fix", "symptom"], screening="relevant", symptom="hang"),
    )
    assert submitted.status_code == 302
    annotation = Annotation.objects.get()
    assert (annotation.status, annotation.unsure) == ("submitted", ["symptom", "fix"])
    assert boxes(client, assignment).checked == ["symptom", "fix"]


def test_the_page_refuses_an_unknown_unsure_facet_by_name_and_writes_nothing(client, world):
    a, assignment = start(world)
    client.force_login(a)
    data = posted(world, unsure=["colour"], screening="relevant")
    draft = client.post(reverse("studies:draft", args=[assignment.pk]), data, **HTMX)
    assert "Not saved: field &#x27;unsure&#x27;: no facet &#x27;colour&#x27;" in (
        draft.content.decode()
    )
    response = client.post(reverse("studies:submit", args=[assignment.pk]), data)
    assert response.status_code == 400
    assert "no facet &#x27;colour&#x27; in codebook version 1" in response.content.decode()
    assert not Annotation.objects.exists()


def test_a_form_with_errors_keeps_the_posted_unsure_boxes(client, world):
    a, assignment = start(world)
    client.force_login(a)
    response = client.post(
        reverse("studies:submit", args=[assignment.pk]),
        posted(world, unsure=["screening"], symptom="hang"),  # screening is required
        **HTMX,
    )
    assert response.status_code == 200
    form = UnsureBoxes(response.content.decode())
    assert form.checked == ["screening"] and set(form.boxes) == {"screening", "symptom", "fix"}


def test_one_annotations_unsure_box_never_shows_on_anothers_page(client, world):
    """The facet pickers are kept per codebook version: a checked box must not travel."""
    pages = {}
    for index, marks in enumerate((["symptom"], [])):
        person, assignment = start(world, index)
        save_draft(
            assignment=assignment, user=person, labels=world.labels(symptom="hang"), unsure=marks
        )
        pages[person.pk] = (assignment, marks)
    for person in world.annotators * 2:
        client.force_login(person)
        assignment, marks = pages[person.pk]
        assert boxes(client, assignment).checked == marks


def test_the_shortcuts_dialog_and_the_boxes_name_the_key(client, world):
    a, assignment = start(world)
    client.force_login(a)
    html = client.get(assignment.get_absolute_url()).content.decode()
    assert "<dt><kbd>Shift</kbd>+<kbd>U</kbd></dt><dd>unsure about the current facet" in html
    assert html.count("Unsure <kbd>Shift</kbd>+<kbd>U</kbd></label>") == 3


# --- the API ----------------------------------------------------------------------------------
def test_the_api_saves_unsure_with_drafts_and_submits_and_shows_it(world):
    a = api(world.annotators[0])
    given = a.post(f"/api/studies/{world.study.pk}/next-item/").data
    assignment = given["id"]
    assert given["unsure"] == []  # no annotation yet
    draft = a.put(
        f"/api/assignments/{assignment}/draft/",
        {"labels": {"symptom": ["hang"]}, "unsure": ["symptom", "screening"]},
        format="json",
    )
    assert draft.status_code == 200 and draft.data["unsure"] == ["screening", "symptom"]
    done = a.post(
        f"/api/assignments/{assignment}/submit/",
        {"labels": {"screening": ["relevant"]}, "unsure": ["fix"]},
        format="json",
    )
    assert done.status_code == 200
    assert (done.data["status"], done.data["unsure"]) == ("submitted", ["fix"])
    listed = a.get(f"/api/studies/{world.study.pk}/annotations/").data["results"]
    assert [row["unsure"] for row in listed] == [["fix"]]
    assert a.get(f"/api/assignments/{assignment}/").data["unsure"] == ["fix"]
    mine = a.get(f"/api/studies/{world.study.pk}/my-assignments/").data["results"]
    assert [row["unsure"] for row in mine] == [["fix"]]
    owner = api(world.owner).get(f"/api/studies/{world.study.pk}/annotations/").data
    assert [row["unsure"] for row in owner["results"]] == [["fix"]]


def test_the_api_refuses_an_unknown_unsure_facet_by_name_and_writes_nothing(world):
    a = api(world.annotators[0])
    assignment = a.post(f"/api/studies/{world.study.pk}/next-item/").data["id"]
    body = {"labels": {"screening": ["relevant"]}, "unsure": ["colour"]}
    for refused in (
        a.put(f"/api/assignments/{assignment}/draft/", body, format="json"),
        a.post(f"/api/assignments/{assignment}/submit/", body, format="json"),
    ):
        assert refused.status_code == 400
        assert "no facet 'colour' in codebook version 1" in refused.data["unsure"][0]
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(pk=assignment).status == Assignment.Status.ASSIGNED


# --- the study's routing setting --------------------------------------------------------------
def test_the_owner_turns_the_routing_off_and_on_on_the_edit_page(client, world):
    client.force_login(world.owner)
    url = reverse("studies:edit", args=[world.study.pk])
    page = client.get(url).content.decode()
    assert 'name="route_unsure_to_adjudication"' in page and "checked" in page
    assert "Send unsure labels to adjudication" in page
    study = world.study
    form = {"name": study.name, "overlap_k": study.overlap_k, "guidelines": ""}
    assert client.post(url, form).status_code == 302  # an unticked box is not sent
    assert Study.objects.get(pk=study.pk).route_unsure_to_adjudication is False
    client.post(url, form | {"route_unsure_to_adjudication": "on"})
    assert Study.objects.get(pk=study.pk).route_unsure_to_adjudication is True
    client.force_login(world.annotators[0])
    assert client.post(url, form).status_code == 404
    assert Study.objects.get(pk=study.pk).route_unsure_to_adjudication is True


def test_the_api_reads_and_patches_the_routing_for_owners_only(world):
    url = f"/api/studies/{world.study.pk}/"
    owner = api(world.owner)
    assert owner.get(url).data["route_unsure_to_adjudication"] is True
    patched = owner.patch(url + "update/", {"route_unsure_to_adjudication": False}, format="json")
    assert patched.status_code == 200, patched.data
    assert patched.data["route_unsure_to_adjudication"] is False
    renamed = owner.patch(url + "update/", {"name": "Renamed"}, format="json")
    assert renamed.data["route_unsure_to_adjudication"] is False  # omitted: kept
    annotator = api(world.annotators[0])
    refused = annotator.patch(url + "update/", {"route_unsure_to_adjudication": True})
    assert refused.status_code == 404
    assert Study.objects.get(pk=world.study.pk).route_unsure_to_adjudication is False


# --- the dashboard and the progress API -------------------------------------------------------
def test_the_dashboard_counts_submitted_unsure_marks_per_facet_and_annotator(client, world):
    a, b = world.annotators
    labels = world.labels(screening="relevant")
    for unsure in (["symptom", "fix"], ["symptom"]):
        assignment = next_assignment(study=world.study, annotator=a)
        submit_annotation(assignment=assignment, user=a, labels=labels, unsure=unsure)
    draft = next_assignment(study=world.study, annotator=b)  # a draft never counts
    save_draft(assignment=draft, user=b, labels=labels, unsure=["screening", "symptom"])
    client.force_login(world.owner)
    html = client.get(reverse("studies:dashboard", args=[world.study.pk])).content.decode()
    assert '<tr data-facet="screening"><td>Screening</td><td>0</td></tr>' in html
    assert '<tr data-facet="symptom"><td>Symptom</td><td>2</td></tr>' in html
    assert '<tr data-facet="fix"><td>Fix pattern</td><td>1</td></tr>' in html
    assert "<strong>2</strong> submitted annotations with any" in html
    rows = {
        person.username: html.split(f'data-annotator="{person.username}"')[1].split("</tr>")[0]
        for person in (a, b)
    }
    assert rows[a.username].endswith("<td data-unsure-count>2</td>")
    assert rows[b.username].endswith("<td data-unsure-count>0</td>")
    progress = api(world.owner).get(f"/api/studies/{world.study.pk}/progress/").data
    assert progress[0]["unsure"] == {"screening": 0, "symptom": 2, "fix": 1}
