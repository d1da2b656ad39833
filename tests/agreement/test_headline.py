# ruff: noqa: RUF001, RUF003 -- α is the notation of the statistics.
"""The declared headline: an owner declares the coefficient, facets and threshold before the
main round; the declaration is time-stamped and shown on the report and the dataset card; a
later change needs a reason and is recorded beside the original, which stays."""

from __future__ import annotations

import io
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from annotator.agreement.headline import HeadlineError, declare_headline, figures
from annotator.agreement.models import HeadlineDeclaration
from annotator.exports.services import export_dataset
from annotator.studies.models import Membership
from annotator.studies.services import add_member
from tests.agreement.factories import labelled_world
from tests.agreement.test_views import computed
from tests.factories import UserFactory
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db


def as_user(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def page_text(response) -> str:  # type: ignore[no-untyped-def]
    return unescape(response.content.decode())


def test_a_declaration_before_labeling_is_shown_on_the_report_with_its_date() -> None:
    world = make_world(items=3, k=2, annotators=2)
    client = as_user(world.owner)
    url = reverse("agreement:headline", args=[world.study.pk])
    data = {"coefficient": "krippendorff_alpha", "facets": ["symptom"], "threshold": "0.8"}
    assert client.post(url, data).status_code == 302
    declared = HeadlineDeclaration.objects.get(study=world.study)
    assert (declared.facets, declared.threshold, declared.after_labeling_started) == (
        ["symptom"],
        0.8,
        False,
    )
    report = page_text(client.get(reverse("agreement:study", args=[world.study.pk])))
    assert "Declared headline: Krippendorff's α ≥ 0.8 on symptom, declared " in report
    assert f"{declared.declared_at:%Y-%m-%d}" in report
    assert "by study-owner, before any main-round label" in report


def test_a_change_needs_a_reason_and_the_original_stays_on_report_and_card() -> None:
    world = labelled_world(items=8, annotators=2)
    owner = world.owner
    url = reverse("agreement:headline", args=[world.study.pk])
    first = {"coefficient": "krippendorff_alpha", "facets": ["symptom", "screening"]}
    client = as_user(owner)
    assert client.post(url, {**first, "threshold": "0.8"}).status_code == 302
    change = {"coefficient": "gwet_ac1", "facets": ["symptom"], "threshold": "0.7"}
    refused = client.post(url, change)
    assert refused.status_code == 400
    assert "say why the headline changes" in page_text(refused)
    assert HeadlineDeclaration.objects.filter(study=world.study).count() == 1
    same = client.post(url, {**first, "threshold": "0.8", "reason": "again"})
    assert "nothing changed" in page_text(same)
    reason = "α is undefined on a facet this prevalent; AC1 as Gwet advises"
    assert client.post(url, {**change, "reason": reason}).status_code == 302
    original, current = HeadlineDeclaration.objects.filter(study=world.study)
    assert original.facets == ["screening", "symptom"]  # codebook order
    assert current.after_labeling_started  # labelled_world labels before anything is declared

    run = computed(world, round=world.round)
    report = page_text(as_user(owner).get(reverse("agreement:run", args=[run.pk])))
    assert "Declared headline: Gwet's AC1 ≥ 0.7 on symptom" in report
    assert "after main-round labeling had started" in report
    assert "Changed from the original: Krippendorff's α ≥ 0.8 on screening, symptom" in report
    assert reason in report
    stored = run.facet_result("symptom")["coefficients"]["gwet_ac1"]
    (figure,) = figures(current, run)
    assert figure.value == stored["value"] and figure.n == stored["n_pairable_units"]
    assert figure.meets == (stored["ci"][0] >= 0.7)
    assert f"{stored['value']:.3f}" in report

    card = export_dataset(study=world.study, format="csv", out=io.BytesIO()).card
    assert "- Declared headline: Gwet's AC1 ≥ 0.7 on symptom" in card
    assert "- Changed from the original: Krippendorff's α ≥ 0.8 on screening, symptom" in card
    assert f"- symptom: {stored['value']:.3f}" in card and figure.judgement in card


def test_a_card_says_when_nothing_was_declared() -> None:
    world = labelled_world(items=4, annotators=2)
    card = export_dataset(study=world.study, format="csv", out=io.BytesIO()).card
    assert "- Declared headline: none was declared for this study." in card


def test_bad_declarations_name_the_field_and_write_nothing() -> None:
    world = make_world(items=2, k=2, annotators=2)
    cases = [
        ({"coefficient": "best_one", "facets": ["symptom"], "threshold": 0.8}, "'coefficient'"),
        ({"coefficient": "fleiss_kappa", "facets": ["nope"], "threshold": 0.8}, "no facet 'nope'"),
        ({"coefficient": "fleiss_kappa", "facets": [], "threshold": 0.8}, "at least one facet"),
        ({"coefficient": "fleiss_kappa", "facets": ["symptom"], "threshold": 1.5}, "'threshold'"),
    ]
    for fields, message in cases:
        with pytest.raises(HeadlineError) as caught:
            declare_headline(study=world.study, user=world.owner, **fields)
        assert message in str(caught.value)
    assert not HeadlineDeclaration.objects.exists()


def test_only_owners_declare_adjudicators_read_and_annotators_get_404() -> None:
    world = make_world(items=2, k=2, annotators=2)
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    url = reverse("agreement:headline", args=[world.study.pk])
    data = {"coefficient": "fleiss_kappa", "facets": ["symptom"], "threshold": "0.6"}
    assert as_user(world.annotators[0]).get(url).status_code == 404
    assert as_user(adjudicator).get(url).status_code == 200
    assert as_user(adjudicator).post(url, data).status_code == 404
    assert as_user(UserFactory(username="stranger")).get(url).status_code == 404
    assert not HeadlineDeclaration.objects.exists()
