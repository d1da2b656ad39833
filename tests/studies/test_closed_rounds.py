"""Closed rounds never change: a round closes when its last item is complete (or when an owner
closes it); a new member or a new k leaves its quotas alone, it hands out no assignment, and its
labels take no draft or submit. An issue may come back in a later round of the study."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.db.models import Sum
from django.urls import reverse

from annotator.agreement.labels import load_label_table
from annotator.exports.services import export_dataset
from annotator.studies.models import Assignment, Item, Membership, Round
from annotator.studies.services import (
    StudyError,
    add_member,
    close_round,
    create_round,
    next_assignment,
    save_draft,
    select_issues,
    submit_annotation,
    update_study,
)
from tests.factories import UserFactory
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db
Status = Assignment.Status


def label_round(world: World, round: Round, symptom: str, capture) -> None:  # type: ignore[no-untyped-def]
    """Every annotator labels every item of `round` they are given (commit hooks run)."""
    for annotator in world.annotators:
        while (assignment := next_assignment(study=world.study, annotator=annotator)) is not None:
            assert assignment.item.round_id == round.pk
            labels = world.labels(screening="relevant", symptom=symptom)
            with capture(execute=True):
                submit_annotation(assignment=assignment, user=annotator, labels=labels)


def quotas(round: Round) -> list[int]:
    return list(Item.objects.filter(round=round).order_by("pk").values_list("quota", flat=True))


def test_a_round_closes_when_its_last_item_is_complete(
    world: World, django_capture_on_commit_callbacks
) -> None:
    a = world.annotators[0]
    first = next_assignment(study=world.study, annotator=a)
    with django_capture_on_commit_callbacks(execute=True):
        submit_annotation(assignment=first, user=a, labels=world.labels(screening="relevant"))
    world.round.refresh_from_db()
    assert not world.round.is_closed
    label_round(world, world.round, "hang", django_capture_on_commit_callbacks)
    world.round.refresh_from_db()
    assert world.round.closed_reason == Round.Closed.COMPLETE and world.round.is_closed


def test_a_new_member_is_not_handed_a_closed_calibration_round(
    db, django_capture_on_commit_callbacks
) -> None:
    world = make_world(calibration=True)
    label_round(world, world.round, "hang", django_capture_on_commit_callbacks)
    world.round.refresh_from_db()
    assert world.round.is_closed and quotas(world.round) == [2, 2, 2, 2]
    # An open calibration round in the same study does follow its members.
    later = create_round(study=world.study, kind=Round.Kind.CALIBRATION)
    select_issues(study=world.study, round=later, filters={}, repeat_issues=True, seed=2)
    newcomer = UserFactory(username="newcomer")
    add_member(study=world.study, user=newcomer, role=Membership.Role.ANNOTATOR)
    assert quotas(world.round) == [2, 2, 2, 2]
    assert quotas(later) == [3, 3, 3, 3]
    given = next_assignment(study=world.study, annotator=newcomer)
    assert given is not None and given.item.round_id == later.pk
    assert not Assignment.objects.filter(item__round=world.round, annotator=newcomer).exists()


def test_a_new_k_leaves_closed_rounds_alone(world: World) -> None:
    close_round(round=world.round)
    later = create_round(study=world.study)
    select_issues(study=world.study, round=later, filters={}, repeat_issues=True, seed=2)
    study = world.study
    update_study(study=study, name=study.name, guidelines=study.guidelines, overlap_k=3)
    assert quotas(world.round) == [2, 2, 2, 2]
    assert quotas(later) == [3, 3, 3, 3]


def test_closing_a_round_takes_back_its_open_assignments_and_refuses_writes(world: World) -> None:
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    assert assignment is not None
    save_draft(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    closed = close_round(round=world.round)
    assert (closed.closed_reason, closed.is_closed) == (Round.Closed.OWNER, True)
    assignment.refresh_from_db()
    assert (assignment.status, assignment.skip_reason) == (Status.SKIPPED, "round closed")
    total = Item.objects.filter(round=world.round).aggregate(n=Sum("active_count"))["n"]
    assert total == 0
    assert next_assignment(study=world.study, annotator=a) is None
    for write in (save_draft, submit_annotation):
        with pytest.raises(StudyError, match="round is closed"):
            write(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    # Closing again keeps the first record.
    assert close_round(round=world.round).closed_at == closed.closed_at


def test_a_closed_round_takes_no_more_issues(world: World) -> None:
    close_round(round=world.round)
    with pytest.raises(StudyError, match="round 1 is closed"):
        select_issues(study=world.study, round=world.round, filters={}, repeat_issues=True)
    assert Item.objects.filter(round=world.round).count() == 4


def test_the_same_issue_in_a_second_round_keeps_each_rounds_labels_apart(
    world: World, django_capture_on_commit_callbacks
) -> None:
    label_round(world, world.round, "hang", django_capture_on_commit_callbacks)
    later = create_round(study=world.study)
    none_new = select_issues(study=world.study, round=later, filters={}, seed=2)
    assert none_new.added == 0  # by default an issue already in the study is not selected
    again = select_issues(study=world.study, round=later, filters={}, repeat_issues=True, seed=2)
    assert again.added == 4
    assert "not already in the study: 0." in none_new.method_text
    assert "not already in round 2: 4." in again.method_text
    label_round(world, later, "oom", django_capture_on_commit_callbacks)
    issues = {
        r: set(Item.objects.filter(round=r).values_list("issue", flat=True))
        for r in (world.round, later)
    }
    assert issues[world.round] == issues[later] and len(issues[later]) == 4
    # Agreement of each round reads that round's labels only.
    for round, code in ((world.round, "hang"), (later, "oom")):
        table = load_label_table(study_id=world.study.pk, version=world.version, round_id=round.pk)
        symptom = next(f for f in table.facets if f.key == "symptom")
        assert symptom.table.n_units == 4
        assert {symptom.table.values[c] for c in symptom.table.codes.ravel()} == {code}
    # The export has a row per item: the issue twice, once per round, each with its labels.
    out = io.BytesIO()
    export_dataset(study=world.study, format="csv", out=out)
    frame = pd.read_csv(io.BytesIO(out.getvalue()))
    assert len(frame) == 8
    for number, rows in frame.groupby("number"):
        assert sorted(zip(rows["round"], rows["symptom_l2"], strict=True)) == [
            (1, "hang"),
            (2, "oom"),
        ], number


def test_an_owner_closes_a_round_on_its_page_and_through_the_api(world: World, client) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    from annotator.accounts.services import create_api_token

    url = reverse("studies:round_close", args=[world.study.pk, 1])
    client.force_login(world.annotators[0])
    assert client.get(url).status_code == 404 and client.post(url).status_code == 404
    assert url not in client.get(world.study.get_absolute_url()).text
    client.force_login(world.owner)
    assert f'href="{url}">close…</a>' in client.get(world.study.get_absolute_url()).text
    page = client.get(url)
    assert page.status_code == 200 and b"Close round 1" in page.content
    world.round.refresh_from_db()
    assert not world.round.is_closed  # a GET asks, and changes nothing
    assert client.post(url).status_code == 302
    world.round.refresh_from_db()
    assert world.round.closed_reason == Round.Closed.OWNER
    study_page = client.get(world.study.get_absolute_url()).text
    assert "closed: closed by an owner" in study_page and f'href="{url}"' not in study_page
    later = create_round(study=world.study)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=world.owner, name='t')[1]}")
    answer = api.post(f"/api/studies/{world.study.pk}/rounds/{later.number}/close/")
    assert answer.status_code == 200 and answer.data["closed_reason"] == "owner"
    later.refresh_from_db()
    assert later.is_closed and answer.data["number"] == 2
    assert api.post(f"/api/studies/{world.study.pk}/rounds/9/close/").status_code == 404
