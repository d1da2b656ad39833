"""Removing a member or changing a role: open assignments go back to the pool (another
annotator gets the item), submitted labels stay and count; the last owner stays owner."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.studies.errors import StudyError
from annotator.studies.models import Annotation, Assignment, Item, Membership
from annotator.studies.services import (
    add_member,
    change_member_role,
    next_assignment,
    remove_member,
    save_draft,
    submit_annotation,
)
from tests.factories import UserFactory
from tests.security.helpers import inline_code
from tests.studies.factories import World, make_world

Status = Assignment.Status


@pytest.fixture
def pool(db: Any) -> World:
    """Two items, k = 1, two annotators: A submits one item and holds the other open."""
    world = make_world(items=2, k=1, annotators=2)
    a = world.annotators[0]
    first = next_assignment(study=world.study, annotator=a)
    assert first is not None
    submit_annotation(assignment=first, user=a, labels=labels(world), notes="A's labels")
    second = next_assignment(study=world.study, annotator=a)
    assert second is not None
    save_draft(assignment=second, user=a, labels=labels(world), notes="A's draft")
    assert next_assignment(study=world.study, annotator=world.annotators[1]) is None  # all taken
    return world


def labels(world: World) -> dict[int, list[int]]:
    return world.labels(screening="relevant", symptom="hang", fix="config")


def open_item(world: World) -> Item:
    return Item.objects.get(assignments__status=Status.ASSIGNED)


def assert_back_in_the_pool(world: World, item: Item) -> None:
    item.refresh_from_db()
    assert item.active_count == 0
    given = next_assignment(study=world.study, annotator=world.annotators[1])
    assert given is not None and given.item_id == item.pk  # another annotator gets the item


def assert_submitted_labels_stay(world: World) -> None:
    submitted = Annotation.objects.filter(status=Annotation.Status.SUBMITTED)
    assert [a.notes for a in submitted] == ["A's labels"]
    done = Item.objects.get(assignments__annotation__notes="A's labels")
    assert (done.active_count, done.submitted_count) == (1, 1)  # still full, still counted


def test_removing_an_annotator_gives_their_open_item_to_another(pool):
    a = pool.annotators[0]
    item = open_item(pool)
    assert remove_member(study=pool.study, user=a) == 1
    assert not Membership.objects.filter(study=pool.study, user=a).exists()
    mine = Assignment.objects.get(item=item, annotator=a)
    assert mine.status == Status.SKIPPED and mine.skip_reason == "removed from the study"
    assert mine.annotation.status == Annotation.Status.DRAFT  # kept, never counted
    assert_back_in_the_pool(pool, item)
    assert_submitted_labels_stay(pool)


def test_an_annotator_made_adjudicator_gives_their_open_item_back(pool):
    a = pool.annotators[0]
    item = open_item(pool)
    membership, released = change_member_role(study=pool.study, user=a, role="adjudicator")
    assert (membership.role, released) == ("adjudicator", 1)
    assert Membership.objects.get(study=pool.study, user=a).role == "adjudicator"
    assert_back_in_the_pool(pool, item)
    assert_submitted_labels_stay(pool)


def test_removing_an_annotator_lowers_a_calibration_rounds_quota(db):
    world = make_world(items=2, annotators=3, calibration=True)
    assert set(Item.objects.filter(round=world.round).values_list("quota", flat=True)) == {3}
    remove_member(study=world.study, user=world.annotators[2])
    assert set(Item.objects.filter(round=world.round).values_list("quota", flat=True)) == {2}


def test_the_last_owner_can_be_neither_removed_nor_demoted(world):
    with pytest.raises(StudyError, match="last owner cannot be removed"):
        remove_member(study=world.study, user=world.owner)
    with pytest.raises(StudyError, match="last owner cannot be made annotator"):
        change_member_role(study=world.study, user=world.owner, role="annotator")
    assert Membership.objects.get(study=world.study, user=world.owner).role == "owner"


def test_with_a_second_owner_the_first_may_step_down(world):
    co_owner = UserFactory(username="co-owner")
    add_member(study=world.study, user=co_owner, role="owner")
    change_member_role(study=world.study, user=world.owner, role="adjudicator")
    with pytest.raises(StudyError, match="last owner"):
        remove_member(study=world.study, user=co_owner)
    remove_member(study=world.study, user=world.owner)
    owners = world.study.memberships.filter(role="owner")
    assert list(owners.values_list("user__username", flat=True)) == ["co-owner"]
    assert not world.study.memberships.filter(user=world.owner).exists()


def test_a_stranger_is_not_a_member_to_remove(world):
    with pytest.raises(StudyError, match="not a member"):
        remove_member(study=world.study, user=UserFactory(username="stranger"))


def test_a_bad_role_is_refused(world):
    with pytest.raises(StudyError, match="field 'role'"):
        change_member_role(study=world.study, user=world.annotators[0], role="boss")
    assert Membership.objects.get(user=world.annotators[0]).role == "annotator"


# --- pages -----------------------------------------------------------------------------------
def test_the_remove_page_says_what_happens_then_removes(client, pool):
    a = pool.annotators[0]
    client.force_login(pool.owner)
    url = reverse("studies:member_remove", args=[pool.study.pk, a.pk])
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and inline_code(html) == []
    assert "Their 1 item(s) in progress go back to the pool" in html
    assert "drafts on them are kept but never counted" in html
    assert "Labels they submitted stay" in html
    assert Membership.objects.filter(study=pool.study, user=a).exists()  # asking changed nothing
    done = client.post(url, follow=True)
    assert "1 item(s) in progress went back to the pool" in done.content.decode()
    assert not Membership.objects.filter(study=pool.study, user=a).exists()
    assert_back_in_the_pool(pool, Item.objects.get(active_count=0))


def test_the_page_refuses_to_remove_the_last_owner(client, world):
    client.force_login(world.owner)
    url = reverse("studies:member_remove", args=[world.study.pk, world.owner.pk])
    response = client.post(url)
    assert response.status_code == 409
    assert "last owner cannot be removed" in response.content.decode()
    assert Membership.objects.filter(study=world.study, user=world.owner).exists()


def test_the_members_page_changes_a_role(client, world):
    a = world.annotators[0]
    client.force_login(world.owner)
    members = client.get(reverse("studies:members", args=[world.study.pk])).content.decode()
    assert reverse("studies:member_role", args=[world.study.pk, a.pk]) in members
    assert reverse("studies:member_remove", args=[world.study.pk, a.pk]) in members
    url = reverse("studies:member_role", args=[world.study.pk, a.pk])
    done = client.post(url, {"role": "adjudicator"}, follow=True)
    assert f"{a.username} is now adjudicator." in done.content.decode()
    assert Membership.objects.get(study=world.study, user=a).role == "adjudicator"
    refused = client.post(
        reverse("studies:member_role", args=[world.study.pk, world.owner.pk]),
        {"role": "annotator"},
        follow=True,
    )
    assert "last owner cannot be made annotator" in refused.content.decode()
    assert Membership.objects.get(study=world.study, user=world.owner).role == "owner"


def test_only_the_owner_manages_members(client, world):
    a, b = world.annotators
    client.force_login(a)
    url = reverse("studies:member_remove", args=[world.study.pk, b.pk])
    assert client.post(url).status_code == 404
    role = reverse("studies:member_role", args=[world.study.pk, b.pk])
    assert client.post(role, {"role": "owner"}).status_code == 404
    assert Membership.objects.get(study=world.study, user=b).role == "annotator"


# --- API -------------------------------------------------------------------------------------
def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_changes_a_role_and_removes_a_member(pool):
    a, b = pool.annotators
    owner = api(pool.owner)
    url = f"/api/studies/{pool.study.pk}/members/{a.pk}/"
    changed = owner.patch(url, {"role": "adjudicator"}, format="json")
    assert changed.status_code == 200
    assert changed.data == {"username": a.username, "role": "adjudicator", "released": 1}
    removed = owner.delete(f"/api/studies/{pool.study.pk}/members/{b.pk}/")
    assert removed.status_code == 200 and removed.data["released"] == 0
    assert list(pool.study.memberships.values_list("role", flat=True)) == ["adjudicator", "owner"]
    assert_submitted_labels_stay(pool)


def test_the_api_keeps_the_last_owner_and_hides_members_from_others(world):
    owner = api(world.owner)
    url = f"/api/studies/{world.study.pk}/members/{world.owner.pk}/"
    refused = owner.delete(url)
    assert refused.status_code == 400 and "last owner" in refused.data["detail"]
    assert owner.patch(url, {"role": "annotator"}, format="json").status_code == 400
    assert owner.patch(url, {"role": "boss"}, format="json").status_code == 400
    stranger = UserFactory(username="stranger")
    assert owner.delete(f"/api/studies/{world.study.pk}/members/{stranger.pk}/").status_code == 404
    annotator = api(world.annotators[0])
    assert annotator.delete(url).status_code == 404
    assert Membership.objects.get(study=world.study, user=world.owner).role == "owner"
