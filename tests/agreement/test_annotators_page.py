# ruff: noqa: RUF001, RUF003 -- α on the page.
"""The per-annotator diagnostics page, its CSV and the API: who sees them, the same figures in
each, and a query count that does not grow with the items."""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.agreement.models import AgreementRun
from annotator.studies.models import Membership
from annotator.studies.services import add_member
from tests.agreement.test_annotators import compute_diagnostics, facet_of, planted_world
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    world = planted_world()
    compute_diagnostics(world)
    return world


def page_url(world, **query) -> str:
    url = reverse("agreement:annotators", args=[world.study.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def api_url(world, **query) -> str:
    url = reverse("api-annotator-diagnostics", args=[world.study.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_the_owner_sees_the_biased_annotator_flagged(client, world):
    client.force_login(world.owner)
    response = client.get(page_url(world, round=world.round.number))
    html = response.content.decode()
    assert response.status_code == 200
    biased = world.annotators[2].username
    assert f'data-annotator="{biased}"' in html
    assert "α rises without" in html and "Stuart–Maxwell" in html and "Bhapkar" in html
    flagged = [line for line in html.splitlines() if "data-flagged" in line and "<tr" in line]
    assert flagged and all(biased in line for line in flagged)
    assert "<script" not in html.split("</header>")[-1] and "style=" not in html


def test_the_report_links_to_the_page_for_the_owner(client, world):
    client.force_login(world.owner)
    html = client.get(reverse("agreement:study", args=[world.study.pk])).content.decode()
    assert reverse("agreement:annotators", args=[world.study.pk]) in html


@pytest.mark.parametrize("role", ["annotator", "adjudicator", "stranger"])
def test_nobody_else_sees_the_page_the_csv_or_the_api(client, world, role):
    if role == "annotator":
        person = world.annotators[0]
    else:
        person = UserFactory(username=f"someone-{role}")
        if role == "adjudicator":
            add_member(study=world.study, user=person, role=Membership.Role.ADJUDICATOR)
    client.force_login(person)
    assert client.get(page_url(world)).status_code == 404
    assert client.get(page_url(world, format="csv")).status_code == 404
    assert client.get(api_url(world)).status_code == 404


def test_staff_see_the_page(client, world):
    staff = UserFactory(username="staff-person", is_staff=True)
    client.force_login(staff)
    assert client.get(page_url(world)).status_code == 200


def test_a_round_the_study_does_not_have_is_404_and_a_bad_number_400(client, world):
    client.force_login(world.owner)
    assert client.get(page_url(world, round=99)).status_code == 404
    assert client.get(page_url(world, round="x")).status_code == 400
    assert client.get(api_url(world, round=99)).status_code == 404
    assert client.get(api_url(world, round=-1)).status_code == 400


def test_the_api_and_the_csv_give_the_page_s_figures(client, world):
    client.force_login(world.owner)
    data = client.get(api_url(world, round=world.round.number)).json()
    page = client.get(page_url(world, round=world.round.number))
    report = page.context["report"]
    assert data == _jsonish(report)
    symptom = facet_of(data, "symptom")
    html = page.content.decode()
    for row in symptom["annotators"]:
        assert f"{row['alpha_without']:.3f}" in html
        assert f"{row['decision_agreement']:.3f}" in html
    for pair in symptom["pairs"]:
        assert f"{pair['stuart_maxwell']['statistic']:.3f}" in html
    response = client.get(page_url(world, round=world.round.number, format="csv"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    mine = {r["annotator"]: r for r in rows if r["facet"] == "symptom"}
    for row in symptom["annotators"]:
        assert float(mine[row["name"]]["alpha_without"]) == pytest.approx(row["alpha_without"])


def _jsonish(value):  # the report through JSON, as the API answers it
    import json

    return json.loads(json.dumps(value))


# The user, the membership (with study and codebook version), the rounds; the stored
# diagnostics with their run; a recompute under way. None per item or per annotator (before
# the figures were stored with the run: 12, the label tables, assignments and decisions read).
PAGE_QUERY_COUNT = 5


@pytest.mark.parametrize("items", [6, 15])
def test_the_page_s_query_count_does_not_grow_with_the_items(client, items):
    small = planted_world(items=items, seed=1)
    compute_diagnostics(small)
    client.force_login(small.owner)
    url = page_url(small)
    client.get(url)  # the first page keeps whether the top bar shows Import (issues/access.py)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) == PAGE_QUERY_COUNT, [q["sql"][:90] for q in queries]


def test_the_page_says_which_run_computed_the_figures_and_when(client, world):
    run = AgreementRun.objects.get(round=world.round)
    client.force_login(world.owner)
    response = client.get(page_url(world))
    html = response.content.decode()
    assert f"agreement run {run.pk}</a> of round {world.round.number}, finished" in html
    assert run.finished_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert reverse("agreement:start", args=[world.study.pk]) in html
    assert f'name="round" value="{world.round.pk}"' in html and "Recompute for round" in html
    assert response.context["report"]["run"] == run.pk


def test_the_recompute_button_starts_a_run_of_the_round_that_the_page_then_names(client, world):
    first = AgreementRun.objects.get(round=world.round)
    client.force_login(world.owner)
    start = reverse("agreement:start", args=[world.study.pk])
    response = client.post(start, {"round": world.round.pk})
    queued = AgreementRun.objects.exclude(pk=first.pk).get()
    assert response.status_code == 302 and response["Location"] == queued.get_absolute_url()
    assert queued.round == world.round and queued.status == AgreementRun.Status.QUEUED
    html = client.get(page_url(world)).content.decode()
    assert f'A recompute is under way: <a href="{queued.get_absolute_url()}">' in html
    assert f"agreement run {first.pk}</a> of round" in html  # the figures shown until then
    from annotator.agreement.services import run_agreement_run

    run_agreement_run(run_id=queued.pk)
    html = client.get(page_url(world)).content.decode()
    assert f"agreement run {queued.pk}</a> of round" in html and "under way" not in html


def test_before_any_run_of_the_round_the_page_offers_to_compute_and_shows_no_figures(client):
    world = planted_world(items=6, seed=2)
    client.force_login(world.owner)
    html = client.get(page_url(world)).content.decode()
    assert "have not been computed yet" in html and "Compute for round" in html
    assert 'id="activity"' not in html and "data-csv" not in html
    assert client.get(page_url(world, format="csv")).status_code == 404
    data = client.get(api_url(world)).json()
    assert data["run"] is None and data["computed_at"] is None and data["facets"] == []
    assert "start an agreement run of the round" in data["detail"]


def test_staff_who_are_not_members_see_the_figures_without_the_button(client, world):
    staff = UserFactory(username="staff-reader", is_staff=True)
    client.force_login(staff)
    html = client.get(page_url(world)).content.decode()
    assert "Computed by" in html and "Recompute" not in html


def test_the_learning_curves_read_as_the_template_wrote_them_window_by_window(client, world):
    from django.template import Context, Template

    old = Template(
        "{% for w in curve %}{{ w.first }}–{{ w.last }}: {{ w.agreement|floatformat:2 }}"
        "{% if not forloop.last %}; {% endif %}{% endfor %}"
    )
    client.force_login(world.owner)
    response = client.get(page_url(world))
    html = response.content.decode()
    curves = [
        row["learning_curve"]
        for facet in response.context["report"]["facets"]
        for row in facet["annotators"]
    ]
    assert any(curves)
    for curve in filter(None, curves):
        assert f"<td>{old.render(Context({'curve': curve}))}</td>" in html
