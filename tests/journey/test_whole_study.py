"""A whole study in Chromium, through the pages only, with a real Celery worker.

The owner uploads issues and comments (import jobs), imports the seed codebook and publishes it,
creates a study (k = 2) with three annotators and an adjudicator, and adds a calibration round
of 4 issues and a main round of 6. The three annotators label blind in their own browser
contexts with the keyboard only; the worker computes each round's agreement when its last label
comes in; the adjudicator resolves the disagreements; the CSV and JSON exports downloaded from
the export page hold the decisions of the database, item by item.

Which items the annotators disagree on is planned: on a planned item, its second labeler picks
"not distributed-specific" and "inference", where everyone else picks "yes" and "training &
evaluation"; all pick the symptom "hang & timeout" (the seed codebook's rules ask a relevant
issue for all three). So the report's observed agreement, the queue and the final labels are
all known in advance.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from annotator.agreement.models import AgreementRun
from annotator.issues.access import grant_import
from annotator.studies.models import Annotation, Assignment, Item, Study
from taxonomy_app.models import Facet
from tests.factories import PASSWORD, UserFactory
from tests.issues.test_import_service import COMMENTS, ISSUES
from tests.journey import helpers as steps

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SEED_CODEBOOK = Path(__file__).resolve().parents[2] / "taxonomy_app/seed/distributed_dl_bugs.yaml"
ANNOTATORS = ["ann-one", "ann-two", "ann-three"]
# Keys on the annotate page. A single choice moves on to the next facet by itself:
# screening → distributed-specific → stage → symptom (its second key: the group "program
# failure" is leaf-only, so it has none, and its leaves come first); Enter submits.
AGREE_KEYS = ["1", "1", "4", "2"]  # relevant, yes, training & evaluation, hang & timeout
DIFFER_KEYS = ["1", "2", "5", "2"]  # relevant, no, inference, hang & timeout
HANG = {"symptom": {"hang-timeout"}}
AGREED = {
    "screening": {"relevant"},
    "distributed": {"yes"},
    "stage": {"training-evaluation"},
    **HANG,
}
DIFFERED = {"screening": {"relevant"}, "distributed": {"no"}, "stage": {"inference"}, **HANG}
FIRST_NOTE = "NCCL watchdog fired on rank 3"


@dataclass
class Plan:
    """What the test knows: each issue's round, the issues labeled differently, and as the
    labeling goes, who labeled what."""

    study_id: int
    round_of: dict[str, str]
    disagree: set[str]
    labeled: Counter[str] = field(default_factory=Counter)
    given: dict[tuple[str, str], dict[str, set[str]]] = field(default_factory=dict)
    differed_by: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def keys_for(self, issue: str) -> list[str]:
        return DIFFER_KEYS if self.differs(issue) else AGREE_KEYS

    def differs(self, issue: str) -> bool:
        return issue in self.disagree and self.labeled[issue] == 1


def test_a_whole_study_from_import_to_export(
    live_server, browser: Browser, celery_worker_process, tmp_path: Path, settings
) -> None:
    # Five accounts are made and logged in; the default hasher's rounds would cost seconds.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    url = live_server.url
    grant_import(UserFactory(username="owner"))  # imports the issues first
    owner = steps.open_session(browser, url, "owner", PASSWORD)
    owner_imports_issues_and_publishes_the_codebook(owner)
    passwords = owner_creates_the_study(owner)
    plan = plan_the_labels(Study.objects.get(name="DDL bugs"))

    annotators = {n: steps.open_session(browser, url, n, passwords[n]) for n in ANNOTATORS}
    annotators_label_blind_with_the_keyboard(annotators, plan)
    assert steps.annotation_codes(plan.study_id) == plan.given
    for name, page in annotators.items():
        annotator_sees_only_their_own_labels(page, url, plan, name)

    owner_reads_the_agreement_report(owner, url, plan)
    adjudicator = steps.open_session(browser, url, "adjudicator", passwords["adjudicator"])
    adjudicator_resolves_the_disagreements(adjudicator, plan)
    decisions = the_decisions_are_the_planned_ones(plan)

    for fmt in ("csv", "json"):
        path = steps.download_export(owner, plan.study_id, url, fmt, tmp_path)
        assert path.suffix == f".{fmt}"
        the_export_holds_the_decisions(steps.read_final_dataset(path), decisions)
    steps.close_sessions(owner, adjudicator, *annotators.values())


# --- the owner -------------------------------------------------------------------------------
def owner_imports_issues_and_publishes_the_codebook(page: Page) -> None:
    summary = steps.upload_issues(page, ISSUES)
    assert summary == "created 36, updated 0, unchanged 0, skipped 0"
    steps.upload_issues(page, COMMENTS)
    steps.import_and_publish_codebook(page, SEED_CODEBOOK, "First version for the DDL study.")


def owner_creates_the_study(page: Page) -> dict[str, str]:
    page.get_by_role("link", name="Studies").click()
    page.get_by_role("link", name="New study").click()
    page.get_by_label("Name").fill("DDL bugs")
    page.get_by_label("Codebook version").select_option(index=1)
    page.get_by_label("Overlap k").fill("2")
    page.get_by_label("Guidelines").fill("Screen first; the stage only for relevant issues.")
    page.get_by_role("button", name="Create study").click()
    expect(page.locator("h1")).to_have_text("DDL bugs")

    steps.study_nav(page, "Members")
    passwords = steps.add_member_accounts(page, ANNOTATORS, "annotator")
    passwords |= steps.add_member_accounts(page, ["adjudicator"], "adjudicator")
    page.get_by_role("link", name="DDL bugs").click()
    steps.study_nav(page, "Add issues")
    steps.add_issues_to_new_round(page, "A new calibration round", sample=4, seed=7)
    steps.study_nav(page, "Add issues")
    steps.add_issues_to_new_round(page, "A new main round", sample=6, seed=8)
    rounds = page.locator("table.numbers tbody tr")
    expect(rounds).to_have_count(2)  # the new study's empty round 1 became the calibration round
    # every annotator labels a calibration item; k of them a main one
    first, second = (re.compile(f"^{kind}") for kind in ("calibration", "main"))
    expect(rounds.nth(0).locator("td")).to_have_text(["Round 1", first, "0 / 12 (0%)"])
    expect(rounds.nth(1).locator("td")).to_have_text(["Round 2", second, "0 / 12 (0%)"])
    return passwords


def plan_the_labels(study: Study) -> Plan:
    """Disagreement on the 3rd and 4th calibration items and on every other main item."""
    round_of, disagree = {}, set()
    for round in study.rounds.order_by("number"):
        items = Item.objects.filter(round=round).select_related("issue__repository")
        issues = [str(item.issue) for item in items.order_by("position")]
        round_of |= dict.fromkeys(issues, round.kind)
        disagree |= set(issues[2:] if round.kind == "calibration" else issues[1::2])
    assert Counter(round_of.values()) == {"calibration": 4, "main": 6}
    return Plan(study_id=study.pk, round_of=round_of, disagree=disagree)


def owner_reads_the_agreement_report(page: Page, url: str, plan: Plan) -> None:
    """Both rounds' runs were started by the last submit of each round and computed by the
    worker. Observed agreement on "distributed-specific": calibration (3 raters) has 2
    unanimous items and 2 with one dissenter, (1 + 1 + 1/3 + 1/3) / 4 = 0.667; the main round
    (2 raters) 3 unanimous of 6, 0.500."""
    page.goto(f"{url}/studies/{plan.study_id}/")
    steps.study_nav(page, "Agreement")
    status = page.locator("#run-status")
    expect(status).to_have_attribute("data-status", "succeeded", timeout=steps.JOB_TIMEOUT_MS)
    runs = {r.round.kind: r for r in AgreementRun.objects.filter(study_id=plan.study_id)}
    assert {r.trigger for r in runs.values()} == {AgreementRun.Trigger.ROUND_COMPLETE}
    assert set(runs) == {"calibration", "main"}
    recent = page.locator("section", has_text="Recent runs").locator("tbody tr")
    expect(recent).to_have_count(2)
    expect(recent.filter(has_text="round completed").filter(has_text="succeeded")).to_have_count(2)
    for kind, units, p_o in (("main", 6, "0.500"), ("calibration", 4, "0.667")):
        recent_runs = page.locator("section", has_text="Recent runs")
        recent_runs.get_by_role("link", name=str(runs[kind].pk), exact=True).click()
        expect(page.locator("h1")).to_contain_text(f"run {runs[kind].pk}")
        facet = page.locator("#facet-distributed")
        expect(facet.locator('[data-coefficient="percent_agreement"] .value')).to_have_text(p_o)
        expect(facet.locator("[data-design]")).to_contain_text(f"Units {units}")


# --- the annotators --------------------------------------------------------------------------
def annotators_label_blind_with_the_keyboard(pages: dict[str, Page], plan: Plan) -> None:
    """The first annotator labels the first item (with a note) before the others open theirs;
    then they take turns, one item each, until nobody is given anything more. The third
    annotator skips their first main-round item; someone else labels it."""
    for page in pages.values():
        page.get_by_role("link", name="Studies").click()
        page.get_by_role("link", name="Label →").click()
        assert steps.annotate_page_ready(page)
    first_name = ANNOTATORS[0]
    first = steps.current_issue(pages[first_name])
    label_item(pages[first_name], first_name, plan, note=FIRST_NOTE)
    for name in ANNOTATORS[1:]:
        page = pages[name]
        page.reload()
        steps.annotate_page_ready(page)
        assert steps.current_issue(page) == first  # breadth first: the item labeled once
        expect(page.locator("#annotate-form input:checked")).to_have_count(0)
        expect(page.locator("#notes")).to_have_value("")
        assert FIRST_NOTE not in page.content()
    take_turns(pages, plan)
    noted = Annotation.objects.filter(notes=FIRST_NOTE)
    assert [a.assignment.annotator.username for a in noted] == [first_name]
    # the skipped item went to the two others; every item has its labels
    skipped = Assignment.objects.select_related("item__issue__repository").get(status="skipped")
    assert plan.skipped == {str(skipped.item.issue): skipped.annotator.username}
    items = Item.objects.filter(study_id=plan.study_id)
    assert [i.submitted_count for i in items] == [i.quota for i in items]
    assert skipped.item.submitted_count == 2


def take_turns(pages: dict[str, Page], plan: Plan) -> None:
    for _ in range(40):  # 24 labels and a skip take 9 turns each at most
        done = 0
        for name, page in pages.items():
            if not steps.annotate_page_ready(page):
                page.reload()  # a skipped slot may have come free since
                done += not steps.annotate_page_ready(page)
                continue
            issue = steps.current_issue(page)
            if name == ANNOTATORS[2] and plan.round_of[issue] == "main" and not plan.skipped:
                plan.skipped[issue] = name
                steps.submit_with(page, ["x", "Enter"])  # skip: the reason select, Enter
            else:
                label_item(page, name, plan)
        if done == len(pages):
            return
    raise AssertionError(f"labeling did not finish: {plan.labeled}")


def label_item(page: Page, name: str, plan: Plan, note: str = "") -> None:
    issue = steps.current_issue(page)
    keys = plan.keys_for(issue)
    if plan.differs(issue):
        plan.differed_by[issue] = name
    expected = DIFFERED if keys is DIFFER_KEYS else AGREED
    if note:
        steps.press_keys(page, keys)
        page.keyboard.press("t")
        page.keyboard.type(note)
        steps.submit_with(page, ["Control+Enter"])
    else:
        steps.submit_with(page, [*keys, "Enter"])
    plan.labeled[issue] += 1
    plan.given[(issue, name)] = expected


def annotator_sees_only_their_own_labels(page: Page, url: str, plan: Plan, name: str) -> None:
    mine = Assignment.objects.filter(item__study_id=plan.study_id, annotator__username=name)
    shared = Assignment.objects.filter(
        item__in=mine.values("item"), status=Assignment.Status.SUBMITTED
    ).exclude(annotator__username=name)
    theirs = shared.select_related("annotator").first()
    assert theirs is not None
    for path in (
        f"/studies/assignments/{theirs.pk}/",
        f"/adjudication/items/{theirs.item_id}/",
        f"/adjudication/studies/{plan.study_id}/",
        f"/agreement/studies/{plan.study_id}/",
        f"/exports/studies/{plan.study_id}/",
    ):
        response = page.goto(f"{url}{path}")
        assert response is not None and response.status == 404, path
    # the item's page lists the annotations the viewer may see: only their own
    page.goto(f"{url}/studies/items/{theirs.item_id}/")
    expect(page.locator("tbody tr td:first-child")).to_have_text([name])
    assert theirs.annotator.username not in page.content()
    api = page.request.get(f"{url}/api/studies/{plan.study_id}/annotations/").json()
    assert {row["annotator"] for row in api["results"]} == {name}
    assert len(api["results"]) == sum(1 for _, who in plan.given if who == name)


# --- the adjudicator -------------------------------------------------------------------------
def adjudicator_resolves_the_disagreements(page: Page, plan: Plan) -> None:
    """In calibration the adjudicator sides with the majority, in the main round with the
    dissenter: for each facet that differs (distributed-specific, then stage), key N takes
    annotator N's labels; `r` and typing pick the reason; Enter saves and opens the next."""
    page.get_by_role("link", name="Studies").click()
    page.get_by_role("link", name="DDL bugs").click()
    steps.study_nav(page, "Adjudicate")
    expect(page.locator("[data-remaining]")).to_have_text(str(len(plan.disagree)))
    page.get_by_role("link", name="Start with the first").click()
    for _ in range(len(plan.disagree)):
        issue = steps.current_issue(page)
        expect(page.locator("tr.current")).to_contain_text("Distributed-specific")
        headers = page.locator("table.compare thead th").all_inner_texts()[1:]
        names = [header.split()[1] for header in headers]
        dissenter = plan.differed_by[issue]
        if plan.round_of[issue] == "calibration":
            column = next(i for i, n in enumerate(names, 1) if n != dissenter)
        else:
            column = names.index(dissenter) + 1
        steps.press_keys(page, [str(column), str(column), "r"])
        page.keyboard.type("guideline")
        steps.press_keys(page, ["Escape", "Enter"])
        expect(page.locator(".messages")).to_contain_text(f"Decision saved for {issue}")
    expect(page.get_by_text("The queue is empty")).to_be_visible()


def the_decisions_are_the_planned_ones(plan: Plan) -> dict[int, dict[str, Any]]:
    decisions = steps.decisions_in_database(plan.study_id)
    assert len(decisions) == 10
    for decision in decisions.values():
        issue = decision["issue"]
        if issue not in plan.disagree:
            assert (decision["source"], decision["codes"]) == ("unanimous", AGREED), issue
        else:
            final = AGREED if plan.round_of[issue] == "calibration" else DIFFERED
            assert (decision["source"], decision["codes"]) == ("adjudicated", final), issue
    return decisions


def the_export_holds_the_decisions(
    rows: dict[int, dict[str, Any]], decisions: dict[int, dict[str, Any]]
) -> None:
    facet_keys = Facet.objects.filter(version__status="published").values_list("key", flat=True)
    assert set(rows) == set(decisions)
    for item_id, decision in decisions.items():
        row = rows[item_id]
        assert f"{row['repository']}#{row['number']}" == decision["issue"]
        assert row["decision_source"] == decision["source"]
        for key in facet_keys:
            assert steps.exported_codes(row, key) == decision["codes"].get(key, set()), (
                item_id,
                key,
            )
