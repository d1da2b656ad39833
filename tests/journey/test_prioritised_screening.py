"""Prioritised screening from import to a random-sample main round, in Chromium with a real
Celery worker.

The owner imports 1,500 issues (a planted signal: the relevant ones share a vocabulary of their
own, tests/screening/synthetic.py) on the Import page, simulates screening on labels known from
an earlier study (`simulate_screening`), declares a prioritised screening round on its page and
adds the issues to it. Two screeners screen: a few items each in the browser with the keyboard,
the rest through the API with their tokens (1,500 items by hand would take the test an hour);
every decision wakes the retrain job in the worker, whose ranks decide the next items. When
the relevant-found curve has been flat for a while the owner draws the audit the panel suggests,
the screeners screen it, and the panel says "stop: recall ≥ 95%"; the owner then takes a seeded
random sample of the included issues into a new main round.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.management import call_command
from playwright.sync_api import Browser, Page, expect

from annotator.accounts.services import create_api_token
from annotator.issues.access import grant_import
from annotator.issues.models import Issue
from annotator.screening.models import ScreeningModel, ScreeningPlan
from annotator.studies.models import Assignment, Item, Membership, Round, Selection
from annotator.studies.services import add_member, create_study
from tests.factories import PASSWORD, UserFactory
from tests.journey import helpers as steps
from tests.screening.synthetic import vocabulary_dataset
from tests.taxonomy_app.factories import published_small

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ISSUES = 1500
SHARE = 0.3
REPO = "hpcaitech/ColossalAI"
SCREENERS = ["screener-one", "screener-two"]


def write_corpus(folder: Path) -> tuple[Path, Path, dict[int, bool]]:
    """The issues as GitHub's REST JSON, the labels CSV of an "earlier study", and the truth."""
    texts, labels = vocabulary_dataset(n=ISSUES, share=SHARE, seed=4)
    records = []
    for number, text in enumerate(texts, start=1):
        records.append(
            {
                "url": f"https://api.github.com/repos/{REPO}/issues/{number}",
                "repository_url": f"https://api.github.com/repos/{REPO}",
                "html_url": f"https://github.com/{REPO}/issues/{number}",
                "id": 50_000 + number,
                "number": number,
                "title": " ".join(text.split()[:8]),
                "state": "closed",
                "labels": [],
                "user": {"login": "reporter"},
                "body": text,
                "created_at": "2024-01-02T03:04:05Z",
                "updated_at": "2024-01-03T03:04:05Z",
                "closed_at": "2024-01-04T03:04:05Z",
                "comments": 0,
            }
        )
    issues = folder / "issues.json"
    issues.write_text(json.dumps(records))
    csv = folder / "earlier_labels.csv"
    rows = ["repository,number,relevant"]
    rows += [f"{REPO},{n},{label}" for n, label in enumerate(labels, start=1)]
    csv.write_text("\n".join(rows) + "\n")
    return issues, csv, {n: bool(label) for n, label in enumerate(labels, start=1)}


class Screener:
    """A screener working through the API with a token: next item, then submit."""

    def __init__(self, base: str, user: Any, truth: dict[int, bool], study_id: int) -> None:
        _, secret = create_api_token(user=user, name="screening", days=1)
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {secret}"
        self.base, self.truth, self.study_id = base, truth, study_id
        self.numbers: dict[int, int] = dict(Issue.objects.values_list("pk", "number"))

    def screen_one(self) -> bool:
        """Screen the next item truthfully; False when none is left."""
        got = self.session.post(f"{self.base}/api/studies/{self.study_id}/next-item/", timeout=30)
        if got.status_code == 204:
            return False
        got.raise_for_status()
        assignment = got.json()
        code = "relevant" if self.truth[self.numbers[assignment["issue"]]] else "not-a-bug"
        sent = self.session.post(
            f"{self.base}/api/assignments/{assignment['id']}/submit/",
            json={"labels": {"screening": [code]}},
            timeout=30,
        )
        sent.raise_for_status()
        return True


def panel(session: requests.Session, base: str, study_id: int, number: int) -> dict[str, Any]:
    got = session.get(f"{base}/api/studies/{study_id}/screening/{number}/", timeout=30)
    got.raise_for_status()
    return dict(got.json())


def screen_in_browser(page: Page, truth: dict[int, bool], count: int) -> None:
    """Screen `count` items on the annotate page with the keyboard (1 relevant, 2 not a bug)."""
    for _ in range(count):
        assert steps.annotate_page_ready(page)
        number = int(steps.current_issue(page).rsplit("#", 1)[1])
        steps.submit_with(page, ["1" if truth[number] else "2", "Enter"])


