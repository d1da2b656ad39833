"""Adding issues to "a new round": a new study's empty round 1 takes the kind asked for, so a
study that starts with calibration has no empty main round before it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.studies.errors import StudyError
from annotator.studies.models import Item, Round
from annotator.studies.services import create_study, round_for_selection
from tests.factories import IssueFactory, RepositoryFactory, UserFactory
from tests.taxonomy_app.factories import published_small


@pytest.fixture
def study(db):  # type: ignore[no-untyped-def]
    owner = UserFactory(username="owner")
    return create_study(name="S", codebook_version=published_small(user=owner), owner=owner)


def test_a_new_studys_empty_first_round_becomes_the_calibration_round(study):
    round = round_for_selection(study=study, kind=Round.Kind.CALIBRATION)
    assert (round.number, round.kind) == (1, "calibration")
    assert list(study.rounds.values_list("number", "kind")) == [(1, "calibration")]


def test_once_the_first_round_has_items_a_new_round_follows_it(client, study):
    repository = RepositoryFactory(owner="hpcaitech", name="ColossalAI")
    for _ in range(3):
        IssueFactory(repository=repository)
    client.force_login(study.created_by)
    url = reverse("studies:select", args=[study.pk])
    first = client.post(url, {"round": "new-calibration", "sample_size": 1, "seed": 1})
    second = client.post(url, {"round": "new-main", "sample_size": 2, "seed": 1})
    assert first.status_code == second.status_code == 302
    rounds = list(study.rounds.order_by("number").values_list("number", "kind"))
    assert rounds == [(1, "calibration"), (2, "main")]
    assert [Item.objects.filter(round__number=n).count() for n in (1, 2)] == [1, 2]


def test_an_unknown_kind_is_refused_and_changes_nothing(study):
    with pytest.raises(StudyError, match="field 'kind'"):
        round_for_selection(study=study, kind="pilot")
    assert list(study.rounds.values_list("number", "kind")) == [(1, "main")]
