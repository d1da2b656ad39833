"""The study pages and the annotate page's htmx endpoints: full pages, partials, errors."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.studies.models import Annotation, Assignment, Item, Membership, Study
from annotator.studies.services import next_assignment, submit_annotation
from taxonomy_app.models import Proposal
from tests.factories import IssueCommentFactory, UserFactory

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def a_client(client, world):
    client.force_login(world.annotators[0])
    return client


def open_assignment(world, index=0):
    return next_assignment(study=world.study, annotator=world.annotators[index])


def form_data(world, **codes):
    return {f"facet-{f}": ids for f, ids in world.labels(**codes).items()} | {"seconds": "17"}


def test_annotate_next_redirects_to_the_assignment(a_client, world):
    response = a_client.get(reverse("studies:annotate_next", args=[world.study.pk]))
    assignment = Assignment.objects.get()
    assert response.status_code == 302 and response.url == assignment.get_absolute_url()


def test_annotate_page_shows_thread_facets_definitions_and_shortcuts(a_client, world):
    assignment = open_assignment(world)
    IssueCommentFactory(issue=assignment.item.issue, body="Try **NCCL_DEBUG=INFO**")
    html = a_client.get(assignment.get_absolute_url()).content.decode()
    assert "<strong>NCCL_DEBUG=INFO</strong>" in html
    assert 'data-facet data-kind="multi"' in html and 'type="checkbox"' in html
    assert "Waits." in html and "Include:</strong> Timeouts." in html  # hang's definition
    assert "Keyboard shortcuts" in html and "js/annotate.js" in html
    assert "<script>" not in html  # behaviour lives in static files (CSP to come)


def test_autosave_returns_the_status_partial(a_client, world):
    assignment = open_assignment(world)
    response = a_client.post(
        reverse("studies:draft", args=[assignment.pk]),
        form_data(world, symptom="hang") | {"notes": "looks like NCCL"},
        **HTMX,
    )
    assert response.status_code == 200
    assert response.content.decode().strip().startswith('<span id="save-status"')
    annotation = Annotation.objects.get()
    assert (annotation.status, annotation.notes, annotation.seconds_spent) == (
        "draft",
        "looks like NCCL",
        17,
    )
    # a reload shows the saved draft
    html = a_client.get(assignment.get_absolute_url()).content.decode()
    hang = world.category("symptom", "hang").pk
    assert (
        f'value="{hang}"\n                     checked' in html
        or f'value="{hang}" checked' in html.replace("\n", " ").replace("  ", " ")
    )
    assert "looks like NCCL</textarea>" in html


def test_submit_moves_to_the_next_item(a_client, world):
    assignment = open_assignment(world)
    response = a_client.post(
        reverse("studies:submit", args=[assignment.pk]),
        form_data(world, screening="relevant"),
        **HTMX,
    )
    following = Assignment.objects.exclude(pk=assignment.pk).get()
    assert response.status_code == 200 and response["HX-Redirect"] == following.get_absolute_url()
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"


def test_submit_without_htmx_redirects(a_client, world):
    assignment = open_assignment(world)
    response = a_client.post(
        reverse("studies:submit", args=[assignment.pk]), form_data(world, screening="relevant")
    )
    assert response.status_code == 302


def test_invalid_submit_shows_inline_errors_and_keeps_the_choices(a_client, world):
    assignment = open_assignment(world)
    response = a_client.post(
        reverse("studies:submit", args=[assignment.pk]), form_data(world, symptom="oom"), **HTMX
    )
    html = response.content.decode().strip()
    assert response.status_code == 200 and html.startswith('<form id="annotate-form"')
    assert 'id="error-screening"' in html and "required: choose a category" in html
    assert "checked" in html  # oom stays chosen
    assert not Annotation.objects.exists()
    full = a_client.post(reverse("studies:submit", args=[assignment.pk]), form_data(world))
    assert full.status_code == 400 and b"required: choose a category" in full.content


def test_skip_with_reason_goes_on(a_client, world):
    assignment = open_assignment(world)
    response = a_client.post(
        reverse("studies:skip", args=[assignment.pk]),
        {"reason": "other", "detail": "duplicate of #1"},
        **HTMX,
    )
    assert "HX-Redirect" in response
    assert Assignment.objects.get(pk=assignment.pk).skip_reason == "other: duplicate of #1"


def test_propose_returns_its_partial(a_client, world):
    assignment = open_assignment(world)
    facet = world.category("symptom", "hang").facet_id
    response = a_client.post(
        reverse("studies:propose", args=[assignment.pk]),
        {"facet": facet, f"propose-{facet}-name": "Checkpoint mismatch"},
        **HTMX,
    )
    assert b"Proposed" in response.content and Proposal.objects.get().name == "Checkpoint mismatch"


def test_someone_elses_assignment_is_not_found(client, world):
    assignment = open_assignment(world, 1)
    client.force_login(world.annotators[0])
    for name in ("assignment", "draft", "submit", "skip", "propose"):
        url = reverse(f"studies:{name}", args=[assignment.pk])
        response = client.get(url) if name == "assignment" else client.post(url, {})
        assert response.status_code == 404, name


def test_dashboard_is_for_owners_and_shows_progress(client, world):
    a = world.annotators[0]
    submit_annotation(
        assignment=open_assignment(world), user=a, labels=world.labels(screening="relevant")
    )
    client.force_login(world.owner)
    html = client.get(reverse("studies:dashboard", args=[world.study.pk])).content.decode()
    assert f'data-annotator="{a.username}"><td>{a.username}</td><td>1</td>' in html
    assert "<strong>1</strong> in progress" in html and "<strong>3</strong> unassigned" in html
    assert "<svg" in html
    partial = client.get(reverse("studies:dashboard", args=[world.study.pk]), **HTMX)
    assert partial.content.decode().strip().startswith('<div id="dashboard-figures"')
    client.force_login(a)
    assert client.get(reverse("studies:dashboard", args=[world.study.pk])).status_code == 404


def test_owner_creates_a_study_and_adds_an_annotator_account(client, world):
    client.force_login(world.owner)
    response = client.post(
        reverse("studies:create"),
        {
            "name": "New",
            "codebook_version": world.version.pk,
            "overlap_k": 3,
            "guidelines": "Be careful",
        },
    )
    study = Study.objects.get(name="New")
    assert response.url == study.get_absolute_url()
    response = client.post(
        reverse("studies:members", args=[study.pk]),
        {"username": "newbie", "role": "annotator", "create": "on"},
    )
    assert b"created with password" in response.content
    assert Membership.objects.get(study=study, user__username="newbie").role == "annotator"


def test_invitation_link_adds_the_member(client, world):
    client.force_login(world.owner)
    client.post(reverse("studies:invite", args=[world.study.pk]), {"role": "annotator"})
    invitation = world.study.invitations.get()
    newcomer = UserFactory(username="newcomer")
    client.force_login(newcomer)
    assert client.get(invitation.get_absolute_url()).status_code == 200
    client.post(invitation.get_absolute_url())
    assert Membership.objects.get(study=world.study, user=newcomer).role == "annotator"


def test_selection_preview_partial_and_add(client, world):
    client.force_login(world.owner)
    url = reverse("studies:select", args=[world.study.pk])
    preview = client.get(url, {"round": world.round.pk, "kind": "issue"}, **HTMX)
    assert preview.content.decode().strip().startswith('<div id="selection-preview"')
    assert b"data-preview-total>0<" in preview.content  # the 4 issues are in the study already
    response = client.post(url, {"round": "new-calibration", "kind": "issue", "stratify": "on"})
    assert response.status_code == 302
    assert world.study.rounds.count() == 2 and Item.objects.count() == 4


def test_study_detail_shows_the_selection_record(client, world):
    client.force_login(world.owner)
    html = client.get(world.study.get_absolute_url()).content.decode()
    assert "Per repository (kept/matched): hpcaitech/ColossalAI 4/4." in html