def test_prioritised_screening_from_import_to_a_random_sample_main_round(
    live_server, browser: Browser, celery_worker_process, tmp_path: Path, settings
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    url = live_server.url
    issues_file, labels_file, truth = write_corpus(tmp_path)
    owner = UserFactory(username="screening-owner")
    grant_import(owner)
    version = published_small(user=owner)
    study = create_study(name="Hangs", codebook_version=version, owner=owner, overlap_k=2)
    screeners = [UserFactory(username=name) for name in SCREENERS]
    for person in screeners:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)

    # The owner imports the issues through the Import page; the worker runs the import.
    owner_page = steps.open_session(browser, url, owner.username, PASSWORD)
    summary = steps.upload_issues(owner_page, issues_file)
    assert f"created {ISSUES}" in summary

    # Simulation on the earlier study's labels: prioritised beats random by far.
    out = io.StringIO()
    call_command(
        "simulate_screening",
        "--issues", str(issues_file), "--labels", str(labels_file), "--json", "--seed", "1",
        stdout=out,
    )  # fmt: skip
    simulated = json.loads(out.getvalue())
    assert simulated["n_issues"] == ISSUES
    assert simulated["wss@95"] > simulated["random_wss@95"] + 0.3

    # The owner declares a prioritised screening round and adds every issue to it.
    owner_page.goto(f"{url}{study.get_absolute_url()}")
    steps.study_nav(owner_page, "New screening round")
    expect(owner_page.get_by_label("Relevant means")).to_have_value(
        str(version.facets.get(key="screening").categories.get(code="relevant").pk)
    )
    owner_page.get_by_label("Seed").fill("1")
    owner_page.get_by_role("button", name="Declare the screening round").click()
    expect(owner_page.get_by_role("heading", level=1)).to_have_text("Screening round 2")
    expect(owner_page.locator("[data-rule]")).to_contain_text("recall < 95%")
    owner_page.goto(f"{url}/studies/{study.pk}/select/")
    owner_page.get_by_label("Round:", exact=True).select_option(label="Round 2 (screening)")
    owner_page.get_by_role("button", name="Add to the round").click()
    expect(owner_page.locator(".messages")).to_contain_text(f"Added {ISSUES} issues to round 2")
    round = Round.objects.get(study=study, number=2)
    assert Item.objects.filter(round=round, quota=2).count() == ISSUES

    # Screeners: a few items each in the browser, with the keyboard…
    pages = [steps.open_session(browser, url, p.username, PASSWORD) for p in screeners]
    for page in pages:
        page.goto(f"{url}/studies/{study.pk}/annotate/")
        screen_in_browser(page, truth, 3)
    steps.close_sessions(*pages)
    # …then through the API, until the relevant-found curve has been flat for 60 items.
    workers = [Screener(url, p, truth, study.pk) for p in screeners]
    owner_api = Screener(url, owner, truth, study.pk).session
    while True:
        for _ in range(10):
            for worker in workers:
                assert worker.screen_one()
        figures = panel(owner_api, url, study.pk, 2)
        if figures["relevant_found"] and figures["decisions_since_last_relevant"] >= 60:
            break
    # The worker retrained along the way and the ranks decided the order.
    assert ScreeningModel.objects.filter(round=round).count() >= 2
    assert Assignment.objects.filter(item__round=round, screening_rank__isnull=False).exists()
    screened = figures["screened"]
    assert screened < ISSUES * 0.6  # far from the end of the pile
    assert figures["relevant_found"] >= 0.95 * sum(truth.values())

    # The owner draws the audit the panel suggests, on the panel page.
    owner_page.goto(f"{url}/screening/studies/{study.pk}/rounds/2/")
    expect(owner_page.locator("[data-verdict]")).to_contain_text("go on: no audit yet")
    suggested = owner_page.locator("#audit").get_by_label("Draw an audit of").input_value()
    assert int(suggested) == figures["suggested_audit_size"]
    owner_page.locator("#audit").get_by_label("seed").fill("3")
    owner_page.get_by_role("button", name="Draw the audit").click()
    expect(owner_page.locator(".messages")).to_contain_text(f"Audit of {suggested} items drawn")
    while panel(owner_api, url, study.pk, 2)["audit"]["audited"] < int(suggested):
        for worker in workers:
            worker.screen_one()
    owner_page.reload()
    verdict = owner_page.locator("[data-verdict]")
    expect(verdict).to_contain_text(re.compile(r"stop: recall ≥ 95% at p = [0-9.e-]+ < 0\.05"))
    expect(owner_page.locator("[data-prisma]")).to_contain_text(f"{ISSUES} candidate issues")
    box = verdict.bounding_box()
    assert box is not None and 0 <= box["y"] < 720 * 3 and box["width"] > 100

    # The included issues go into a new main round as a seeded random sample.
    include = owner_page.locator("#include")
    include.get_by_label("Into").select_option(label="A new main round")
    include.get_by_label("Random sample of").fill("50")
    include.get_by_label("seed").fill("9")
    include.get_by_role("button", name="Add the included issues").click()
    expect(owner_page.locator(".messages")).to_contain_text("taken random sample of 50")
    main = Round.objects.get(study=study, number=3)
    assert main.kind == Round.Kind.MAIN
    chosen = list(Item.objects.filter(round=main).values_list("issue__number", flat=True))
    assert len(chosen) == 50 and all(truth[n] for n in chosen)
    selection = Selection.objects.get(round=main)
    assert selection.source["take"] == "random sample of 50" and selection.seed == 9
    plan = ScreeningPlan.objects.get(round=round)
    assert (
        plan.declared_at
        < Assignment.objects.filter(item__round=round).earliest("assigned_at").assigned_at
    )
    steps.close_sessions(owner_page)
