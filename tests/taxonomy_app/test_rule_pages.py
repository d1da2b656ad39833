"""Label rules on the codebook pages and API: the guideline and the version page print them, a
draft's owner adds and removes them (refusals name the field; a published version never
changes), and the diff shows rule changes."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from taxonomy_app import services
from taxonomy_app.models import LabelRule
from taxonomy_app.services.rules import add_rule, version_rules
from tests.factories import UserFactory
from tests.taxonomy_app.factories import published_with_rules

pytestmark = pytest.mark.django_db
REQUIRES = {
    "kind": "requires",
    "facet": "symptom",
    "when_facet": "screening",
    "when_categories": "relevant",
}


@pytest.fixture
def ruled(owner):  # type: ignore[no-untyped-def]
    return published_with_rules(user=owner)


@pytest.fixture
def draft(v1):  # type: ignore[no-untyped-def]
    return services.start_draft(codebook=v1.codebook)


def test_the_guideline_lists_each_facets_rules(owner_client, ruled):
    html = owner_client.get(reverse("taxonomy:guideline", args=[ruled.pk])).content.decode()

    symptom = html[html.index('id="facet-symptom"') : html.index('id="facet-fix"')]
    assert "Rules" in symptom
    assert "<li>Required when Screening is Relevant.</li>" in symptom
    assert "<li>Left empty when Screening is Not a bug.</li>" in symptom
    assert "<li>Choose a leaf category: groups are not selectable.</li>" in symptom
    assert "<li>At most one choice.</li>" in html[html.index('id="facet-fix"') :]
    assert "Required when" not in html[: html.index('id="facet-symptom"')]


def test_a_guideline_without_rules_prints_none(owner_client, v1):
    html = owner_client.get(reverse("taxonomy:guideline", args=[v1.pk])).content.decode()

    assert "facet-rules" not in html


def test_the_owner_adds_a_rule_to_a_draft_from_its_page(owner_client, draft):
    page = owner_client.get(reverse("taxonomy:version", args=[draft.pk])).content.decode()
    assert "No label rules." in page and "Add the rule" in page

    response = owner_client.post(reverse("taxonomy:rule_add", args=[draft.pk]), REQUIRES)

    assert response.status_code == 302
    assert version_rules(draft)[0].when_categories == ("relevant",)
    page = owner_client.get(reverse("taxonomy:version", args=[draft.pk])).content.decode()
    assert "required when Screening is Relevant" in page
    assert "Required when Screening is Relevant." in page  # under the facet too


def test_a_rule_that_does_not_fit_comes_back_with_the_field_named(owner_client, draft):
    bad = {**REQUIRES, "when_categories": "hang"}

    response = owner_client.post(reverse("taxonomy:rule_add", args=[draft.pk]), bad)

    text = response.content.decode()
    assert response.status_code == 400
    assert "&#x27;hang&#x27; is not a category of facet &#x27;screening&#x27;" in text
    assert 'id="id_when_categories"' in text
    assert not LabelRule.objects.filter(version=draft).exists()


def test_the_owner_removes_a_draft_rule(owner_client, draft):
    rule = add_rule(version=draft, kind="leaf_only", facet="symptom")

    response = owner_client.post(reverse("taxonomy:rule_delete", args=[rule.pk]))

    assert response.status_code == 302
    assert not LabelRule.objects.filter(version=draft).exists()


def test_a_published_versions_rules_never_change(owner_client, ruled):
    rule = LabelRule.objects.filter(version=ruled).first()

    owner_client.post(reverse("taxonomy:rule_delete", args=[rule.pk]))
    owner_client.post(reverse("taxonomy:rule_add", args=[ruled.pk]), REQUIRES)

    assert LabelRule.objects.filter(version=ruled).count() == 5
    page = owner_client.get(reverse("taxonomy:version", args=[ruled.pk])).content.decode()
    assert "Add the rule" not in page and ">Remove</button>" not in page


def test_only_the_owner_changes_rules(draft):
    other = Client()
    other.force_login(UserFactory(username="someone"))

    response = other.post(reverse("taxonomy:rule_add", args=[draft.pk]), REQUIRES)

    assert response.status_code == 403
    assert not LabelRule.objects.exists()


def test_the_api_lists_adds_and_removes_rules(owner_client, draft, ruled):
    url = reverse("api-rule-list", args=[draft.pk])
    body = {**REQUIRES, "when_categories": ["relevant"]}

    made = owner_client.post(url, body, content_type="application/json")
    bad = owner_client.post(
        url,
        {"kind": "max_choices", "facet": "fix", "max_choices": 0},
        content_type="application/json",
    )
    listed = owner_client.get(url).json()

    assert made.status_code == 201, made.json()
    assert made.json() | {"id": 0} == {
        "id": 0,
        "version": draft.pk,
        "kind": "requires",
        "facet": "symptom",
        "when_facet": "screening",
        "when_categories": ["relevant"],
        "categories": [],
        "max_choices": None,
    }
    assert bad.status_code == 400 and "field 'max_choices'" in bad.json()["detail"]
    unknown = owner_client.post(
        url, {"kind": "often", "facet": "fix"}, content_type="application/json"
    )
    assert unknown.status_code == 400
    assert "field 'kind': unknown rule kind 'often'" in unknown.json()["detail"]
    assert [r["kind"] for r in listed] == ["requires"]
    gone = owner_client.delete(reverse("api-rule-detail", args=[made.json()["id"]]))
    assert gone.status_code == 204 and not LabelRule.objects.filter(version=draft).exists()
    published = LabelRule.objects.filter(version=ruled).first()
    refused = owner_client.delete(reverse("api-rule-detail", args=[published.pk]))
    assert refused.status_code == 409
    assert (
        owner_client.post(
            reverse("api-rule-list", args=[ruled.pk]), body, content_type="application/json"
        ).status_code
        == 409
    )


def test_the_diff_shows_rules_added_and_removed(owner_client, ruled):
    draft = services.start_draft(codebook=ruled.codebook)
    assert services.diff_version(version=draft).is_empty  # the rules were copied as they are
    LabelRule.objects.filter(version=draft, kind="max_choices").delete()
    add_rule(version=draft, kind="exclusive", facet="fix", categories=["version", "config"])

    diff = services.diff_version(version=draft)
    page = owner_client.get(reverse("taxonomy:diff", args=[draft.pk])).content.decode()
    api = owner_client.get(reverse("api-version-diff", args=[draft.pk])).json()

    assert [c.text for c in diff.rules_added] == ["at most one of Fix version or Fix config"]
    assert [c.text for c in diff.rules_removed] == ["at most one choice"]
    assert "- new rule fix: at most one of Fix version or Fix config" in diff.summary()
    assert "- removed rule fix: at most one choice" in diff.summary()
    assert 'id="diff-rules"' in page and "at most one of Fix version or Fix config" in page
    assert api["rules_added"] == [
        {"facet": "fix", "text": "at most one of Fix version or Fix config"}
    ]
