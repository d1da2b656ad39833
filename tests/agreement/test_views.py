# ruff: noqa: RUF001, RUF003 -- α on the page.
"""The report page and the API: content, blindness, htmx partials, constant query counts."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.agreement.models import AgreementRun, CalibrationPass
from annotator.agreement.services import (
    calibration_verdict,
    run_agreement_run,
    start_agreement_run,
)
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
    # κ between the two annotators is written on its square, not only shown by its colour
    kappa = run.facet_result("screening")["pairwise_cohen"]["cells"][0][1]
    written = "—" if kappa is None else f"{kappa:.2f}"
    assert re.search(rf'<text class="value[^"]*"[^>]*>{re.escape(written)}</text>', html)
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


def test_owner_marks_a_round_passed_only_when_the_lower_bounds_reach_the_threshold(client):
    world = labelled_world(items=30, annotators=2, agreement=0.85)
    run = computed(world, round=world.round)
    low = calibration_verdict(run, 0.5).lowest_low
    assert low is not None and 0 < low < 1
    client.force_login(world.owner)
    client.post(reverse("agreement:threshold", args=[world.study.pk]), {"threshold": "1"})
    page = client.get(reverse("agreement:run", args=[run.pk])).content.decode()
    assert "The round cannot pass calibration" in page and "Mark round" not in page
    response = client.post(reverse("agreement:pass", args=[run.pk]), follow=True)
    assert "Not passed" in response.content.decode()
    assert not CalibrationPass.objects.exists()
    client.post(reverse("agreement:threshold", args=[world.study.pk]), {"threshold": str(low)})
    response = client.post(reverse("agreement:pass", args=[run.pk]), follow=True)
    html = response.content.decode()
    assert "passed calibration" in html and "lowest lower bound of the 95% CIs" in html
    assert CalibrationPass.objects.get().lowest_ci_low == pytest.approx(low)


def text_of(html: str) -> str:
    """The page's words, tags dropped and white space collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_report_opens_with_a_summary_of_every_facet_then_explains_the_numbers(client, world):
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    html = client.get(reverse("agreement:run", args=[run.pk])).content.decode()
    summary = html.index('id="summary"')
    assert summary < html.index('id="glossary"') < html.index('id="facet-screening"')
    table = html[summary : html.index("</table>", summary)]
    for facet in run.result["facets"]:
        headline = facet["coefficients"][facet["headline"]]
        assert f'data-facet="{facet["key"]}"' in table
        if headline["value"] is not None:
            assert f"{headline['value']:.3f}" in table
            assert f"{headline['ci'][0]:.3f} – {headline['ci'][1]:.3f}" in table
    words = text_of(html)
    for term in ("Krippendorff (2011)", "Cohen (1960)", "Fleiss (1971)", "Gwet (2008)"):
        assert term in words
    assert "undefined A coefficient with nothing to measure" in words
    assert "delete-one-unit jackknife" in words and "Efron & Stein 1981" in words
    assert "distinct label sets among the pairable ratings" in words


def test_each_facet_says_whether_it_meets_the_threshold_on_its_lower_bound(client, world):
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    words = text_of(client.get(reverse("agreement:run", args=[run.pk])).content.decode())
    for facet in run.result["facets"]:
        headline = facet["coefficients"][facet["headline"]]
        if headline["ci"] is None:
            continue
        low = headline["ci"][0]
        if low >= 0.8:
            assert f"meets α ≥ 0.8: lower bound {low:.2f} of the 95% CI" in words
        else:
            assert f"does not meet α ≥ 0.8: lower bound {low:.2f} < 0.8" in words


def test_how_this_was_computed_is_written_in_sentences(client, world):
    run = computed(world)
    client.force_login(world.owner)
    html = client.get(reverse("agreement:run", args=[run.pk])).content.decode()
    method = text_of(html[html.index('id="method"') :])
    counts = run.inputs["counts"]
    assert f"{counts['annotations']} annotations of {counts['items_labelled']} labelled" in method
    screening = run.facet_result("screening")["design"]
    assert f"Screening {screening['pairable_units']} of {screening['units']} units" in method
    assert "a facet an annotator left empty is a missing rating" in method
    assert "MASI (Passonneau 2006)" in method
    assert "No bootstrap was run (no replicates, no seed)" in method
    assert run.inputs["label_table_sha256"][:16] in method
    assert "{'" not in method.split("The stored inputs")[0]  # no dict dump before the details


def test_a_result_stored_before_conventions_were_recorded_still_reads(client, world):
    run = computed(world, round=world.round)
    old = json.loads(json.dumps(run.result))
    del old["conventions"]
    old["schema"] = 1
    for facet in old["facets"]:
        del facet["pairwise_cohen"]["pairs"]
        for level in facet["levels"]:
            del level["gwet_ac1"]
    AgreementRun.objects.filter(pk=run.pk).update(result=old)
    client.force_login(world.owner)
    response = client.get(reverse("agreement:run", args=[run.pk]))
    assert response.status_code == 200
    words = text_of(response.content.decode())
    assert "stored before results recorded their conventions" in words
    assert "the declared categories of the facet (not the label sets compared)" in words
    api = client.get(reverse("api-agreement-run", args=[run.pk])).json()
    assert api["result"]["schema"] == 1 and api["calibration"]["facets"]


# user, run (+ round), membership (+ study), threshold, latest run per round, passes, the
# released items' revisions (after discussion), the declared headlines, rounds, recent runs:
# none per item, facet or category (the page reads the stored result)
REPORT_QUERIES = 10


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
