"""Progress that means something: an annotator's share of a round (done / what the round needs
of each annotator) on the annotate page, the study page and My items, with their own labels;
the round's own figures, exact, only for those who see every label."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.studies.models import Membership
from annotator.studies.services import add_member, next_assignment, submit_annotation
from annotator.studies.services.progress import annotator_share
from annotator.studies.views.annotate import MY_ITEMS_PER_PAGE
from tests.factories import UserFactory
from tests.studies.factories import World, make_world

pytestmark = pytest.mark.django_db


def submit(world: World, person, **codes) -> None:  # type: ignore[no-untyped-def]
    assignment = next_assignment(study=world.study, annotator=person)
    assert assignment is not None
    labels = world.labels(**codes or {"screening": "relevant", "symptom": "hang"})
    submit_annotation(assignment=assignment, user=person, labels=labels)


def text(response) -> str:  # type: ignore[no-untyped-def]
    html = response.content.decode()
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.mark.parametrize(
    ("items", "k", "annotators", "expected"),
    [(10, 2, 2, 10), (10, 2, 3, 7), (10, 1, 4, 3), (3, 2, 8, 1)],
)
def test_the_share_spreads_the_rounds_labels_over_its_annotators(items, k, annotators, expected):
    world = make_world(items=items, k=k, annotators=annotators)
    share = annotator_share(round_id=world.round.pk, annotator=world.annotators[0])
    assert (share.done, share.expected, share.left, share.percent) == (0, expected, expected, 0)


def test_a_calibration_round_asks_every_item_of_everyone():
    world = make_world(items=5, annotators=3, calibration=True)
    for person in world.annotators:
        assert annotator_share(round_id=world.round.pk, annotator=person).expected == 5


def test_the_share_counts_submitted_labels_only_and_caps_the_percent():
    world = make_world(items=4, k=1, annotators=2)
    a = world.annotators[0]
    submit(world, a)
    next_assignment(study=world.study, annotator=a)  # taken, not submitted: not done
    share = annotator_share(round_id=world.round.pk, annotator=a)
    assert (share.done, share.expected, share.left, share.percent) == (1, 2, 1, 50)
    submit(world, a)  # resumes the open one
    submit(world, a)  # more than the share: items go to whoever asks first
    share = annotator_share(round_id=world.round.pk, annotator=a)
    assert (share.done, share.left, share.percent) == (3, 0, 100)


def test_the_annotate_page_shows_the_annotators_share_and_no_round_figure(client):
    world = make_world(items=6, k=2, annotators=3)  # share: ceil(12 / 3) = 4
    a, b = world.annotators[:2]
    submit(world, b)
    submit(world, a)
    assignment = next_assignment(study=world.study, annotator=a)
    client.force_login(a)
    page = text(client.get(assignment.get_absolute_url()))
    assert "You: 1 / 4 of your share of round 1 · 3 to go" in page
    assert "labels" not in page.split("You:")[1].split("·")[0]
    assert "2 / 12" not in page  # the round's total is not an annotator's to see


def test_the_study_page_shows_annotators_their_share_and_managers_exact_round_figures(client):
    world = make_world(items=3, k=2, annotators=2)
    a, b = world.annotators
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    submit(world, a)
    url = world.study.get_absolute_url()
    client.force_login(a)
    mine = text(client.get(url))
    assert "Yours: done / your share" in mine and "1 / 3" in mine
    assert "Labels submitted / needed" not in mine
    for manager in (world.owner, adjudicator):
        client.force_login(manager)
        assert "1 / 6 (16%)" in text(client.get(url))
    submit(world, b)  # exact: no cached figure on this page
    assert "2 / 6 (33%)" in text(client.get(url))


def test_my_items_lists_the_annotators_own_labels_only(client):
    world = make_world(items=2, k=2, annotators=2)
    a, b = world.annotators
    submit(world, a, screening="relevant", symptom="hang")
    submit(world, b, screening="relevant", symptom="oom")
    client.force_login(a)
    response = client.get(reverse("studies:mine", args=[world.study.pk]))
    cells = re.findall(r"data-my-labels>(.*?)</td>", response.content.decode(), flags=re.S)
    labels = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells]
    assert labels == ["Screening: Relevant · Symptom: Hang"]
    page = text(response)
    assert "Out of memory" not in page and "Round 1: 1 / 2 of your share · 1 to go" in page


def test_my_items_pages_through_a_long_list(client):
    world = make_world(items=MY_ITEMS_PER_PAGE + 3, k=1, annotators=1)
    a = world.annotators[0]
    for _ in range(MY_ITEMS_PER_PAGE + 1):
        submit(world, a, screening="not-a-bug")
    client.force_login(a)
    url = reverse("studies:mine", args=[world.study.pk])
    first = client.get(url).content.decode()
    assert first.count("data-row-link") == MY_ITEMS_PER_PAGE
    assert f"page 1 of 2 ({MY_ITEMS_PER_PAGE + 1} items)" in first
    second = client.get(url + "?page=2").content.decode()
    assert second.count("data-row-link") == 1


def test_the_item_page_gives_its_submitted_count_to_managers_only(client):
    world = make_world(items=1, k=2, annotators=2)
    a, b = world.annotators
    submit(world, a)
    item = world.study.items.get()
    client.force_login(a)
    assert "submitted ·" not in text(client.get(item.get_absolute_url()))  # not "1 / 2"
    submit(world, b)
    assert "2 / 2 submitted" not in text(client.get(item.get_absolute_url()))
    client.force_login(world.owner)
    assert "2 / 2 submitted" in text(client.get(item.get_absolute_url()))
