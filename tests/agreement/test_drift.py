# ruff: noqa: RUF001, RUF003 -- α and the en dash of a range on the page.
"""Drift within a round: the windows (pure), a round whose agreement drops half-way, one that
stays high, a codebook-version change, who sees the page, the API against the page and a query
count that does not grow with the items."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.agreement import drift_views
from annotator.agreement.drift import MIN_WINDOW, Entry, facet_chart, timeline, window_bounds
from annotator.agreement.drift_service import round_drift, stored_round_drift
from annotator.agreement.models import AgreementRun, DriftReport
from annotator.agreement.services import run_agreement_run, set_threshold, start_agreement_run
from annotator.studies.models import Annotation, Item, Membership
from annotator.studies.services import add_member, next_assignment, submit_annotation
from taxonomy_app.models import CodebookVersion
from tests.factories import UserFactory
from tests.studies.factories import World, make_world

SYMPTOMS = ["failure", "hang", "oom", "crash", "slow", "other"]
FIXES = [["version"], ["config"], ["version", "config"]]  # an empty facet is a missing rating
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


# --- the pure pieces --------------------------------------------------------------------------
def test_windows_hold_at_least_the_size_and_the_remainder_joins_the_last():
    assert window_bounds(40, 10) == [(0, 10), (10, 20), (20, 30), (30, 40)]
    assert window_bounds(23, 5) == [(0, 5), (5, 10), (10, 15), (15, 23)]
    assert window_bounds(7, 10) == [(0, 7)]  # one window, still at least 5 items
    assert window_bounds(4, 10) == []
    assert window_bounds(40, 15) == [(0, 15), (15, 40)]
    with pytest.raises(ValueError, match="at least"):
        window_bounds(40, MIN_WINDOW - 1)


def test_an_item_enters_the_timeline_at_its_second_submission():
    t = [T0 + timedelta(minutes=m) for m in range(6)]
    entries = timeline(
        {1: [(t[5], 7), (t[0], 7)], 2: [(t[1], 7), (t[2], 8), (t[4], 8)], 3: [(t[3], 7)]}
    )
    assert entries == [Entry(2, t[2], frozenset({7, 8})), Entry(1, t[5], frozenset({7}))]


# --- a labelled round -------------------------------------------------------------------------
def drift_world(*, items: int = 40, drop_after: int | None = 20, seed: int = 5) -> World:
    """Two annotators label every item. Items become pairable in item order, a minute apart.
    Before `drop_after` (in that order) both give the item's true symptom and fix; from it on
    the second answers the next symptom and another fix (None: they agree throughout)."""
    world = make_world(items=items, k=2, annotators=2)
    rng = random.Random(seed)
    order = {
        pk: i
        for i, pk in enumerate(
            Item.objects.filter(round=world.round).order_by("pk").values_list("pk", flat=True)
        )
    }
    truth = {pk: (rng.randrange(len(SYMPTOMS)), rng.randrange(len(FIXES))) for pk in order}
    for n, person in enumerate(world.annotators):
        for _ in range(items):
            assignment = next_assignment(study=world.study, annotator=person)
            assert assignment is not None
            symptom, fix = truth[assignment.item_id]
            if n == 1 and drop_after is not None and order[assignment.item_id] >= drop_after:
                symptom, fix = (symptom + 1) % len(SYMPTOMS), (fix + 1) % len(FIXES)
            labels = world.labels(screening="relevant", symptom=SYMPTOMS[symptom], fix=FIXES[fix])
            submit_annotation(assignment=assignment, user=person, labels=labels)
    for annotation in Annotation.objects.filter(assignment__item__round=world.round).select_related(
        "assignment"
    ):
        at = T0 + timedelta(
            minutes=order[annotation.assignment.item_id],
            seconds=10 * (annotation.assignment.annotator_id == world.annotators[1].pk),
        )
        Annotation.objects.filter(pk=annotation.pk).update(submitted_at=at)
    return world


def computed(world: World, **kwargs) -> AgreementRun:
    """An agreement run of the world's round over every facet (it stores the drift)."""
    run = start_agreement_run(study=world.study, round=world.round, enqueue=False, **kwargs)
    run_agreement_run(run_id=run.pk)
    return AgreementRun.objects.get(pk=run.pk)


def facet_of(report, key):
    return next(f for f in report["facets"] if f["key"] == key)


