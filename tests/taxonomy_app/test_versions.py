"""Versions: drafts copy the published version, published versions never change, codes unique."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from taxonomy_app import services
from taxonomy_app.errors import CodebookError, PublishedVersionError
from taxonomy_app.models import Category, CodebookVersion, Proposal
from tests.taxonomy_app.factories import CategoryFactory, category

pytestmark = pytest.mark.django_db


def hang(version):  # type: ignore[no-untyped-def]
    return category(version, "symptom", "hang")


EDITS_OF_A_PUBLISHED_VERSION = [
    ("add", lambda v: services.add_category(facet=v.facets.get(key="symptom"), name="New")),
    ("update", lambda v: services.update_category(category=hang(v), definition="Changed")),
    ("rename", lambda v: services.update_category(category=hang(v), name="Hang or timeout")),
    ("move", lambda v: services.move_category(category=hang(v), parent=None)),
    ("reorder", lambda v: services.reorder_category(category=hang(v), direction="down")),
    ("archive", lambda v: services.archive_category(category=hang(v))),
    (
        "merge",
        lambda v: services.merge_categories(source=hang(v), target=category(v, "symptom", "oom")),
    ),
    ("split", lambda v: services.split_category(source=hang(v), names=["A", "B"])),
    ("delete", lambda v: services.delete_category(category=hang(v))),
    (
        "facet",
        lambda v: services.update_facet(
            facet=v.facets.first(), name="X", kind="single", required=True
        ),
    ),
    ("publish again", lambda v: services.publish_version(version=v)),
    ("discard", lambda v: services.discard_draft(version=v)),
]


@pytest.mark.parametrize(
    ("case", "edit"), EDITS_OF_A_PUBLISHED_VERSION, ids=[c[0] for c in EDITS_OF_A_PUBLISHED_VERSION]
)
def test_published_version_cannot_change_through_any_service(v1, case, edit):
    before = list(Category.objects.filter(facet__version=v1).values())

    with pytest.raises(PublishedVersionError, match="is published and cannot change"):
        edit(v1)

    assert list(Category.objects.filter(facet__version=v1).values()) == before
    assert CodebookVersion.objects.get(pk=v1.pk).is_published


def test_starting_a_draft_copies_every_category_with_its_origin(v1, django_assert_max_num_queries):
    with django_assert_max_num_queries(15):
        draft = services.start_draft(codebook=v1.codebook)

    assert (draft.number, draft.status, draft.based_on) == (2, "draft", v1)
    copies = Category.objects.filter(facet__version=draft).select_related("origin", "parent")
    assert copies.count() == Category.objects.filter(facet__version=v1).count()
    for copy in copies:
        assert (copy.code, copy.name, copy.definition) == (
            copy.origin.code,
            copy.origin.name,
            copy.origin.definition,
        )
        assert (copy.parent.origin_id if copy.parent else None) == copy.origin.parent_id


def test_starting_a_draft_twice_returns_the_same_draft(v1):
    first = services.start_draft(codebook=v1.codebook)

    assert services.start_draft(codebook=v1.codebook) == first


def test_database_allows_one_draft_per_codebook(v1):
    services.start_draft(codebook=v1.codebook)

    with pytest.raises(IntegrityError), transaction.atomic():
        CodebookVersion.objects.create(codebook=v1.codebook, number=9)


def test_codes_are_unique_per_facet_and_version(v1):
    facet = v1.facets.get(key="symptom")

    with pytest.raises(IntegrityError), transaction.atomic():
        CategoryFactory(facet=facet, code="hang")
    # The same code in another facet, and in another version, is fine.
    CategoryFactory(facet=v1.facets.get(key="fix"), code="hang")
    draft = services.start_draft(codebook=v1.codebook)
    assert category(draft, "symptom", "hang").code == "hang"


def test_service_refuses_a_duplicate_code_with_the_field_named(v1):
    draft = services.start_draft(codebook=v1.codebook)
    facet = draft.facets.get(key="symptom")

    with pytest.raises(
        CodebookError, match="field 'code': 'hang' is already used in facet 'symptom'"
    ):
        services.add_category(facet=facet, name="Another hang", code="hang")
    with pytest.raises(CodebookError, match="field 'code': 'oom' is already used"):
        services.update_category(category=category(draft, "symptom", "hang"), code="oom")


def test_new_category_code_is_made_from_the_name_and_kept_unique(v1):
    draft = services.start_draft(codebook=v1.codebook)
    facet = draft.facets.get(key="symptom")

    first = services.add_category(facet=facet, name="Hang")
    second = services.add_category(facet=facet, name="Hang")

    assert (first.code, second.code) == ("hang-2", "hang-3")


def test_publishing_writes_a_changelog_from_the_diff_when_none_is_given(v1):
    draft = services.start_draft(codebook=v1.codebook)
    services.update_category(category=category(draft, "symptom", "hang"), definition="Stuck.")

    services.publish_version(version=draft)

    draft.refresh_from_db()
    assert draft.is_published and draft.published_at is not None
    assert draft.changelog == "- changed symptom/hang (definition)"
    assert v1.codebook.latest_published() == draft


def test_discarding_a_draft_reopens_proposals_accepted_into_it(v1):
    proposal = services.create_proposal(facet=v1.facets.get(key="symptom"), name="Bus error")
    services.accept_proposal(proposal=proposal)
    draft = v1.codebook.draft()

    services.discard_draft(version=draft)

    proposal.refresh_from_db()
    assert (proposal.status, proposal.resolved_to) == (Proposal.Status.OPEN, None)
    assert v1.codebook.draft() is None
    assert Category.objects.filter(facet__version=v1).count() == 10


def test_facet_edit_keeps_its_key_and_refuses_unknown_kinds(v1):
    draft = services.start_draft(codebook=v1.codebook)
    facet = draft.facets.get(key="fix")

    with pytest.raises(CodebookError, match="unknown facet kind 'tree'"):
        services.update_facet(facet=facet, name="Fix", kind="tree", required=False)
    services.update_facet(facet=facet, name="Fix pattern(s)", kind="multi", required=True)

    facet.refresh_from_db()
    assert (facet.key, facet.name, facet.required) == ("fix", "Fix pattern(s)", True)
