"""The labeling loop's hand-written loads (studies.sql.own_assignment, annotator.sql.Columns) give
the same objects as the ORM's select_related would, relations included."""

from __future__ import annotations

import pytest
from django.http import Http404

from annotator.studies.access import own_assignment_or_404
from annotator.studies.models import Annotation, Assignment
from annotator.studies.services import next_assignment, save_draft

pytestmark = pytest.mark.django_db


def fields(instance):
    """Every loaded concrete field (deferred ones are not in __dict__)."""
    return {
        f.attname: getattr(instance, f.attname)
        for f in type(instance)._meta.concrete_fields
        if f.attname in instance.__dict__
    }


@pytest.mark.parametrize("draft", [False, True], ids=["no-annotation", "draft"])
def test_the_page_load_matches_the_orm(world, draft, django_assert_num_queries):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    if draft:
        save_draft(assignment=assignment, user=a, labels=world.labels(symptom="hang"), notes="n")
    orm = Assignment.objects.select_related(
        "item__issue__repository", "item__round", "item__study__codebook_version", "annotation"
    ).get(pk=assignment.pk)
    with django_assert_num_queries(2):  # the assignment's five tables, then its round's three
        loaded = own_assignment_or_404(a, assignment.pk)
    with django_assert_num_queries(0):  # every relation the page shows is in place
        pairs = [
            (loaded, orm),
            (loaded.item, orm.item),
            (loaded.item.issue.repository, orm.item.issue.repository),
            (loaded.item.round, orm.item.round),
            (loaded.item.study, orm.item.study),
            (loaded.item.study.codebook_version, orm.item.study.codebook_version),
        ]
        issue = loaded.item.issue
        assert loaded.item.study is loaded.item.round.study
        if draft:
            pairs.append((loaded.annotation, orm.annotation))
            assert loaded.annotation.assignment is loaded
        else:
            with pytest.raises(Annotation.DoesNotExist):
                loaded.annotation  # noqa: B018 (the access is the test)
    for ours, theirs in pairs:
        assert fields(ours) == fields(theirs), type(ours).__name__
    shown = fields(issue)
    assert "raw" not in shown and "search_vector" not in shown  # deferred: never sent to the page
    assert {k: v for k, v in fields(orm.item.issue).items() if k in shown} == shown
    assert issue.labels == orm.item.issue.labels and isinstance(issue.labels, list)  # JSON decoded
    assert issue.raw == orm.item.issue.raw  # a deferred field still loads on access


def test_the_write_load_matches_the_orm(world, django_assert_num_queries):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    orm = Assignment.objects.select_related("item__study__codebook_version").get(pk=assignment.pk)
    with django_assert_num_queries(1):
        loaded = own_assignment_or_404(a, assignment.pk, page=False)
        assert fields(loaded) == fields(orm)
        assert fields(loaded.item) == fields(orm.item)
        assert fields(loaded.item.study) == fields(orm.item.study)
        version = loaded.item.study.codebook_version
        assert fields(version) == fields(orm.item.study.codebook_version)


@pytest.mark.parametrize("page", [True, False], ids=["page", "write"])
def test_another_annotators_assignment_is_not_found(world, page):
    assignment = next_assignment(study=world.study, annotator=world.annotators[0])
    with pytest.raises(Http404):
        own_assignment_or_404(world.annotators[1], assignment.pk, page=page)
    with pytest.raises(Http404):
        own_assignment_or_404(world.annotators[0], assignment.pk + 1000, page=page)