def page_url(world, **query) -> str:
    url = reverse("agreement:drift", args=[world.study.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def api_url(world, **query) -> str:
    url = reverse("api-drift", args=[world.study.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.mark.django_db
def test_agreement_that_drops_half_way_is_low_in_the_last_window_and_prompts(client):
    world = drift_world()
    report = round_drift(study=world.study, round=world.round)
    assert [w["items"] for w in report["windows"]] == [10, 10, 10, 10]
    assert report["windows"][0]["start"] == (T0 + timedelta(seconds=10)).isoformat()
    for key in ("symptom", "fix"):
        windows = facet_of(report, key)["windows"]
        assert [w["n"] for w in windows] == [10, 10, 10, 10]
        assert windows[0]["value"] == pytest.approx(1.0) and windows[1]["value"] == pytest.approx(
            1.0
        )
        assert windows[-1]["value"] < 0.3 and windows[-1]["below"]
    assert facet_of(report, "fix")["headline"] == "krippendorff_alpha_masi"
    assert facet_of(report, "screening")["windows"][-1]["value"] is None  # no variation
    prompt = report["prompt"]
    assert prompt is not None
    assert [f["key"] for f in prompt["facets"]] == ["symptom", "fix"]
    assert prompt["text"] == (
        "Agreement in the latest window fell below the threshold on Symptom, Fix pattern: "
        "consider a recalibration round"
    )
    client.force_login(world.owner)
    html = client.get(page_url(world)).content.decode()
    assert "version changed" not in html  # nothing stored yet: no figures on the page
    assert "has not been computed yet" in html and "fell below" not in html
    computed(world)
    html = client.get(page_url(world)).content.decode()
    assert "fell below the threshold on Symptom, Fix pattern" in html
    assert "data-drift-prompt" in html and "<svg" in html
    assert "version changed" not in html


@pytest.mark.django_db
def test_a_round_that_stays_high_shows_no_prompt(client):
    world = drift_world(items=25, drop_after=None)
    report = round_drift(study=world.study, round=world.round, size=5)
    assert [w["items"] for w in report["windows"]] == [5] * 5
    assert report["prompt"] is None
    assert all(w["value"] == pytest.approx(1.0) for w in facet_of(report, "symptom")["windows"])
    client.force_login(world.owner)
    assert "fell below the threshold" not in client.get(page_url(world, window=5)).content.decode()


@pytest.mark.django_db
def test_every_window_holds_at_least_five_items():
    world = drift_world(items=23)
    for size in (5, 6, 10, 23, 50):
        windows = round_drift(study=world.study, round=world.round, size=size)["windows"]
        assert all(w["items"] >= MIN_WINDOW for w in windows)
        assert sum(w["items"] for w in windows) == 23


@pytest.mark.django_db
def test_a_codebook_version_change_mid_round_is_marked(client):
    world = drift_world(drop_after=None)
    later = CodebookVersion.objects.create(
        codebook=world.version.codebook, number=world.version.number + 1, status="published"
    )
    late = Item.objects.filter(round=world.round).order_by("pk")[25:]
    Annotation.objects.filter(assignment__item__in=list(late)).update(codebook_version=later)
    report = round_drift(study=world.study, round=world.round)
    old, new = f"v{world.version.number}", f"v{later.number}"
    assert [w["versions"] for w in report["windows"]] == [[old], [old], [old, new], [new]]
    assert [w["version_changed"] for w in report["windows"]] == [False, False, True, True]
    # Only the study's current version counts (as in agreement runs): the last window's labels
    # are on the other version, so its α is undefined and it is not judged.
    assert report["windows"][-1]["other_version"] == [new]
    assert facet_of(report, "symptom")["windows"][-1]["value"] is None
    assert facet_of(report, "symptom")["windows"][2]["n"] == 5
    assert report["prompt"] is None
    computed(world)
    client.force_login(world.owner)
    html = client.get(page_url(world)).content.decode()
    assert html.count('data-window="3" data-version-changed') == 1


# --- the page and the API ---------------------------------------------------------------------
@pytest.mark.django_db
def test_annotators_and_strangers_get_404_adjudicators_see_it(client):
    world = drift_world(items=10)
    client.force_login(world.annotators[0])
    assert client.get(page_url(world)).status_code == 404
    assert client.get(api_url(world)).status_code == 404
    client.force_login(UserFactory(username="stranger"))
    assert client.get(page_url(world)).status_code == 404
    adjudicator = UserFactory(username="adjudicator")
    add_member(study=world.study, user=adjudicator, role=Membership.Role.ADJUDICATOR)
    client.force_login(adjudicator)
    assert client.get(page_url(world)).status_code == 200
    assert client.get(api_url(world)).status_code == 200


@pytest.mark.django_db
def test_the_report_links_to_the_page(client):
    world = drift_world(items=10)
    client.force_login(world.owner)
    html = client.get(reverse("agreement:study", args=[world.study.pk])).content.decode()
    assert f'href="{page_url(world)}' in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"window": 4}, "window"),
        ({"window": "x"}, "window"),
        ({"round": "x"}, "round"),
        ({"round": 99}, "round"),
    ],
)
def test_bad_parameters_are_a_400_naming_them(client, query, parameter):
    world = drift_world(items=10)
    client.force_login(world.owner)
    for url in (page_url(world, **query), api_url(world, **query)):
        response = client.get(url)
        assert response.status_code == 400, url
        assert parameter in response.content.decode()


