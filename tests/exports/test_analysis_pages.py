# ruff: noqa: RUF001 -- the paragraph is written in its own notation (Greek letters).
"""The analysis page and API of a reference-sized study: levels and stages, filters as selects,
paper downloads (CSV, LaTeX, SVG, PNG, the methods paragraph), bad parameters answered 400 with
their name; and the methods paragraph of the demo study against its records."""

from __future__ import annotations

import io
import re
from xml.etree import ElementTree

import pytest
from django.core.management import call_command
from django.urls import reverse
from PIL import Image
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from annotator.adjudication.models import Decision
from annotator.adjudication.services import adjudicate_item
from annotator.agreement.models import AgreementRun
from annotator.exports.dataset import methods_facts, run_analysis
from annotator.exports.methods import methods_latex, methods_markdown
from annotator.studies.demo import DEMO_SEED, DEMO_STUDY
from annotator.studies.models import Item, Study
from annotator.studies.services import next_assignment, submit_annotation
from taxonomy_app.models import Category
from tests.exports.study849 import ReferenceStudy, build_reference_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def reference() -> ReferenceStudy:
    return build_reference_study()


def api_for(user) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user, name='t')[1]}")
    return api


def test_api_returns_every_table_at_the_level_and_stage_asked(reference) -> None:  # type: ignore[no-untyped-def]
    api = api_for(reference.study.created_by)
    url = f"/api/studies/{reference.study.pk}/analysis/"
    body = api.get(url, {"stage": "inference", "level": "leaf"}).json()
    expected = run_analysis(reference.study, {"stage": "inference"})
    assert body["stage"] == "inference" and body["levels"] == {"symptom": "leaf"}
    assert body["decided"] == expected.decided > 0
    assert [t["id"] for t in body["tables"]] == [t.id for t in expected.tables]
    for table, want in zip(body["tables"], expected.tables, strict=True):
        assert table["header"] == want.header and table["rows"] == want.values()
    cross = next(t for t in body["tables"] if t["id"] == "cross-symptom-root-cause")
    assert len(cross["rows"]) == 34 and len(cross["header"]) == 29
    assert body["flow"]["columns"] == ["symptom", "root-cause", "fix-pattern"]
    assert sum(link["issues"] for link in body["flow"]["links"] if link["column"] == 0) == sum(
        sum(row[1:]) for row in cross["rows"]
    )
    top = api.get(url, {"level": "1"}).json()
    cross = next(t for t in top["tables"] if t["id"] == "cross-symptom-root-cause")
    assert [row[0] for row in cross["rows"]] == [
        "program-failure",
        "unexpected-performance",
        "other",
    ]


@pytest.mark.parametrize(
    ("params", "name", "message"),
    [
        ({"level": "3"}, "level", "level: '3' is not 'leaf' or a level from 1 to 2"),
        ({"level": "top"}, "level", "level: 'top' is not 'leaf' or a level from 1 to 2"),
        ({"stage": "warm-up"}, "stage", "stage: 'warm-up' is not one of ['build-import'"),
    ],
)
def test_api_refuses_an_unknown_level_or_stage_naming_it(reference, params, name, message) -> None:  # type: ignore[no-untyped-def]
    response = api_for(reference.study.created_by).get(
        f"/api/studies/{reference.study.pk}/analysis/", params
    )
    assert response.status_code == 400
    assert list(response.json()) == [name] and response.json()[name][0].startswith(message)


def test_page_offers_selects_levels_and_every_download(client, reference) -> None:  # type: ignore[no-untyped-def]
    client.force_login(reference.study.created_by)
    url = reverse("exports:analysis", args=[reference.study.pk])
    page = client.get(url, {"stage": "training-evaluation"}).content.decode()
    for select in ("round", "source", "screening", "repository", "stage", "level-symptom"):
        assert re.search(rf'<select name="{select}"', page), select
    assert '<option value="hpcaitech/ColossalAI">hpcaitech/ColossalAI</option>' in page
    assert '<option value="training-evaluation" selected>Training &amp; evaluation</option>' in page
    assert "stage Training &amp; evaluation" in page
    assert "download=cross-symptom-root-cause&amp;format=tex" in page
    assert "chart=flow&amp;format=png" in page and "methods=tex" in page
    tex = client.get(
        url, {"stage": "inference", "download": "cross-root-cause-fix-pattern", "format": "tex"}
    )
    assert tex["Content-Type"].startswith("application/x-tex")
    assert "stage-inference" in tex["Content-Disposition"]
    text = tex.content.decode()
    assert text.count(r"\toprule") == text.count(r"\midrule") == text.count(r"\bottomrule") == 1
    assert r"\caption{Root cause × fix pattern (stage: Inference)" in text
    assert r"root-cause & fix-communication-configuration &" in text
    svg = client.get(url, {"chart": "bars-share-symptom", "format": "svg"})
    assert svg["Content-Type"] == "image/svg+xml"
    texts = [
        t.text for t in ElementTree.fromstring(svg.content).iter("{http://www.w3.org/2000/svg}text")
    ]
    assert "Setup failure" in texts and "Program failure" not in texts  # the leaves
    png = client.get(url, {"chart": "flow", "format": "png"})
    assert Image.open(io.BytesIO(png.content)).format == "PNG"
    flow = client.get(url, {"chart": "flow", "format": "svg"}).content.decode()
    assert flow.startswith("<?xml") and "<a " not in flow  # no links to pages in a paper's file
    assert client.get(url, {"download": "no-such-table"}).status_code == 404
    bad = client.get(url, {"level-symptom": "5"})
    assert bad.status_code == 400 and "level-symptom: &#x27;5&#x27; is not" in bad.content.decode()


