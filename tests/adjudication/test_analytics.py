"""Disagreement analytics: decisions by source, reasons by facet, the most-confused pairs, time
to resolution; owners and adjudicators only, page and API alike, a fixed number of queries."""

from __future__ import annotations

import csv
import io
from collections import Counter
from datetime import timedelta
from itertools import combinations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotator.adjudication.analytics import compute_analytics, disagreement_analytics
from annotator.adjudication.models import Decision, ItemAgreement
from annotator.adjudication.services import adjudicate_item
from annotator.studies.models import Annotation, AnnotationLabel, Item
from tests.adjudication.helpers import Scene, label_next, make_scene
from tests.adjudication.test_api import api

pytestmark = pytest.mark.django_db


def as_user(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def page_url(scene: Scene, **query: str) -> str:
    url = reverse("adjudication:analytics", args=[scene.study.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def api_url(scene: Scene) -> str:
    return reverse("api-disagreement-analytics", args=[scene.study.pk])


def adjudicate(scene: Scene, item: Item, reason: str, symptom: str = "oom") -> Decision:
    labels = scene.world.labels(screening="relevant", symptom=symptom)
    return adjudicate_item(
        item=item, user=scene.adjudicator, labels=labels, reason=reason, version=0
    )


@pytest.fixture
def big(db) -> Scene:  # type: ignore[no-untyped-def]
    """k = 2 over 8 items: the world the figures are read from."""
    return make_scene(items=8)


def plant(scene: Scene) -> dict[str, Item]:
    """Disagreements decided for different reasons, one left undecided, one unanimous."""
    items = {
        "slip": label_next(scene, {"symptom": "hang"}, {"symptom": "oom"}),
        "gap": label_next(
            scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "oom", "fix": ["config"]}
        ),
        "slip2": label_next(scene, {"symptom": "oom"}, {"symptom": "hang"}),
        "open": label_next(
            scene,
            {"symptom": "slow", "fix": ["version"]},
            {"symptom": "crash", "fix": ["version", "config"]},
        ),
        "same": label_next(scene, {"symptom": "oom"}, {"symptom": "oom"}),
    }
    adjudicate(scene, items["slip"], "annotator-slip")
    adjudicate(scene, items["gap"], "guideline-gap")
    adjudicate(scene, items["slip2"], "annotator-slip", symptom="hang")
    return items


def test_counts_equal_an_independent_count_over_the_orm(big: Scene) -> None:
    plant(big)
    report = disagreement_analytics(study=big.study)

    # decisions by source, undecided = complete items without a decision
    decided = Counter(
        Decision.objects.filter(item__study=big.study).values_list("source", flat=True)
    )
    undecided = ItemAgreement.objects.filter(item__study=big.study).undecided().count()
    total = report["sources"]["total"]
    assert {s: total[s] for s in decided} == dict(decided)
    assert total["undecided"] == undecided == 1
    assert total["unanimous"] == 1 and total["adjudicated"] == 3
    assert total["total"] == 5
    assert report["sources"]["rounds"] == [{"round": 1, **total}]

    # reasons by facet, counted decision by decision
    expected: Counter[tuple[str, str]] = Counter()
    for decision in Decision.objects.filter(item__study=big.study, source="adjudicated"):
        for facet in decision.item.agreement.disagreeing_facets.all():
            expected[(decision.reason, facet.key)] += 1
    table = report["reasons_by_facet"]
    got = {
        (row["reason"], key): n for row in table["rows"] for key, n in row["counts"].items() if n
    }
    assert got == dict(expected)
    assert got == {
        ("annotator-slip", "symptom"): 2,
        ("guideline-gap", "symptom"): 1,
        ("guideline-gap", "fix"): 1,
    }
    assert [f["key"] for f in table["facets"]] == ["symptom", "fix"]
    assert {row["reason"]: row["total"] for row in table["rows"]} == {
        "annotator-slip": 2,
        "guideline-gap": 1,
    }


def independent_pairs(scene: Scene) -> Counter[tuple[str, str, tuple[tuple[str, ...], ...]]]:
    out: Counter[tuple[str, str, tuple[tuple[str, ...], ...]]] = Counter()
    for agreement in ItemAgreement.objects.filter(item__study=scene.study):
        for facet in agreement.disagreeing_facets.all():
            answers = set()
            for annotation in Annotation.objects.filter(
                assignment__item=agreement.item, status="submitted"
            ):
                codes = tuple(
                    sorted(
                        AnnotationLabel.objects.filter(
                            annotation=annotation, facet=facet
                        ).values_list("category__code", flat=True)
                    )
                )
                if codes:
                    answers.add(codes)
            for pair in combinations(sorted(answers), 2):
                out[(facet.key, "", pair)] += 1
    return out


def test_confused_pairs_are_ordered_by_count_with_item_links(big: Scene) -> None:
    items = plant(big)
    report = disagreement_analytics(study=big.study)
    groups = {g["facet"]: g for g in report["confused_pairs"]}
    assert set(groups) == {"symptom", "fix"}
    symptom = groups["symptom"]["pairs"]
    assert symptom[0] == {
        "a": ["hang"],
        "b": ["oom"],
        "count": 3,
        "items": sorted([items["slip"].pk, items["gap"].pk, items["slip2"].pk]),
    }
    assert symptom[1] == {"a": ["crash"], "b": ["slow"], "count": 1, "items": [items["open"].pk]}
    # multi-choice: pairs of label sets
    assert {(tuple(p["a"]), tuple(p["b"])) for p in groups["fix"]["pairs"]} == {
        (("config",), ("version",)),
        (("config", "version"), ("version",)),
    }
    counts = [p["count"] for g in report["confused_pairs"] for p in g["pairs"]]
    got = Counter(
        {
            (g["facet"], "", (tuple(p["a"]), tuple(p["b"]))): p["count"]
            for g in report["confused_pairs"]
            for p in g["pairs"]
        }
    )
    assert got == independent_pairs(big)
    assert counts
    page = as_user(big.adjudicator).get(page_url(big)).content.decode()
    for item in items["slip"], items["gap"], items["slip2"]:
        assert reverse("adjudication:item", args=[item.pk]) in page


def test_time_to_resolution_from_planted_timestamps(big: Scene) -> None:
    items = plant(big)
    start = timezone.now() - timedelta(days=10)
    hours = {"slip": 1, "gap": 10, "slip2": 100}
    for name, h in hours.items():
        item = items[name]
        annotations = Annotation.objects.filter(assignment__item=item).order_by("pk")
        first, last = list(annotations)
        Annotation.objects.filter(pk=first.pk).update(submitted_at=start - timedelta(hours=5))
        Annotation.objects.filter(pk=last.pk).update(submitted_at=start)
        Decision.objects.filter(item=item).update(created_at=start + timedelta(hours=h))
    time = disagreement_analytics(study=big.study)["time_to_resolution"]
    assert time["count"] == 3
    assert time["median"] == 10 * 3600
    assert time["p90"] == 100 * 3600  # nearest rank: ceil(0.9 * 3) = 3rd
    assert time["max"] == 100 * 3600
    assert [t["item"] for t in time["slowest"]] == [
        items["slip2"].pk,
        items["gap"].pk,
        items["slip"].pk,
    ]
    page = as_user(big.owner).get(page_url(big)).content.decode()
    assert "median 10.0 h" in page and "max 4.2 days" in page
    assert reverse("adjudication:item", args=[items["slip2"].pk]) in page


def test_owner_and_adjudicator_only(scene: Scene) -> None:
    label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    for user in (scene.owner, scene.adjudicator):
        assert as_user(user).get(page_url(scene)).status_code == 200
        assert api(user).get(api_url(scene)).status_code == 200
    for user in (scene.annotators[0], scene.outsider):
        assert as_user(user).get(page_url(scene)).status_code == 404
        assert api(user).get(api_url(scene)).status_code == 404


def test_the_page_names_no_annotator(big: Scene) -> None:
    plant(big)
    for response in (
        as_user(big.adjudicator).get(page_url(big)),
        api(big.adjudicator).get(api_url(big)),
    ):
        text = response.content.decode()
        for user in big.annotators:
            assert user.username not in text


def test_api_equals_page_figures(big: Scene) -> None:
    plant(big)
    response = api(big.adjudicator).get(api_url(big), {"round": "1"})
    assert response.status_code == 200
    page = as_user(big.adjudicator).get(page_url(big, round="1"))
    round_ = big.study.rounds.get()
    answer = response.json()
    assert answer.pop("stale") is False and answer.pop("as_of")  # when they were computed
    assert answer == disagreement_analytics(study=big.study, round=round_)
    assert answer == page.context["report"]
    assert answer["round"] == 1


@pytest.mark.parametrize("value", ["x", "-1", "²", "99999999999", "7"])
def test_bad_round_is_400_naming_the_parameter(scene: Scene, value: str) -> None:
    page = as_user(scene.owner).get(page_url(scene), {"round": value})
    answer = api(scene.owner).get(api_url(scene), {"round": value})
    for response in (page, answer):
        assert response.status_code == 400, value
        assert "round" in response.content.decode()


def test_csv_downloads(big: Scene) -> None:
    plant(big)
    client = as_user(big.owner)
    reasons = client.get(page_url(big, csv="reasons"))
    assert reasons["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(reasons.content.decode())))
    assert {r["reason"]: (r["symptom"], r["fix"], r["total"]) for r in rows} == {
        "annotator-slip": ("2", "0", "2"),
        "guideline-gap": ("1", "1", "1"),
    }
    pairs = list(
        csv.DictReader(io.StringIO(client.get(page_url(big, csv="pairs")).content.decode()))
    )
    assert pairs[0]["facet"] == "symptom" and pairs[0]["count"] == "3"
    assert client.get(page_url(big, csv="nope")).status_code == 400


def test_queries_do_not_grow_with_the_items(big: Scene) -> None:
    page_client, api_client = as_user(big.adjudicator), api(big.adjudicator)

    def count() -> tuple[list[str], list[str]]:
        page_client.get(page_url(big))  # the session's first read, outside the count
        with CaptureQueriesContext(connection) as page_queries:
            assert page_client.get(page_url(big)).status_code == 200
        with CaptureQueriesContext(connection) as api_queries:
            assert api_client.get(api_url(big)).status_code == 200
        return [q["sql"] for q in page_queries], [q["sql"] for q in api_queries]

    first = label_next(big, {"symptom": "hang"}, {"symptom": "oom"})
    adjudicate(big, first, "other")
    small = count()
    plant(big)
    more = label_next(big, {"symptom": "slow"}, {"symptom": "oom"})
    adjudicate(big, more, "codebook-change")
    assert Decision.objects.filter(item__study=big.study).count() == 6
    large = count()
    assert len(large[0]) == len(small[0]), "\n".join(large[0])
    assert len(large[1]) == len(small[1]) <= 10, "\n".join(large[1])


def test_figures_are_kept_until_a_write_they_depend_on(
    big: Scene, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    items = plant(big)
    first = disagreement_analytics(study=big.study)
    with django_assert_num_queries(1):  # the fingerprint; the figures come from the cache
        assert disagreement_analytics(study=big.study) == first

    def total() -> dict[str, int]:
        return disagreement_analytics(study=big.study)["sources"]["total"]

    fresh = label_next(big, {"symptom": "crash"}, {"symptom": "oom"})  # a new agreement row
    assert total()["undecided"] == first["sources"]["total"]["undecided"] + 1
    adjudicate(big, fresh, "other")  # a new decision
    assert total()["adjudicated"] == 4 and total()["undecided"] == 1
    adjudicate_item(  # a decision changed: its reason moves in the reasons table
        item=items["gap"],
        user=big.adjudicator,
        labels=big.world.labels(screening="relevant", symptom="oom"),
        reason="other",
        version=Decision.objects.get(item=items["gap"]).version,
    )
    reasons = disagreement_analytics(study=big.study)["reasons_by_facet"]["rows"]
    assert {r["reason"]: r["total"] for r in reasons} == {"annotator-slip": 2, "other": 2}
    Decision.objects.filter(item=fresh).delete()  # a decision removed
    assert total()["adjudicated"] == 3 and total()["undecided"] == 2
    assert disagreement_analytics(study=big.study) == compute_analytics(
        study=big.study, round=None, items=Item.objects.filter(study=big.study)
    )