@pytest.mark.django_db
def test_the_api_gives_the_figures_of_the_page(client):
    world = drift_world()
    client.force_login(world.owner)
    query = {"round": world.round.number, "window": 7}
    data = client.get(api_url(world, **query)).json()
    page = client.get(page_url(world, **query))
    assert data == json.loads(json.dumps(page.context["report"]))
    assert data["window"] == 7 and data["prompt"]["facets"][0]["key"] == "symptom"


# The user, the membership (with study and codebook version), the rounds; the label tables
# (submitted annotations, gold items left out, near-duplicates left out, item count, labels,
# usernames, prior imports);
# the round's submitted annotations; the versions; the threshold. None per item or per window.
PAGE_QUERY_COUNT = 13


@pytest.mark.django_db
@pytest.mark.parametrize("items", [10, 30])
def test_the_page_s_query_count_does_not_grow_with_the_items(client, items):
    world = drift_world(items=items, drop_after=items // 2)
    client.force_login(world.owner)
    url = page_url(world, window=5)
    client.get(url)  # the first page keeps whether the top bar shows Import
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) == PAGE_QUERY_COUNT, [q["sql"][:90] for q in queries]


def drift_with_every_label_read(world: World, size: int) -> dict:
    """`round_drift` as it was before a round without a window skipped the label tables."""
    from annotator.agreement.drift import FacetRows, drift
    from annotator.agreement.labels import load_label_table
    from annotator.agreement.services import study_threshold

    labels = load_label_table(
        study_id=world.study.pk, version=world.study.codebook_version, round_id=world.round.pk
    )
    facets = [FacetRows(f.key, f.name, f.kind, f.table, list(f.items)) for f in labels.facets]
    result = drift(
        [],
        facets,
        size=size,
        threshold=study_threshold(world.study),
        version_names={world.version.pk: f"v{world.version.number}"},
        current_version=world.version.pk,
    )
    return {"study": world.study.pk, "round": world.round.number, **result}


@pytest.mark.django_db
@pytest.mark.parametrize("pairable", [0, MIN_WINDOW - 1])
def test_a_round_without_a_window_reads_no_labels_and_shows_the_same(pairable):
    world = drift_world(items=8, drop_after=None)
    undated = Annotation.objects.filter(assignment__item__round=world.round)
    dated_items = Item.objects.filter(round=world.round).order_by("pk")[:pairable]
    undated.exclude(assignment__item__in=list(dated_items)).update(submitted_at=None)

    with CaptureQueriesContext(connection) as queries:
        report = round_drift(study=world.study, round=world.round)

    assert report["windows"] == [] and report["pairable_items"] == pairable
    assert {**report, "pairable_items": 0} == drift_with_every_label_read(world, 10)
    assert not any("annotationlabel" in q["sql"] for q in queries)


# --- stored by the agreement run of the round -------------------------------------------------
def without_run(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("run", "computed_at")}