def labels_of(version, **chosen: list[str]) -> dict[int, list[int]]:  # type: ignore[no-untyped-def]
    out: dict[int, list[int]] = {}
    for key, codes in chosen.items():
        for c in Category.objects.filter(
            facet__version=version, facet__key=key.replace("_", "-"), code__in=codes
        ):
            out.setdefault(c.facet_id, []).append(c.pk)
    return out


AGREED = {
    "screening": ["relevant"],
    "distributed": ["yes"],
    "stage": ["training-evaluation"],
    "symptom": ["hang-timeout"],
    "root_cause": ["communication-fault"],
}
OTHER = {
    "screening": ["relevant"],
    "distributed": ["no"],
    "stage": ["inference"],
    "symptom": ["out-of-memory"],
}


def test_methods_paragraph_of_the_demo_study_states_its_records() -> None:
    call_command("seed_demo", password="demo-password-1", stdout=io.StringIO())
    study = Study.objects.get(name=DEMO_STUDY)
    version = study.codebook_version
    people = [m.user for m in study.memberships.filter(role="annotator").select_related("user")]
    for n, person in enumerate(people):
        for i in range(6):  # the first six items; the last one labelled differently
            assignment = next_assignment(study=study, annotator=person)
            chosen = OTHER if (i == 5 and n == 1) else AGREED
            submit_annotation(
                assignment=assignment, user=person, labels=labels_of(version, **chosen)
            )
    disputed = Item.objects.filter(study=study, decision__isnull=True, submitted_count=2).get()
    adjudicate_item(
        item=disputed,
        user=study.created_by,
        labels=labels_of(version, **AGREED),
        reason="ambiguous-report",
        version=0,
    )
    call_command("compute_agreement", str(study.pk), stdout=io.StringIO())
    run = AgreementRun.objects.get(study=study, status="succeeded")

    text = methods_markdown(methods_facts(study))
    items = study.items.count()
    assert items == 36
    assert (
        f"For round 1 we selected the imported issues of the repository hpcaitech/ColossalAI: "
        f"{items} issues matched and all were kept ({items} new items, presented in an order shuffled "
        f"with seed {DEMO_SEED})."
    ) in text
    assert f"Labelling ran in 1 round: round 1 (main, {items} items)." in text
    assert "labelled independently by k = 2 annotators" in text
    assert "2 of the study's 2 annotators submitted labels" in text
    assert "The codebook was “Distributed deep-learning bugs”, version 1, with 6 facets" in text
    for facet in run.result["facets"]:
        coefficient = facet["coefficients"][facet["headline"]]
        if coefficient["value"] is None:
            assert f"{facet['name'].lower()}: undefined" in text
        else:
            assert f"{facet['name'].lower()} α = {coefficient['value']:.3f}" in text
    stored = run.result.get("conventions") or {}  # results before conventions: the SE method
    headline = run.result["facets"][0]["coefficients"][run.result["facets"][0]["headline"]]
    assert "Over all rounds, agreement (" in text
    assert f"Intervals: {stored.get('interval') or headline['se_method']}." in text
    unanimous = Decision.objects.filter(item__study=study, source="unanimous").count()
    assert unanimous == 5
    assert (
        "Of the 36 items, 6 have final labels: 5 unanimous and 1 adjudicated (reasons: 1 ambiguous "
        "report); 30 are undecided."
    ) in text
    assert "hpcaitech/ColossalAI" in methods_latex(methods_facts(study))


def test_page_and_api_queries_do_not_grow_with_the_items(client, reference) -> None:  # type: ignore[no-untyped-def]
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(reference.study.created_by)
    url = reverse("exports:analysis", args=[reference.study.pk])
    api = api_for(reference.study.created_by)
    client.get(url), api.get(f"/api/studies/{reference.study.pk}/analysis/")  # sessions, tokens
    counts = []
    for params in ({"round": "2"}, {}):  # 100 items, then all 860
        cache.clear()  # both counted, not one read from the cache
        with CaptureQueriesContext(connection) as page:
            assert client.get(url, params).status_code == 200
        with CaptureQueriesContext(connection) as answer:
            assert (
                api.get(f"/api/studies/{reference.study.pk}/analysis/", params).status_code == 200
            )
        counts.append((len(page), len(answer)))
    assert counts[0] == counts[1], counts
