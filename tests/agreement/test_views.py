"""The report page and the API: content, blindness, htmx partials, constant query counts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.studies.models import Membership
from annotator.studies.services import add_member
from tests.agreement.factories import labelled_world
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def computed(world, **options) -> AgreementRun:
    run = start_agreement_run(study=world.study, enqueue=False, **options)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def world():
    return labelled_world(items=8, annotators=2)


def test_report_shows_every_facet_with_coefficients_and_design(client, world):
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    response = client.get(reverse("agreement:study", args=[world.study.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    for key in ("screening", "symptom", "fix"):
        assert f'data-facet="{key}"' in html
    alpha = run.facet_result("screening")["coefficients"]["krippendorff_alpha"]["value"]
    assert f"{alpha:.3f}" in html
    assert "Fleiss" in html and "AC1" in html and "pairable units" in html
    assert 'class="heatmap"' in html and 'class="trend"' in html and 'class="threshold"' in html
    assert reverse("agreement:cell", args=[run.pk, "screening", 0, 1]) in html or "·" in html


def test_confusion_cell_lists_the_items_behind_it(client, world):
    run = computed(world)
    client.force_login(world.owner)
    key, matrix, i, j = next(
        (f["key"], f["confusion"], i, j)
        for f in run.result["facets"]
        for i, row in enumerate(f["confusion"]["cells"])
        for j, c in enumerate(row)
        if c and i != j
    )
    response = client.get(reverse("agreement:cell", args=[run.pk, key, i, j]))
    assert response.status_code == 200
    links = response.content.decode().count("/studies/items/")
    assert links == matrix["cells"][i][j]  # two raters: one item per disagreeing pair


@pytest.mark.parametrize("role", ["annotator", "stranger"])
def test_annotators_and_strangers_cannot_see_the_report_or_the_api(client, world, role):
    run = computed(world)
    person = world.annotators[0] if role == "annotator" else UserFactory(username="stranger")
    client.force_login(person)
    urls = [
        reverse("agreement:study", args=[world.study.pk]),
        reverse("agreement:run", args=[run.pk]),
        reverse("agreement:cell", args=[run.pk, "screening", 0, 0]),
        reverse("api-agreement-run", args=[run.pk]),
        reverse("api-agreement-runs", args=[world.study.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code in {403, 404}, url
    assert client.post(reverse("agreement:start", args=[world.study.pk])).status_code == 404
    api = reverse("api-agreement-runs", args=[world.study.pk])
    assert client.post(api, {}, content_type="application/json").status_code == 404
    assert AgreementRun.objects.count() == 1


def test_adjudicator_sees_the_report_but_cannot_change_the_threshold(client, world):
    computed(world)
    judge = UserFactory(username="judge")
    add_member(study=world.study, user=judge, role=Membership.Role.ADJUDICATOR)
    client.force_login(judge)
    assert client.get(reverse("agreement:study", args=[world.study.pk])).status_code == 200
    url = reverse("agreement:threshold", args=[world.study.pk])
    assert client.post(url, {"threshold": "0.1"}).status_code == 404


def test_api_starts_a_run_and_returns_the_stored_result(client, world):
    client.force_login(world.owner)
    url = reverse("api-agreement-runs", args=[world.study.pk])
    response = client.post(url, {"round": 1}, content_type="application/json")
    assert response.status_code == 202 and response.json()["status"] == "queued"
    run = AgreementRun.objects.get(pk=response.json()["id"])
    run_agreement_run(run_id=run.pk)  # what the worker does (tests/agreement/test_jobs.py)
    run.refresh_from_db()
    detail = client.get(reverse("api-agreement-run", args=[run.pk])).json()
    assert detail["status"] == "succeeded" and detail["progress"] == 100
    assert detail["result"] == run.result and detail["round"] == 1
    listed = client.get(url).json()
    assert [r["id"] for r in listed] == [run.pk] and "result" not in listed[0]


def test_api_refuses_an_unknown_round(client, world):
    client.force_login(world.owner)
    url = reverse("api-agreement-runs", args=[world.study.pk])
    response = client.post(url, {"round": 9}, content_type="application/json")
    assert response.status_code == 400 and "round" in response.json()
    assert not AgreementRun.objects.exists()


def test_progress_partial_polls_until_the_run_finishes(client, world):
    run = start_agreement_run(study=world.study, enqueue=False)
    client.force_login(world.owner)
    url = reverse("agreement:run", args=[run.pk])
    running = client.get(url, **HTMX)
    assert running.status_code == 200 and 'id="agreement-progress"' in running.content.decode()
    assert "<html" not in running.content.decode()
    run_agreement_run(run_id=run.pk)
    done = client.get(url, **HTMX)
    assert done.status_code == 286 and done["HX-Refresh"] == "true"


def test_owner_marks_a_round_passed_only_at_the_threshold(client, world):
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    client.post(reverse("agreement:threshold", args=[world.study.pk]), {"threshold": "1"})
    client.post(reverse("agreement:pass", args=[run.pk]))
    assert not hasattr(world.round, "calibration_pass") or world.round.calibration_pass is None
    client.post(reverse("agreement:threshold", args=[world.study.pk]), {"threshold": "0"})
    response = client.post(reverse("agreement:pass", args=[run.pk]), follow=True)
    world.round.refresh_from_db()
    lowest = min(f["coefficients"][f["headline"]]["value"] or 0 for f in run.result["facets"])
    assert ("passed calibration" in response.content.decode()) == (lowest >= 0)


# user, run (+ round), membership (+ study), threshold, latest run per round, passes, rounds,
# recent runs: none per item, facet or category (the page reads the stored result)
REPORT_QUERIES = 8


@pytest.mark.parametrize("items", [3, 40])
def test_report_queries_do_not_grow_with_the_number_of_items(client, items):
    world = labelled_world(items=items, annotators=2)
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    url = reverse("agreement:run", args=[run.pk])
    client.get(url)  # the first page keeps whether the top bar shows Import (issues/access.py)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) == REPORT_QUERIES, [q["sql"][:80] for q in queries]
