"""The agreement settings and calibration-pass API: the threshold (read by owners and
adjudicators, set by owners, within (0, 1]) and marking a round passed (owners; 409 below the
threshold). Annotators and outsiders get 404."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.agreement.models import AgreementRun, AgreementSettings, CalibrationPass
from annotator.agreement.services import (
    calibration_verdict,
    run_agreement_run,
    set_threshold,
    start_agreement_run,
)
from annotator.studies.models import Membership
from annotator.studies.services import add_member
from tests.agreement.factories import labelled_world
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='tests')[1]}")
    return client


@pytest.fixture
def world():  # type: ignore[no-untyped-def]
    return labelled_world(items=8, annotators=2)


@pytest.fixture
def judge(world):  # type: ignore[no-untyped-def]
    person = UserFactory(username="judge")
    add_member(study=world.study, user=person, role=Membership.Role.ADJUDICATOR)
    return person


def computed(world) -> AgreementRun:  # type: ignore[no-untyped-def]
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    return run


def settings_url(world) -> str:  # type: ignore[no-untyped-def]
    return f"/api/studies/{world.study.pk}/agreement-settings/"


def pass_url(world, round_id=None) -> str:  # type: ignore[no-untyped-def]
    return f"/api/studies/{world.study.pk}/rounds/{round_id or world.round.pk}/calibration-pass/"


def test_owner_reads_the_default_and_sets_the_threshold(world):
    owner = api(world.owner)
    assert owner.get(settings_url(world)).data == {"study": world.study.pk, "threshold": 0.8}
    changed = owner.put(settings_url(world), {"threshold": 0.667}, format="json")
    assert changed.status_code == 200 and changed.data["threshold"] == 0.667
    assert AgreementSettings.objects.get(study=world.study).threshold == 0.667
    assert owner.get(settings_url(world)).data["threshold"] == 0.667


@pytest.mark.parametrize("value", [0, -0.1, 1.01, "high", None])
def test_a_threshold_outside_0_1_is_refused(world, value):
    response = api(world.owner).put(settings_url(world), {"threshold": value}, format="json")
    assert response.status_code == 400 and "threshold" in response.data
    assert not AgreementSettings.objects.exists()


def test_a_threshold_of_one_is_accepted(world):
    response = api(world.owner).put(settings_url(world), {"threshold": 1}, format="json")
    assert response.status_code == 200 and response.data["threshold"] == 1.0


def test_adjudicator_reads_but_cannot_set_the_threshold_or_pass_a_round(world, judge):
    run = computed(world)
    set_threshold(study=world.study, threshold=0.01)
    client = api(judge)
    assert client.get(settings_url(world)).data["threshold"] == 0.01
    assert client.put(settings_url(world), {"threshold": 0.5}, format="json").status_code == 404
    assert client.post(pass_url(world)).status_code == 404
    assert AgreementSettings.objects.get().threshold == 0.01
    assert not CalibrationPass.objects.exists() and run.round_id == world.round.pk


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_annotators_and_outsiders_get_404(world, who):
    computed(world)
    person = world.annotators[0] if who == "annotator" else UserFactory(username="outsider")
    client = api(person)
    assert client.get(settings_url(world)).status_code == 404
    assert client.put(settings_url(world), {"threshold": 0.5}, format="json").status_code == 404
    assert client.post(pass_url(world)).status_code == 404
    assert not AgreementSettings.objects.exists() and not CalibrationPass.objects.exists()


def test_unauthenticated_calls_get_401(world):
    assert APIClient().get(settings_url(world)).status_code == 401
    assert APIClient().post(pass_url(world)).status_code == 401


def test_owner_passes_a_round_only_when_every_lower_bound_reaches_the_threshold():
    world = labelled_world(items=30, annotators=2, agreement=0.85)
    run = computed(world)
    verdict = calibration_verdict(run, 0.5)
    low, lowest = verdict.lowest_low, verdict.lowest_value
    assert low is not None and lowest is not None and 0 < low < lowest < 1
    owner = api(world.owner)
    # between the lowest lower bound and the lowest point estimate: the point estimate would
    # pass, the interval does not
    between = round((low + lowest) / 2, 6)
    owner.put(settings_url(world), {"threshold": between}, format="json")
    refused = owner.post(pass_url(world))
    assert refused.status_code == 409
    assert f"lower bound {low:.2f} < {between:g}" in refused.data["detail"]
    assert "round 1" in refused.data["detail"]
    assert not CalibrationPass.objects.exists()
    owner.put(settings_url(world), {"threshold": low}, format="json")
    passed = owner.post(pass_url(world))
    assert passed.status_code == 201, passed.data
    assert passed.data["round"] == 1 and passed.data["run"] == run.pk
    assert passed.data["lowest_alpha"] == pytest.approx(lowest)
    assert passed.data["lowest_ci_low"] == pytest.approx(low)
    stored = CalibrationPass.objects.get(round=world.round)
    assert (stored.run_id, stored.threshold, stored.passed_by) == (run.pk, low, world.owner)


def test_the_run_json_carries_conventions_pairs_and_the_judgement(world):
    run = computed(world)
    body = api(world.owner).get(f"/api/agreement-runs/{run.pk}/").json()
    result = body["result"]
    assert result["schema"] == 2
    assert "label sets" in result["conventions"]["ac1_q"]["multi"]
    assert "leaves" in result["conventions"]["ac1_q"]["hierarchy"]
    pair = result["facets"][0]["pairwise_cohen"]["pairs"][0]
    assert {"n", "p_o", "p_e", "kappa", "se", "ci", "raters"} <= set(pair)
    calibration = body["calibration"]
    assert calibration["threshold"] == 0.8 and "lower bound" in calibration["rule"]
    assert [f["facet"] for f in calibration["facets"]] == [f["key"] for f in result["facets"]]
    assert all(f["text"] for f in calibration["facets"])


def test_a_round_without_a_finished_run_is_a_conflict_and_an_unknown_round_404(world):
    start_agreement_run(study=world.study, round=world.round, enqueue=False)  # still queued
    owner = api(world.owner)
    response = owner.post(pass_url(world))
    assert response.status_code == 409 and "no finished agreement run" in response.data["detail"]
    assert owner.post(pass_url(world, round_id=999999)).status_code == 404
    assert not CalibrationPass.objects.exists()


def test_the_schema_lists_the_routes(client, world):
    client.force_login(world.owner)
    schema = client.get("/api/schema/").content.decode()
    assert "/api/studies/{study_id}/agreement-settings/" in schema
    assert "/api/studies/{study_id}/rounds/{round_id}/calibration-pass/" in schema
