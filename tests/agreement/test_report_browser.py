# ruff: noqa: RUF001, RUF002, RUF003 -- κ and × are the report's notation.
"""The agreement report at 1280 × 720 in Chromium, measured as a person sees it: the page is
never wider than the window, even with the seed codebook's largest confusion matrices (every
symptom; the fix-pattern label sets); each matrix scrolls inside its own box; every square of
the pairwise κ heatmap shows its number and the colour scale has a legend with values; the
summary of every facet comes first and says how the threshold was judged.

The labels are six annotators' on the demo Colossal-AI issues, written straight to the tables
(drawn at random, so most label sets differ) and computed by the real agreement job.
"""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.issues.models import Repository
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Membership
from annotator.studies.services import add_member, create_study, select_issues
from taxonomy_app.models import CodebookVersion
from tests.browser import log_in
from tests.factories import UserFactory
from tests.issues.test_import_service import COMMENTS, ISSUES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SIZE = (1280, 720)
NAMES = ["annotator-alpha", "annotator-bravo", "annotator-charlie", "annotator-delta"]
NAMES += ["annotator-echo", "annotator-foxtrot"]


def labelled_seed_study() -> tuple[Any, Any]:
    """A study on the seed codebook whose six annotators labelled every demo issue; its run."""
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())
    call_command("load_codebook", publish=True, stdout=io.StringIO())
    owner = UserFactory(username="owner")
    version = CodebookVersion.objects.filter(status="published").latest("pk")
    study = create_study(name="Report", codebook_version=version, owner=owner, overlap_k=6)
    people = [UserFactory(username=name) for name in NAMES]
    for person in people:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    round = study.rounds.get()
    repository = Repository.objects.get(name="ColossalAI")
    select_issues(
        study=study, round=round, filters={"repository": repository.pk}, seed=7, user=owner
    )
    _write_labels(study, version, people)
    run = start_agreement_run(study=study, round=round, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    return owner, run


def _write_labels(study: Any, version: Any, people: list[Any]) -> None:
    rng = random.Random(2512)
    facets = codebook_schema(version).facets
    now = timezone.now()
    items = list(study.items.all())
    assignments = Assignment.objects.bulk_create(
        Assignment(item=item, annotator=person, status=Assignment.Status.SUBMITTED, finished_at=now)
        for item in items
        for person in people
    )
    annotations = Annotation.objects.bulk_create(
        Annotation(
            assignment=a,
            codebook_version=version,
            status=Annotation.Status.SUBMITTED,
            submitted_at=now,
        )
        for a in assignments
    )
    truth = {item.pk: {f.key: rng.choice(f.categories).id for f in facets} for item in items}
    labels = []
    for annotation, assignment in zip(annotations, assignments, strict=True):
        for facet in facets:
            ids = [c.id for c in facet.categories]
            if facet.is_multi:
                chosen = set(rng.sample(ids, rng.choice([1, 2, 3])))
            else:
                keep = rng.random() < 0.6
                chosen = {truth[assignment.item_id][facet.key] if keep else rng.choice(ids)}
            labels += [
                AnnotationLabel(annotation=annotation, facet_id=facet.id, category_id=c)
                for c in chosen
            ]
    AnnotationLabel.objects.bulk_create(labels)


def open_report(browser: Any, url: str, owner: Any, run: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": SIZE[0], "height": SIZE[1]})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, url, owner.username)
    page.goto(url + reverse("agreement:run", args=[run.pk]))
    expect(page.locator("#summary")).to_be_visible()
    return context, page


# Every confusion matrix: its box inside the window, its table as wide as it needs.
MATRICES = """() => [...document.querySelectorAll('.facet-report')].map(section => {
  const box = section.querySelector('.matrix-scroll');
  const r = box.getBoundingClientRect();
  const first = box.querySelector('tbody td').getBoundingClientRect();
  return {facet: section.dataset.facet, left: r.left, right: r.right,
          table: box.querySelector('table').scrollWidth, inner: box.clientWidth,
          columns: box.querySelectorAll('thead th').length,
          firstCell: first.left - r.left, firstRow: first.top - r.top, height: r.height};
})"""


def test_the_page_is_never_wider_than_the_window_with_the_largest_matrices(browser, live_server):
    owner, run = labelled_seed_study()
    context, page = open_report(browser, live_server.url, owner, run)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= SIZE[0], f"the page is {width} px wide at {SIZE[0]}"
    assert page.evaluate("() => document.body.scrollWidth") <= SIZE[0]
    matrices = page.evaluate(MATRICES)
    sizes = {f["key"]: len(f["confusion"]["labels"]) for f in run.result["facets"]}
    assert sizes["fix-pattern"] >= 30 and sizes["symptom"] >= 20  # the large ones
    for matrix in matrices:
        assert matrix["columns"] == sizes[matrix["facet"]]
        assert matrix["left"] >= 0 and matrix["right"] <= SIZE[0], matrix
        # the row names leave the counts in sight: the first cell within the box's left half,
        # the first row within its upper half
        assert matrix["firstCell"] < matrix["inner"] / 2, matrix
        assert matrix["firstRow"] < matrix["height"] / 2, matrix
    widest = max(matrices, key=lambda m: m["table"])
    assert widest["facet"] == "fix-pattern"
    assert widest["table"] > widest["inner"]  # wider than its box: it scrolls there
    # scrolling the box moves the matrix, not the page
    box = page.locator("#facet-fix-pattern .matrix-scroll")
    box.evaluate("el => el.scrollBy(400, 0)")
    assert box.evaluate("el => el.scrollLeft") > 0
    assert page.evaluate("() => window.scrollX") == 0
    context.close()


HEATMAP = """(key) => {
  const svg = document.querySelector(`#facet-${key} svg.heatmap`);
  const texts = [...svg.querySelectorAll('text.value')];
  return [...svg.querySelectorAll('rect')].map((rect, k) => {
    const r = rect.getBoundingClientRect();
    const t = texts[k].getBoundingClientRect();
    return {text: texts[k].textContent.trim(), fill: rect.getAttribute('fill'),
            inside: t.left >= r.left && t.right <= r.right && t.top >= r.top && t.bottom <= r.bottom,
            visible: getComputedStyle(texts[k]).visibility === 'visible' && t.width > 0};
  });
}"""


def test_heatmap_squares_show_their_kappa_and_the_scale_has_a_legend(browser, live_server):
    owner, run = labelled_seed_study()
    context, page = open_report(browser, live_server.url, owner, run)
    for facet in run.result["facets"]:
        cells = facet["pairwise_cohen"]["cells"]
        squares = page.evaluate(HEATMAP, facet["key"])
        assert len(squares) == len(NAMES) ** 2
        flat = [value for row in cells for value in row]
        for square, value in zip(squares, flat, strict=True):
            assert square["visible"] and square["inside"], square
            if value is None:
                assert square["text"] == "—"
            else:  # two decimals (Django writes -0.004 as 0.00, Python as -0.00)
                assert abs(float(square["text"]) - value) <= 0.005 + 1e-9, (square, value)
        legend = page.locator(f"#facet-{facet['key']} .scale-legend li")
        expect(legend).to_have_count(7)
        expect(legend.first).to_have_text("≤ 0")
        expect(legend.nth(5)).to_have_text("1")
        expect(legend.last).to_contain_text("undefined")
        # the column names are there, not only the row names
        columns = page.locator(f"#facet-{facet['key']} svg.heatmap text.column")
        expect(columns).to_have_count(len(NAMES))
    context.close()


def test_the_summary_comes_first_and_says_how_the_threshold_was_judged(browser, live_server):
    owner, run = labelled_seed_study()
    context, page = open_report(browser, live_server.url, owner, run)
    summary = page.locator("#summary")
    first_facet = page.locator(".facet-report").first
    assert summary.bounding_box()["y"] < first_facet.bounding_box()["y"]
    rows = summary.locator("tbody tr")
    expect(rows).to_have_count(len(run.result["facets"]))
    for facet in run.result["facets"]:
        headline = facet["coefficients"][facet["headline"]]
        row = summary.locator(f'tr[data-facet="{facet["key"]}"]')
        if headline["ci"]:
            low = headline["ci"][0]
            expect(row).to_contain_text(f"lower bound {low:.2f}")
            expect(row).to_contain_text(f"{headline['ci'][0]:.3f} – {headline['ci'][1]:.3f}")
        expect(row).to_contain_text(str(headline["n_pairable_units"]))
    box = summary.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= SIZE[0]
    expect(page.locator("#glossary dt")).to_contain_text(["Krippendorff's α"])
    expect(page.locator("#method")).to_contain_text("No bootstrap was run")
    context.close()
