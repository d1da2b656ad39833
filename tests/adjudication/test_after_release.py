# ruff: noqa: RUF002, RUF003 -- α is the notation of the statistics.
"""Blind labels are frozen once an item is released for discussion.

Two annotators disagree on an item; the owner releases it; the second reads the first's labels
and submits again to match. The blind labels, the item's disagreement, its place in the queue,
the agreement run's α and the export stay as they were; the new labels are a revision beside
the blind ones, recorded in the item's history, shown on the adjudicate and annotate pages,
and counted only in the separate after-discussion agreement."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.test import Client
from django.urls import reverse

from annotator.adjudication.models import Change, ItemAgreement
from annotator.adjudication.services import disagreement_queue, release_item
from annotator.agreement.discussion import after_discussion
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.services import export_dataset
from annotator.studies.models import Annotation, AnnotationLabel, Assignment
from annotator.studies.services import submit_annotation
from tests.adjudication.helpers import Scene, label_next, submit
from tests.studies.test_api import api

pytestmark = pytest.mark.django_db


def blind_codes(annotation: Annotation) -> list[tuple[str, str]]:
    rows = AnnotationLabel.objects.filter(annotation=annotation)
    return sorted(rows.values_list("facet__key", "category__code"))


def symptom_alpha(scene: Scene) -> float | None:
    run = start_agreement_run(study=scene.study, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    return run.facet_result("symptom")["coefficients"]["krippendorff_alpha"]["value"]


def disagree_then_release(scene: Scene) -> tuple[object, Assignment]:
    """Two items: one agreed (so α is defined), then one where the annotators differ, which
    the owner releases. Returns that item and the second annotator's assignment of it."""
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    assert release_item(item=item)
    second = Assignment.objects.get(item=item, annotator=scene.annotators[1])
    return item, second


def test_a_submit_after_release_is_a_revision_and_the_disagreement_stays(scene: Scene) -> None:
    item, second = disagree_then_release(scene)
    annotation = second.annotation
    blind = blind_codes(annotation)
    alpha_before = symptom_alpha(scene)
    assert list(disagreement_queue(study=scene.study).values_list("item", flat=True)) == [item.pk]

    submit(scene, second, scene.annotators[1], notes="agreed after reading", symptom="hang")

    annotation.refresh_from_db()
    assert blind_codes(annotation) == blind  # the blind labels as first submitted
    assert ("symptom", "oom") in blind
    assert annotation.revision["labels"] == {"screening": ["relevant"], "symptom": ["hang"]}
    assert annotation.revision["notes"] == "agreed after reading"
    assert annotation.revision["count"] == 1
    assert annotation.notes == f"notes of {scene.annotators[1].username}"
    agreement = ItemAgreement.objects.get(item=item)
    assert list(agreement.disagreeing_facets.values_list("key", flat=True)) == ["symptom"]
    assert list(disagreement_queue(study=scene.study).values_list("item", flat=True)) == [item.pk]
    assert symptom_alpha(scene) == alpha_before
    out = io.BytesIO()
    export_dataset(study=scene.study, format="csv", out=out, table="long")
    long = pd.read_csv(io.BytesIO(out.getvalue()))
    mine = long[
        (long["row_kind"] == "annotation")
        & (long["number"] == item.issue.number)
        & (long["annotator"] == scene.annotators[1].username)
        & (long["facet"] == "symptom")
    ]
    assert list(mine["category"]) == ["oom"]  # the export keeps the blind label
    after = long[
        (long["row_kind"] == "after_discussion")
        & (long["number"] == item.issue.number)
        & (long["annotator"] == scene.annotators[1].username)
    ]
    assert sorted(zip(after["facet"], after["category"], strict=True)) == [
        ("screening", "relevant"),
        ("symptom", "hang"),
    ]
    assert set(after["category_l1"]) == {"relevant", "failure"}
    assert set(after["notes"]) == {"agreed after reading"}

    change = Change.objects.filter(annotation=annotation).order_by("-at", "-pk").first()
    assert change.after["labels"]["symptom"] == ["oom"]
    assert change.after["revision"]["labels"]["symptom"] == ["hang"]


def test_the_after_discussion_agreement_is_reported_apart(scene: Scene) -> None:
    item, second = disagree_then_release(scene)
    facet = next(f for f in after_discussion(scene.study) if f.key == "symptom")
    assert (facet.items, facet.revised, facet.blind.unanimous, facet.after.unanimous) == (
        1,
        0,
        0,
        0,
    )

    submit(scene, second, scene.annotators[1], symptom="hang")

    facet = next(f for f in after_discussion(scene.study) if f.key == "symptom")
    assert (facet.items, facet.revised, facet.blind.unanimous, facet.after.unanimous) == (
        1,
        1,
        0,
        1,
    )
    screening = next(f for f in after_discussion(scene.study) if f.key == "screening")
    assert (screening.revised, screening.after.unanimous) == (0, 1)

    client = Client()
    client.force_login(scene.owner)
    page = client.get(reverse("agreement:study", args=[scene.study.pk])).content.decode()
    assert "After discussion" in page and "data-after-discussion" in page
    adjudicate = client.get(reverse("adjudication:item", args=[item.pk])).content.decode()
    assert "data-revised" in adjudicate and "symptom: hang" in adjudicate


def test_the_annotate_page_says_so_and_shows_the_revision(scene: Scene) -> None:
    _item, second = disagree_then_release(scene)
    client = Client()
    client.force_login(scene.annotators[1])
    page = client.get(second.get_absolute_url()).content.decode()
    assert "data-revising" in page and "stay as they were" in page
    submit(scene, second, scene.annotators[1], notes="after", symptom="hang")
    page = client.get(second.get_absolute_url()).content.decode()
    hang = scene.world.category("symptom", "hang")
    oom = scene.world.category("symptom", "oom")
    assert f'value="{hang.pk}" checked' in page or f'value="{hang.pk}"  checked' in page
    assert f'value="{oom.pk}" checked' not in page
    assert "revised 1 time" in page


def test_a_revision_still_obeys_the_codebook(scene: Scene) -> None:
    _item, second = disagree_then_release(scene)
    labels = scene.world.labels(screening="relevant", symptom=["hang", "oom"])  # single choice
    with pytest.raises(Exception, match="symptom"):
        submit_annotation(assignment=second, user=scene.annotators[1], labels=labels)
    second.annotation.refresh_from_db()
    assert second.annotation.revision is None


def test_before_release_a_resubmit_still_changes_the_labels(scene: Scene) -> None:
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    second = Assignment.objects.get(item=item, annotator=scene.annotators[1])
    submit(scene, second, scene.annotators[1], symptom="hang")
    annotation = Annotation.objects.get(assignment=second)
    assert ("symptom", "hang") in blind_codes(annotation)
    assert annotation.revision is None


def test_the_api_submits_a_revision_after_release_and_shows_it(scene: Scene) -> None:
    _item, second = disagree_then_release(scene)
    client = api(scene.annotators[1])
    body = {"labels": {"screening": ["relevant"], "symptom": ["hang"]}}
    answer = client.post(f"/api/assignments/{second.pk}/submit/", body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["revision"]["labels"]["symptom"] == ["hang"]
    assert ("symptom", "oom") in blind_codes(Annotation.objects.get(assignment=second))
    shown = client.get(f"/api/assignments/{second.pk}/").json()
    assert shown["revision"]["count"] == 1
