"""Label counts on the codebook pages (diff, merge page, proposals) are for the owners of the
studies the labels come from: submitted labels only, of the viewer's own studies (staff: all)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from annotator.studies.models import Membership
from annotator.studies.services import (
    add_member,
    create_study,
    next_assignment,
    propose_category,
    save_draft,
    select_issues,
    submit_annotation,
)
from annotator.studies.usage import StudyLabelUsage
from taxonomy_app import services
from tests.factories import IssueFactory, RepositoryFactory, UserFactory
from tests.studies.factories import World, make_world
from tests.taxonomy_app.factories import category

pytestmark = pytest.mark.django_db


def label(world: World, study: Any, person: Any, symptom: str, *, submit: bool = True) -> Any:
    assignment = next_assignment(study=study, annotator=person)
    labels = world.labels(screening="relevant", symptom=symptom)
    write = submit_annotation if submit else save_draft
    return write(assignment=assignment, user=person, labels=labels)


@pytest.fixture
def two_studies() -> dict[str, Any]:
    """Study A (world.owner, who also owns the codebook): submitted hang 1 and other 1, drafts
    hang 1 and other 1. Study B (another owner) on the same version: submitted hang 2, other 1."""
    world = make_world(items=2, k=3, annotators=3)
    a0, a1, a2 = world.annotators
    label(world, world.study, a0, "hang")
    label(world, world.study, a0, "other")
    label(world, world.study, a1, "hang", submit=False)
    label(world, world.study, a2, "other", submit=False)
    b_owner = UserFactory(username="b-owner")
    study_b = create_study(name="B", codebook_version=world.version, owner=b_owner, overlap_k=2)
    b0, b1 = UserFactory(username="b-annotator-0"), UserFactory(username="b-annotator-1")
    for person in (b0, b1):
        add_member(study=study_b, user=person, role=Membership.Role.ANNOTATOR)
    repository = RepositoryFactory(owner="b-org", name="b-repo")
    for _ in range(2):
        IssueFactory(repository=repository)
    select_issues(
        study=study_b,
        round=study_b.rounds.get(),
        filters={"repository": repository.pk},
        seed=1,
        user=b_owner,
    )
    label(world, study_b, b0, "hang")
    label(world, study_b, b0, "other")
    label(world, study_b, b1, "hang")
    propose_category(
        assignment=next_assignment(study=world.study, annotator=a1),
        user=a1,
        facet_id=world.category("symptom", "hang").facet_id,
        name="Deadlock",
    )
    draft = services.start_draft(codebook=world.version.codebook)
    services.merge_categories(
        source=category(draft, "symptom", "hang"), target=category(draft, "symptom", "crash")
    )
    return {
        "world": world,
        "draft": draft,
        "b_owner": b_owner,
        "annotator": a0,
        "proposer": a1,
        "staff": UserFactory(username="staff", is_staff=True),
    }


def merged_count(client: Any, draft: Any) -> int:
    html = client.get(reverse("taxonomy:diff", args=[draft.pk])).content.decode()
    section = html[html.index("Labels carried over") :]
    return int(re.search(r'<td class="labels">(\d+)</td>', section)[1])  # type: ignore[index]


def symptom_row(client: Any, world: World) -> list[int]:
    """The proposals page's Symptom row: open, accepted, mapped, rejected, all, "other"."""
    url = reverse("taxonomy:proposals", args=[world.version.codebook_id])
    html = client.get(url).content.decode()
    row = re.search(r"<tr><td>Symptom</td>(.*?)</tr>", html)[1]  # type: ignore[index]
    return [int(n) for n in re.findall(r"<td>(\d+)</td>", row)]


def test_the_hook_counts_submitted_labels_of_the_viewers_own_studies(two_studies):
    world = two_studies["world"]
    hang, other = world.category("symptom", "hang").pk, world.category("symptom", "other").pk
    usage = StudyLabelUsage()

    def counts(viewer: Any) -> dict[int, int]:
        return usage.count_labels([hang, other], viewer=viewer)

    assert counts(world.owner) == {hang: 1, other: 1}
    assert counts(two_studies["b_owner"]) == {hang: 2, other: 1}
    assert counts(two_studies["staff"]) == {hang: 3, other: 2}
    assert counts(two_studies["annotator"]) == {}


@pytest.mark.parametrize(
    ("viewer", "expected"),
    [("annotator", 0), ("b_owner", 2), ("owner", 1), ("staff", 3)],
)
def test_the_diff_page_counts_only_for_owners_of_the_studies(client, two_studies, viewer, expected):
    people = {**two_studies, "owner": two_studies["world"].owner}
    client.force_login(people[viewer])

    assert merged_count(client, two_studies["draft"]) == expected


def test_the_diff_api_counts_like_the_page(client, two_studies):
    url = reverse("api-version-diff", args=[two_studies["draft"].pk])
    for viewer, expected in [(two_studies["annotator"], 0), (two_studies["world"].owner, 1)]:
        client.force_login(viewer)

        [merged] = client.get(url).json()["merged"]

        assert merged["labels"] == expected


def test_the_merge_page_counts_the_owners_study_only(client, two_studies):
    draft = two_studies["draft"]
    hang = category(draft, "symptom", "hang")
    url = reverse("taxonomy:category_action", args=[hang.pk, "archive"])
    client.force_login(two_studies["world"].owner)  # owns the codebook and study A

    assert "<strong>1 label</strong>" in client.get(url).content.decode()

    client.force_login(two_studies["staff"])

    assert "<strong>3 labels</strong>" in client.get(url).content.decode()


def test_the_proposals_page_counts_for_the_viewer_only(client, two_studies):
    world = two_studies["world"]
    expected = {
        "annotator": [0, 0, 0, 0, 0, 0],  # no proposal of theirs, owns no study
        "proposer": [1, 0, 0, 0, 1, 0],  # their own proposal
        "b_owner": [0, 0, 0, 0, 0, 1],  # study B's submitted "other"
        "owner": [1, 0, 0, 0, 1, 1],  # the codebook's owner: every proposal; study A
        "staff": [1, 0, 0, 0, 1, 2],
    }
    people = {**two_studies, "owner": world.owner}
    for viewer, row in expected.items():
        client.force_login(people[viewer])

        assert symptom_row(client, world) == row, viewer


def test_the_changelog_written_at_publishing_has_no_counts(two_studies):
    draft = two_studies["draft"]

    services.publish_version(version=draft, user=two_studies["world"].owner)

    draft.refresh_from_db()
    assert "merged symptom/hang into crash" in draft.changelog
    assert "labels" not in draft.changelog
