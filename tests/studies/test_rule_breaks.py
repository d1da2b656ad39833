"""The annotations breaking a version's label rules, as PostgreSQL finds them, held equal to
reading every submitted label set and checking it in Python (`rules.violations`, the way the
page worked before it was fast) on planted label sets: every rule kind, annotations of the
version and of the one it was started from, drafts, and a change of the rules and the groups."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.urls import reverse

from annotator.studies.models import Annotation, AnnotationLabel
from annotator.studies.services import next_assignment, submit_annotation
from annotator.studies.usage import StudyLabelUsage
from taxonomy_app.models import Category, CodebookVersion, Facet
from taxonomy_app.rules import violations
from taxonomy_app.services import archive_category, start_draft
from taxonomy_app.services.rules import (
    SHOWN,
    add_rule,
    codes_per_facet,
    delete_rule,
    rule_breaks,
    version_facet_infos,
    version_rules,
)
from taxonomy_app.usage import RuleCheck, SubmittedLabels, label_usage
from tests.studies.factories import World, make_world


def checked_in_python(version: CodebookVersion, viewer: Any) -> list[tuple[int, list[Any]]]:
    """Per rule: the count and every breaking annotation in order, as the page found them
    before: all label sets read, each checked by `violations`."""
    rules = version_rules(version)
    infos = version_facet_infos(version)
    found: list[tuple[int, list[Any]]] = [(0, []) for _ in rules]
    versions = [version.pk] + ([version.based_on_id] if version.based_on_id else [])
    for labels in label_usage().submitted_labels(versions, viewer):
        for violation in violations(rules, labels.labels, infos):
            count, listed = found[violation.index]
            found[violation.index] = (count + 1, [*listed, shown(labels)])
    return found


def checked_in_the_database(version: CodebookVersion, viewer: Any) -> list[tuple[int, list[Any]]]:
    """Per rule: the count and every breaking annotation, page after page of the fast path."""
    out = []
    for index, first in enumerate(rule_breaks(version=version, viewer=viewer)):
        listed = [shown(labels) for labels in first.annotations]
        for page in range(2, first.pages + 1):
            later = rule_breaks(version=version, viewer=viewer, pages={index: page})[index]
            assert later.count == first.count and later.offset == (page - 1) * SHOWN
            listed += [shown(labels) for labels in later.annotations]
        out.append((first.count, listed))
    return out


def shown(labels: SubmittedLabels) -> tuple[Any, ...]:
    codes = {key: tuple(sorted(values)) for key, values in labels.labels.items()}
    return (labels.annotation, labels.study, labels.item, labels.url, sorted(codes.items()))


def plant(world: World, version: CodebookVersion, rng: random.Random) -> None:
    """Replace each submitted annotation's labels by a random set of `version`'s categories:
    empty facets, several categories in a single-choice facet, groups, everything the
    submit form would refuse; a sixth are made with `version` itself, a few turned drafts."""
    categories = list(Category.objects.filter(facet__version=version).select_related("facet"))
    for annotation in Annotation.objects.all():
        AnnotationLabel.objects.filter(annotation=annotation).delete()
        chosen = rng.sample(categories, rng.randint(0, 5))
        AnnotationLabel.objects.bulk_create(
            AnnotationLabel(annotation=annotation, facet=c.facet, category=c) for c in chosen
        )
        if rng.random() < 0.05:
            annotation.status = Annotation.Status.DRAFT
        if rng.random() < 0.17:
            annotation.codebook_version = version
        annotation.save()


def submit_all(world: World) -> None:
    for _ in world.issues:
        for person in world.annotators:
            assignment = next_assignment(study=world.study, annotator=person)
            if assignment is None:
                continue
            labels = world.labels(screening="relevant", symptom="hang")
            submit_annotation(assignment=assignment, user=person, labels=labels)


@pytest.fixture
def ruled(db) -> tuple[World, CodebookVersion]:  # type: ignore[no-untyped-def]
    """60 submitted annotations of v1, planted, and a draft with a rule of every kind."""
    world = make_world(items=20, k=3, annotators=3)
    submit_all(world)
    draft = start_draft(codebook=world.version.codebook)
    plant(world, world.version, random.Random(7))
    for annotation in Annotation.objects.filter(pk__in=Annotation.objects.all()[:10]):
        annotation.codebook_version = draft  # made with the draft: its own categories
        annotation.save()
        for label in AnnotationLabel.objects.filter(annotation=annotation):
            label.category = Category.objects.get(
                facet__version=draft, facet__key=label.facet.key, code=label.category.code
            )
            label.facet = Facet.objects.get(version=draft, key=label.facet.key)
            label.save()
    rules: list[dict[str, Any]] = [
        {"kind": "requires", "facet": "symptom", "when_facet": "screening",
         "when_categories": ["relevant", "not-a-bug"]},
        {"kind": "requires", "facet": "fix"},
        {"kind": "forbids", "facet": "fix", "when_facet": "screening",
         "when_categories": ["not-a-bug"]},
        {"kind": "leaf_only", "facet": "symptom"},
        {"kind": "leaf_only", "facet": "symptom", "categories": ["failure"]},
        {"kind": "exclusive", "facet": "symptom", "categories": ["hang", "oom", "slow"]},
        {"kind": "max_choices", "facet": "fix", "max_choices": 1},
        {"kind": "max_choices", "facet": "fix", "max_choices": 2},  # fix has two codes
    ]  # fmt: skip
    for rule in rules:
        add_rule(version=draft, **rule)
    return world, draft


def test_the_database_finds_what_checking_every_label_set_finds(ruled):
    world, draft = ruled

    found = checked_in_the_database(draft, world.owner)

    assert found == checked_in_python(draft, world.owner)
    assert all(count > 0 for count, _ in found[:4])  # the planted sets break the rules
    assert sum(count for count, _ in found) > SHOWN  # and one list spans pages


def test_after_the_rules_and_the_groups_change_it_still_finds_the_same(ruled):
    world, draft = ruled
    delete_rule(rule=draft.rules.order_by("order").first())
    add_rule(
        version=draft, kind="forbids", facet="symptom", when_facet="screening",
        when_categories=["not-a-bug"],
    )  # fmt: skip
    add_rule(version=draft, kind="exclusive", facet="fix", categories=["version", "config"])
    for code in ("hang", "oom", "crash"):  # "failure" is no group any more
        archive_category(category=Category.objects.get(facet__version=draft, code=code))

    found = checked_in_the_database(draft, world.owner)

    assert found == checked_in_python(draft, world.owner)
    assert found[2][0] == 0  # leaf_only: nothing left to refuse
    assert found[-1][0] > 0


def test_the_published_version_itself_and_nobody_elses_studies(ruled):
    world, draft = ruled
    published = world.version
    add_rule(version=draft, kind="leaf_only", facet="symptom")  # the draft's, not v1's

    for viewer in (world.owner, world.annotators[0]):
        assert checked_in_the_database(published, viewer) == checked_in_python(published, viewer)
        assert checked_in_the_database(draft, viewer) == checked_in_python(draft, viewer)
    assert all(count == 0 for count, _ in checked_in_the_database(draft, world.annotators[0]))


def test_the_page_lists_one_page_of_a_rule_and_links_the_next(client, ruled):
    world, draft = ruled
    AnnotationLabel.objects.filter(facet__key="fix").delete()  # rule 2: "requires fix"
    count = checked_in_python(draft, world.owner)[1][0]
    assert count > SHOWN
    url = reverse("taxonomy:rule_breaks", args=[draft.pk])
    client.force_login(world.owner)

    first = client.get(url).content.decode()
    second = client.get(url, {"rule": 2, "page": 2}).content.decode()

    section = first[first.index('id="rule-2"') : first.index('id="rule-3"')]
    assert f"{count} annotations" in section
    assert f"Annotations 1\N{EN DASH}{SHOWN} of {count}" in section
    assert "?rule=2&amp;page=2#rule-2" in section
    later = second[second.index('id="rule-2"') : second.index('id="rule-3"')]
    assert f"Annotations {SHOWN + 1}\N{EN DASH}{count} of {count}" in later
    assert "?rule=2&amp;page=1#rule-2" in later and "page=3" not in later
    assert section.count("<tr><td>") == SHOWN and later.count("<tr><td>") == count - SHOWN


def test_the_page_ignores_a_page_number_it_cannot_read(client, ruled):
    world, draft = ruled
    client.force_login(world.owner)

    response = client.get(
        reverse("taxonomy:rule_breaks", args=[draft.pk]), {"rule": "x", "page": "0"}
    )

    assert response.status_code == 200
    assert 'id="rule-1"' in response.content.decode()


def test_every_rule_is_checked_in_one_statement(ruled, django_assert_max_num_queries):
    world, draft = ruled
    rules = draft.rules.count()

    # the version's rules, facets, categories and codes per facet (4); the ids of the versions'
    # categories; one statement for every rule; the listed annotations and their labels (2)
    assert rules > 5
    with django_assert_max_num_queries(4 + 1 + 1 + 2):
        rule_breaks(version=draft, viewer=world.owner)


def test_the_sql_statement_answers_as_the_orm_queries_it_replaces(ruled):
    world, draft = ruled
    usage = StudyLabelUsage()
    infos = version_facet_infos(draft)
    codes = codes_per_facet(draft.codebook_id)
    checks = [
        RuleCheck(rule, infos[rule.facet].groups, codes=codes.get(rule.facet, 0), offset=offset)
        for rule in version_rules(draft)
        for offset in (0, 3)
    ]
    versions = [draft.pk, world.version.pk]

    by_sql = usage.rule_breaks(versions, checks, world.owner, shown=5)

    assert by_sql == usage._rule_breaks_by_orm(versions, checks, world.owner, shown=5)
    assert any(count > 5 for count, _ in by_sql)


def test_a_large_label_stores_breaks_are_counted_by_a_job_and_served_with_their_time(
    client, ruled, settings, monkeypatch
):
    """Past FIGURES_INLINE_MAX_ITEMS submitted annotations the breaks are figures: while the
    first count is under way the page says so and polls its region; then it shows what the
    request would have counted, with when it was counted."""
    from django.core.cache import cache

    from annotator.celery import app

    world, draft = ruled
    AnnotationLabel.objects.filter(facet__key="fix").delete()  # rule 2: "requires fix"
    expected = rule_breaks(version=draft, viewer=world.owner)[1]
    settings.FIGURES_INLINE_MAX_ITEMS = 0
    cache.clear()
    url = reverse("taxonomy:rule_breaks", args=[draft.pk])
    client.force_login(world.owner)
    # A job was sent and is counting: nothing to serve yet.
    monkeypatch.setattr("annotator.figures._lock_or_running", lambda *args: True)
    waiting = client.get(url).content.decode()
    polled = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'data-figures-status="computing"' in waiting and 'id="rule-1"' not in waiting
    assert 'hx-trigger="every 2s"' in waiting and "has no label rules" not in waiting
    assert polled.lstrip().startswith('<div id="rule-breaks"') and "<html" not in polled
    monkeypatch.undo()
    app.conf.task_always_eager = True  # the job runs in this process once it is sent
    try:
        counted = client.get(url).content.decode()
    finally:
        app.conf.task_always_eager = False
    assert 'data-figures-status="current"' in counted and "hx-trigger" not in counted
    section = counted[counted.index('id="rule-2"') : counted.index('id="rule-3"')]
    assert f"{expected.count} annotations" in section and expected.count > SHOWN
    assert section.count("<tr><td>") == len(expected.annotations) == SHOWN
