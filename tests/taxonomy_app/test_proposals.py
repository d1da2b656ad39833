"""Open coding: proposals are accepted into the draft, mapped, or rejected with a reason."""

from __future__ import annotations

import pytest

from taxonomy_app import services
from taxonomy_app.errors import CodebookError
from taxonomy_app.models import ChangeOperation, Proposal
from tests.taxonomy_app.factories import category

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(v1, user):  # type: ignore[no-untyped-def]
    return services.create_proposal(
        facet=v1.facets.get(key="symptom"),
        name="Bus error",
        rationale="SIGBUS on NVMe offload.",
        issue="https://github.com/hpcaitech/ColossalAI/issues/1",
        parent=category(v1, "symptom", "failure"),
        user=user,
    )


def test_accepting_adds_the_category_to_a_new_draft_under_the_proposed_parent(v1, proposal, owner):
    new = services.accept_proposal(proposal=proposal, user=owner)

    draft = v1.codebook.draft()
    assert new.facet.version == draft
    assert (new.code, new.name, new.definition) == (
        "bus-error",
        "Bus error",
        "SIGBUS on NVMe offload.",
    )
    assert new.parent == category(draft, "symptom", "failure")
    proposal.refresh_from_db()
    assert (proposal.status, proposal.resolved_to, proposal.resolved_by) == ("accepted", new, owner)
    op = ChangeOperation.objects.get(version=draft, kind="add")
    assert op.detail == {"proposal": proposal.pk}
    assert [c.category for c in services.diff_version(version=draft).added] == [new]


def test_mapping_points_to_an_existing_category_of_the_same_facet(v1, proposal):
    services.map_proposal(
        proposal=proposal, category=category(v1, "symptom", "crash"), reason="Same."
    )

    proposal.refresh_from_db()
    assert (proposal.status, proposal.resolved_to.code, proposal.reason) == (
        "mapped",
        "crash",
        "Same.",
    )


def test_mapping_to_another_facet_is_refused(v1, proposal):
    with pytest.raises(CodebookError, match="field 'category'"):
        services.map_proposal(proposal=proposal, category=category(v1, "fix", "config"))


def test_rejecting_needs_a_reason(proposal):
    with pytest.raises(CodebookError, match="field 'reason'"):
        services.reject_proposal(proposal=proposal, reason="  ")
    services.reject_proposal(proposal=proposal, reason="Crash covers it.")

    proposal.refresh_from_db()
    assert (proposal.status, proposal.reason) == ("rejected", "Crash covers it.")


def test_a_resolved_proposal_cannot_be_resolved_again(proposal):
    services.reject_proposal(proposal=proposal, reason="No.")

    with pytest.raises(CodebookError, match="rejected already"):
        services.accept_proposal(proposal=proposal)


def test_proposal_needs_a_name(v1):
    with pytest.raises(CodebookError, match="field 'name'"):
        services.create_proposal(facet=v1.facets.first(), name=" ")


def test_counts_per_facet_include_proposals_and_other_labels(v1, proposal, labels, owner):
    services.create_proposal(facet=v1.facets.get(key="symptom"), name="Second")
    services.create_proposal(facet=v1.facets.get(key="fix"), name="Third")
    services.reject_proposal(proposal=proposal, reason="No.")
    labels.update(
        {"a": category(v1, "symptom", "other").pk, "b": category(v1, "symptom", "other").pk}
    )

    counts = {c.facet.key: c for c in services.proposal_counts(codebook=v1.codebook, viewer=owner)}

    symptom = counts["symptom"]
    assert (symptom.open, symptom.rejected, symptom.total, symptom.other_labels) == (1, 1, 2, 2)
    assert (counts["fix"].open, counts["screening"].total) == (1, 0)
    assert Proposal.objects.count() == 3


def test_only_owners_and_the_proposer_read_a_proposal(v1, proposal, owner, user, client):  # type: ignore[no-untyped-def]
    """A proposal names an issue and the category its annotator had in mind: another annotator
    of the same issue must not read it (blind labeling), on the page or through the API."""
    from django.contrib.auth import get_user_model
    from django.urls import reverse
    from rest_framework.test import APIClient

    other = get_user_model().objects.create_user("other-annotator")
    page = reverse("taxonomy:proposals", args=[v1.codebook_id])
    seen = {}
    for person in (owner, user, other):
        client.force_login(person)
        api = APIClient()
        api.force_authenticate(person)
        listed = api.get("/api/proposals/", {"codebook": v1.codebook_id}).json()["results"]
        seen[person.username] = (
            "SIGBUS on NVMe offload." in client.get(page).content.decode(),
            [p["name"] for p in listed],
        )
    assert seen == {
        owner.username: (True, ["Bus error"]),
        user.username: (True, ["Bus error"]),
        "other-annotator": (False, []),
    }