@pytest.mark.django_db
def test_a_run_of_the_round_stores_the_figures_the_page_would_compute(client):
    world = drift_world()
    run = computed(world)
    stored = stored_round_drift(study=world.study, round=world.round)
    assert stored.run == run and stored.pending is None
    assert stored.report is not None
    assert stored.report["run"] == run.pk
    assert stored.report["computed_at"] == run.finished_at.isoformat()
    assert without_run(stored.report) == round_drift(study=world.study, round=world.round)
    client.force_login(world.owner)
    page = client.get(page_url(world))
    html = page.content.decode()
    assert f'Computed by <a href="{run.get_absolute_url()}">agreement run {run.pk}</a>' in html
    assert ">Recompute for round" in html
    assert client.get(api_url(world)).json() == json.loads(json.dumps(page.context["report"]))


@pytest.mark.django_db
def test_stored_figures_are_judged_against_the_threshold_of_the_moment():
    world = drift_world()
    computed(world)
    assert stored_round_drift(study=world.study, round=world.round).report["prompt"] is not None
    set_threshold(study=world.study, threshold=0.01)
    report = stored_round_drift(study=world.study, round=world.round).report
    first = facet_of(report, "symptom")["windows"][0]
    assert report["threshold"] == 0.01 and "meets α ≥ 0.01" in first["judgement"]
    assert without_run(report) == round_drift(study=world.study, round=world.round)


@pytest.mark.django_db
def test_runs_of_every_round_or_of_chosen_facets_store_no_drift():
    world = drift_world(items=10)
    every_round = start_agreement_run(study=world.study, enqueue=False)
    run_agreement_run(run_id=every_round.pk)
    computed(world, facets=["symptom"])
    assert not DriftReport.objects.exists()


@pytest.mark.django_db
def test_before_any_run_the_page_offers_to_compute_and_the_api_says_how(client):
    world = drift_world(items=10)
    pending = start_agreement_run(study=world.study, round=world.round, enqueue=False)
    client.force_login(world.owner)
    html = client.get(page_url(world)).content.decode()
    assert "has not been computed yet" in html and ">Compute for round" in html
    assert f"agreement run {pending.pk}</a> (queued)" in html
    assert "data-window=" not in html
    data = client.get(api_url(world)).json()
    assert data["run"] is None and data["windows"] == [] and data["facets"] == []
    assert data["pending_run"] == pending.pk and "agreement-runs" in data["detail"]


@pytest.mark.django_db
def test_the_tables_show_a_page_of_windows_the_last_by_default(client, monkeypatch):
    monkeypatch.setattr(drift_views, "PAGE_WINDOWS", 5)
    world = drift_world(items=60)  # 12 windows of 5
    client.force_login(world.owner)
    html = client.get(page_url(world, window=5)).content.decode()
    assert "Windows 11–12 of 12 in the tables (page 3 of 3" in html
    assert 'data-window="11"' in html and 'data-window="10"' not in html
    first = client.get(page_url(world, window=5, page=1)).content.decode()
    assert 'data-window="1"' in first and 'data-window="6"' not in first
    assert "page=2" in first and 'rel="prev"' not in first
    assert client.get(page_url(world, window=5, page=4)).status_code == 400


def test_a_chart_of_many_windows_draws_the_line_and_names_about_ten():
    windows = [{"number": n, "value": 0.5 + (n % 7) / 20} for n in range(1, 1112)]
    chart = facet_chart({"key": "symptom", "windows": windows}, 0.8)
    (line,) = chart["lines"]
    assert line["marks"] == [] and line["path"].count(",") == 1111
    named = [tick["round"] for tick in chart["rounds"]]
    assert 9 <= len(named) <= 11 and named[0] == 1 and named[-1] == 1111
    few = facet_chart({"key": "symptom", "windows": windows[:20]}, 0.8)
    assert len(few["lines"][0]["marks"]) == 20 and len(few["rounds"]) == 20


# The user, the membership (with study and codebook version), the rounds; the stored drift with
# its run; a newer run of the round; the threshold. None per item or per window.
STORED_PAGE_QUERY_COUNT = 6


@pytest.mark.django_db
@pytest.mark.parametrize("items", [10, 40])
def test_the_stored_page_s_query_count_does_not_grow(client, items):
    world = drift_world(items=items, drop_after=items // 2)
    computed(world)
    client.force_login(world.owner)
    url = page_url(world)
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    assert len(queries) == STORED_PAGE_QUERY_COUNT, [q["sql"][:90] for q in queries]
