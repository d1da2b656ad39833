"""Label rules on submit: the service, the annotate page (htmx) and the API refuse label sets
that break the codebook's rules, naming the facet and the rule, and write nothing; drafts may
break them. The seed codebook's own rules refuse what its definitions forbid."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, Assignment
from annotator.studies.services import LabelErrors, next_assignment, save_draft, submit_annotation
from taxonomy_app.models import CodebookVersion
from taxonomy_app.services import start_draft
from taxonomy_app.services.rules import add_rule
from tests.factories import UserFactory
from tests.studies.factories import World, make_world
from tests.taxonomy_app.factories import published_with_rules

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world(db) -> World:  # type: ignore[no-untyped-def]
    return make_world(items=3, version=published_with_rules())


def start(world: World):
    person = world.annotators[0]
    return person, next_assignment(study=world.study, annotator=person)


def nothing_submitted() -> bool:
    return not Annotation.objects.filter(status="submitted").exists() and not (
        Assignment.objects.filter(status="submitted").exists()
    )


@pytest.mark.parametrize(
    ("codes", "errors"),
    [
        ({"screening": "relevant"}, {"symptom": "required when Screening is Relevant"}),
        (
            {"screening": "not-a-bug", "symptom": "hang", "fix": "version"},
            {"symptom": "Not a bug allows no symptom", "fix": "Not a bug allows no fix pattern"},
        ),
        (
            {"screening": "relevant", "symptom": "failure"},
            {"symptom": "a leaf category: choose one of Program failure's sub-categories"},
        ),
        (
            {"screening": "relevant", "symptom": "hang", "fix": ["version", "config"]},
            {"fix": "at most one choice (2 chosen)"},
        ),
    ],
)
def test_submit_breaking_a_rule_is_refused_by_facet_and_writes_nothing(world, codes, errors):
    person, assignment = start(world)

    with pytest.raises(LabelErrors) as refused:
        submit_annotation(assignment=assignment, user=person, labels=world.labels(**codes))

    assert refused.value.errors == errors
    assert nothing_submitted()


def test_a_draft_may_break_the_rules_and_a_complete_submit_passes(world):
    person, assignment = start(world)

    save_draft(assignment=assignment, user=person, labels=world.labels(screening="relevant"))
    assert Annotation.objects.get().status == "draft"
    submit_annotation(
        assignment=assignment, user=person, labels=world.labels(screening="relevant", symptom="oom")
    )

    assert Annotation.objects.get().status == "submitted"
    assert set(AnnotationLabel.objects.values_list("category__code", flat=True)) == {
        "relevant",
        "oom",
    }


def test_not_a_bug_alone_passes(world):
    person, assignment = start(world)

    submit_annotation(
        assignment=assignment, user=person, labels=world.labels(screening="not-a-bug")
    )

    assert Annotation.objects.get().status == "submitted"


def test_the_annotate_page_submit_returns_the_form_with_the_facets_message(client, world):
    person, assignment = start(world)
    client.force_login(person)
    data = {
        f"facet-{f}": ids
        for f, ids in world.labels(screening="relevant", symptom="failure").items()
    }

    response = client.post(reverse("studies:submit", args=[assignment.pk]), data, **HTMX)

    html = response.content.decode().strip()
    assert response.status_code == 200 and html.startswith('<form id="annotate-form"')
    assert 'id="error-symptom"' in html
    assert "a leaf category: choose one of Program failure&#x27;s sub-categories" in html
    assert "HX-Redirect" not in response
    assert nothing_submitted()


def test_the_api_submit_answers_400_with_the_rule_under_labels(world):
    person, assignment = start(world)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=person, name='t')[1]}")
    url = f"/api/assignments/{assignment.pk}/submit/"

    refused = client.post(url, {"labels": {"screening": ["relevant"]}}, format="json")
    forbidden = client.post(
        url, {"labels": {"screening": ["not-a-bug"], "symptom": ["hang"]}}, format="json"
    )

    assert refused.status_code == 400
    assert refused.data["labels"] == {"symptom": "required when Screening is Relevant"}
    assert forbidden.status_code == 400
    assert forbidden.data["labels"] == {"symptom": "Not a bug allows no symptom"}
    assert nothing_submitted()
    done = client.post(
        url, {"labels": {"screening": ["relevant"], "symptom": ["crash"]}}, format="json"
    )
    assert done.status_code == 200


def test_the_schema_gives_each_facet_its_rules_in_words(world):
    facets = {f.key: f for f in codebook_schema(world.version).facets}

    assert facets["symptom"].rules_text == (
        "required when Screening is Relevant",
        "left empty when Screening is Not a bug",
        "choose a leaf category: groups are not selectable",
    )
    assert facets["fix"].rules_text == (
        "left empty when Screening is Not a bug",
        "at most one choice",
    )
    assert facets["screening"].rules_text == ()


def seed_world() -> World:
    call_command("load_codebook", publish=True, stdout=io.StringIO())
    return make_world(
        items=2, version=CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")
    )


@pytest.mark.parametrize(
    ("codes", "facet", "message"),
    [
        ({"screening": "relevant"}, "symptom", "required when Screening is Relevant"),
        ({"screening": "relevant"}, "stage", "required when Screening is Relevant"),
        (
            {"screening": "not-a-bug", "symptom": "hang-timeout", "root_cause": "api-misuse"},
            "root-cause",
            "Not a bug allows no root cause",
        ),
        (
            {
                "screening": "relevant",
                "distributed": "yes",
                "stage": "inference",
                "symptom": "program-failure",
            },
            "symptom",
            "a leaf category: choose one of Program failure's sub-categories",
        ),
    ],
)
def test_the_seed_codebook_refuses_what_its_definitions_forbid(db, codes, facet, message):
    world = seed_world()
    person, assignment = start(world)

    with pytest.raises(LabelErrors) as refused:
        submit_annotation(assignment=assignment, user=person, labels=world.labels(**codes))

    assert refused.value.errors[facet] == message
    assert nothing_submitted()


def test_the_seed_codebook_takes_a_complete_relevant_label_set(db):
    world = seed_world()
    person, assignment = start(world)
    codes = {
        "screening": "relevant",
        "distributed": "yes",
        "stage": "training-evaluation",
        "symptom": "hang-timeout",
        "fix_pattern": ["fix-communication-configuration"],
    }

    submit_annotation(assignment=assignment, user=person, labels=world.labels(**codes))

    assert Annotation.objects.get().status == "submitted"


def test_a_new_versions_rules_list_the_submitted_annotations_that_break_them(client, db):
    world = make_world(items=3)  # the small codebook: no rules
    for person in world.annotators:
        assignment = next_assignment(study=world.study, annotator=person)
        submit_annotation(
            assignment=assignment, user=person, labels=world.labels(screening="relevant")
        )
    draft = start_draft(codebook=world.version.codebook)
    add_rule(
        version=draft,
        kind="requires",
        facet="symptom",
        when_facet="screening",
        when_categories=["relevant"],
    )
    add_rule(version=draft, kind="leaf_only", facet="symptom")
    url = reverse("taxonomy:rule_breaks", args=[draft.pk])
    client.force_login(world.owner)

    html = client.get(url).content.decode()

    item = Assignment.objects.filter(status="submitted").first().item
    section = html[html.index('id="rule-1"') : html.index('id="rule-2"')]
    assert "required when Screening is Relevant" in section
    assert "2 annotations" in section
    assert reverse("studies:item", args=[item.pk]) in section
    assert "0 annotations" in html[html.index('id="rule-2"') :]
    page = client.get(reverse("taxonomy:version", args=[draft.pk])).content.decode()
    assert url in page  # the version's page links to the list


def test_annotations_of_other_users_studies_are_neither_counted_nor_listed(client, db):
    world = make_world(items=3)
    person = world.annotators[0]
    submit_annotation(
        assignment=next_assignment(study=world.study, annotator=person),
        user=person,
        labels=world.labels(screening="relevant"),
    )
    draft = start_draft(codebook=world.version.codebook)
    add_rule(
        version=draft,
        kind="requires",
        facet="symptom",
        when_facet="screening",
        when_categories=["relevant"],
    )
    url = reverse("taxonomy:rule_breaks", args=[draft.pk])
    for viewer in (person, UserFactory(username="codebook-reader")):
        client.force_login(viewer)

        html = client.get(url).content.decode()

        assert "0 annotations" in html and "studies/items/" not in html
