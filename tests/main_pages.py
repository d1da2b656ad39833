"""The main pages of the app, each with the person who reads it, on one study with something on
every page: an item that waits for adjudication and is open for discussion, a decided item, an
agreement run, a finished export, a codebook draft with a change, an API token, an invitation.

Browser tests that go over every page (tests/test_no_template_syntax.py,
tests/test_accessibility_browser.py) build it once with `main_pages()`."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.tokens import default_token_generator
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotator.accounts.services import create_api_token
from annotator.adjudication.services import post_comment, release_item
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.services import run_export_job, start_export_job
from annotator.screening.services import start_screening_round
from annotator.similarity.models import DuplicateGroup
from annotator.similarity.services import run_duplicate_pass, start_duplicate_pass
from annotator.studies import sql
from annotator.studies.models import Item, Membership, Round
from annotator.studies.services import (
    create_invitation,
    create_round,
    select_issues,
    submit_annotation,
)
from annotator.studies.services.gold import set_gold
from taxonomy_app.services import add_category, start_draft
from tests.adjudication.helpers import Scene, label_next, make_scene
from tests.factories import IssueCommentFactory, IssueFactory

# Who reads a page: the study's owner, its first annotator, its adjudicator, or nobody signed in.
OWNER, ANNOTATOR, ADJUDICATOR, SIGNED_OUT = "owner", "annotator", "adjudicator", "signed out"

# A comment as GitHub threads have them: prose, inline code and a log wider than the thread.
LOG_COMMENT = (
    "Same here with `zero_stage=3`:\n\n```\n"
    + "RuntimeError: NCCL communicator was aborted on rank 3. " * 6
    + "\n```\n"
)


@dataclass(frozen=True)
class Page:
    name: str
    reader: str
    path: str


@dataclass
class MainPages:
    scene: Scene
    pages: list[Page]

    def username(self, reader: str) -> str:
        return {
            OWNER: self.scene.owner.username,
            ANNOTATOR: self.scene.annotators[0].username,
            ADJUDICATOR: self.scene.adjudicator.username,
        }[reader]

    def by_reader(self) -> dict[str, list[Page]]:
        out: dict[str, list[Page]] = {}
        for page in self.pages:
            out.setdefault(page.reader, []).append(page)
        return out


def machine_rows(scene: Scene, items: list[Item]) -> dict[str, int]:
    """A machine rater's finished run with a kept answer per item, as a run leaves them."""
    from annotator.machine.models import MachineCall, MachineRater, MachineRun

    rater = MachineRater.objects.create(
        study=scene.study, name="llm", model="qwen2.5-7b-instruct", prompt_version="v1",
        base_url="http://127.0.0.1:9/v1", parameters={"temperature": 0},
    )  # fmt: skip
    run = MachineRun.objects.create(
        rater=rater, round=scene.world.round, status="succeeded", progress=100,
        counts={"items": 2, "labeled": 2, "invalid": 0, "failed": 0, "skipped": 0},
    )  # fmt: skip
    calls = [
        MachineCall.objects.create(
            run=run,
            rater=rater,
            item=item,
            outcome="labeled",
            structured=True,
            labels={"screening": ["relevant"], "symptom": ["hang"]},
            model_returned="qwen2.5-7b-instruct-q4",
            prompt_sha256="0" * 64,
            messages=[{"role": "user", "content": "# Issue: all-reduce hangs"}],
            response={"choices": []},
            prompt_tokens=900,
            completion_tokens=40,
            latency_ms=120,
        )
        for item in items
    ]
    return {"rater": rater.pk, "run": run.pk, "call": calls[0].pk}


def main_pages() -> MainPages:
    scene = make_scene()
    study, owner = scene.study, scene.owner
    # The first item agrees (decided unanimously), the second waits in the disagreement queue;
    # the first annotator's next item is the annotate page's.
    decided = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    disputed = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    for issue in scene.world.issues:
        IssueCommentFactory(issue=issue, body=LOG_COMMENT)
    release_item(item=disputed)
    post_comment(
        item=disputed,
        user=owner,
        membership=Membership.objects.get(study=study, user=owner),
        body="Both read the log; is it a hang or memory?",
    )
    machine = machine_rows(scene, [decided, disputed])  # before the run: its partitions
    run = start_agreement_run(study=study, round=scene.world.round, user=owner, enqueue=False)
    run_agreement_run(run_id=run.pk)
    export = start_export_job(study=study, user=owner)
    run_export_job(job_id=export.pk)
    published = study.codebook_version
    draft = start_draft(codebook=published.codebook, user=owner)
    add_category(
        facet=draft.facets.get(key="symptom"),
        name="Silent divergence",
        definition="Loss drifts between ranks without an error.",
        user=owner,
    )
    # A training round's item with a gold answer, which the first annotator has submitted: the
    # feedback page (handed out directly; the main round's items come first in the queue).
    training = create_round(study=study, kind=Round.Kind.TRAINING)
    repository = scene.world.issues[0].repository
    IssueFactory(repository=repository, title="Training: all-reduce hangs at step 0")
    select_issues(study=study, round=training, filters={"repository": repository.pk}, seed=5)
    trained = Item.objects.get(round=training)
    gold = scene.world.labels(screening="relevant", symptom="hang")
    set_gold(item=trained, user=owner, labels=gold, rationale="The job stops without an error.")
    set_gold(item=decided, user=owner, labels=gold, rationale="Agreed by both annotators.")
    first = scene.annotators[0]
    practice = sql.create_assignment(trained.pk, first.pk)
    submit_annotation(
        assignment=practice,
        user=first,
        labels=scene.world.labels(screening="relevant", symptom="oom"),
    )
    # A screening round with its plan declared (no items: the annotate page's queue is kept).
    screening = start_screening_round(study=study, user=owner, seed=3).round
    duplicate_pass = start_duplicate_pass(study=study, user=owner, enqueue=False)
    run_duplicate_pass(pass_id=duplicate_pass.pk)
    group = DuplicateGroup.objects.order_by("pk").first()
    assert group is not None  # the scene's issues differ only in their numbers
    create_api_token(user=owner, name="notebook", days=30)
    invitation = create_invitation(study=study, user=owner)
    uid = urlsafe_base64_encode(force_bytes(owner.pk))
    token = default_token_generator.make_token(owner)

    s = study.pk
    pages = [
        Page("issue list", OWNER, reverse("issues:list")),
        Page("issue detail", OWNER, reverse("issues:detail", args=[disputed.issue_id])),
        Page("studies list", OWNER, reverse("studies:list")),
        Page("study detail", OWNER, study.get_absolute_url()),
        Page("members", OWNER, reverse("studies:members", args=[s])),
        Page("dashboard", OWNER, reverse("studies:dashboard", args=[s])),
        Page("study edit", OWNER, reverse("studies:edit", args=[s])),
        Page("select", OWNER, reverse("studies:select", args=[s])),
        Page("item detail", OWNER, reverse("studies:item", args=[disputed.pk])),
        Page("gold answer", OWNER, reverse("studies:gold", args=[decided.pk])),
        Page("gold removal", OWNER, reverse("studies:gold_delete", args=[decided.pk])),
        Page("agreement report", OWNER, reverse("agreement:study", args=[s])),
        Page("declared headline", OWNER, reverse("agreement:headline", args=[s])),
        Page("annotator diagnostics", OWNER, reverse("agreement:annotators", args=[s])),
        Page("drift", OWNER, reverse("agreement:drift", args=[s])),
        Page("disagreement analytics", OWNER, reverse("adjudication:analytics", args=[s])),
        Page("exports", OWNER, reverse("exports:start", args=[s])),
        Page("export job", OWNER, reverse("exports:job", args=[export.pk])),
        Page("pseudonyms", OWNER, reverse("exports:pseudonyms", args=[s])),
        Page("analysis", OWNER, reverse("exports:analysis", args=[s])),
        Page(
            "analysis issues",
            OWNER,
            reverse("exports:analysis_issues", args=[s]) + "?label=symptom:hang",
        ),
        Page("new screening round", OWNER, reverse("screening:new", args=[s])),
        Page("screening panel", OWNER, reverse("screening:panel", args=[s, screening.number])),
        Page("codebook list", OWNER, reverse("taxonomy:list")),
        Page("codebook", OWNER, reverse("taxonomy:codebook", args=[published.codebook_id])),
        Page("codebook version", OWNER, reverse("taxonomy:version", args=[published.pk])),
        Page("codebook draft", OWNER, reverse("taxonomy:version", args=[draft.pk])),
        Page("codebook diff", OWNER, reverse("taxonomy:diff", args=[draft.pk])),
        Page("guideline", OWNER, reverse("taxonomy:guideline", args=[published.pk])),
        Page("discussion", OWNER, reverse("adjudication:discussion", args=[disputed.pk])),
        Page("machine raters", OWNER, reverse("machine:raters", args=[s])),
        Page("machine rater", OWNER, reverse("machine:rater", args=[machine["rater"]])),
        Page("machine run", OWNER, reverse("machine:run", args=[machine["run"]])),
        Page("machine call", OWNER, reverse("machine:call", args=[machine["call"]])),
        Page("near-duplicates", OWNER, reverse("similarity:duplicates", args=[s])),
        Page("near-duplicate group", OWNER, reverse("similarity:group", args=[s, group.pk])),
        Page("near-duplicate pass", OWNER, reverse("similarity:pass", args=[duplicate_pass.pk])),
        Page(
            "similar issues",
            ANNOTATOR,
            reverse("similarity:similar", args=[disputed.issue_id]),
        ),
        Page("tokens", OWNER, reverse("accounts:tokens")),
        Page("github token", OWNER, reverse("accounts:github")),
        Page("password change", OWNER, reverse("password_change")),
        Page("annotate", ANNOTATOR, reverse("studies:annotate_next", args=[s])),
        Page("my items", ANNOTATOR, reverse("studies:mine", args=[s])),
        Page("gold feedback", ANNOTATOR, reverse("studies:feedback", args=[practice.pk])),
        Page("adjudication queue", ADJUDICATOR, reverse("adjudication:queue", args=[s])),
        Page("adjudicate", ADJUDICATOR, reverse("adjudication:item", args=[disputed.pk])),
        Page("adjudication items", ADJUDICATOR, reverse("adjudication:items", args=[s])),
        Page("history", ADJUDICATOR, reverse("adjudication:history", args=[disputed.pk])),
        Page("login", SIGNED_OUT, reverse("login")),
        Page("invitation", SIGNED_OUT, reverse("studies:join", args=[invitation.token])),
        Page("password reset", SIGNED_OUT, reverse("password_reset")),
        Page("password reset sent", SIGNED_OUT, reverse("password_reset_done")),
        Page(
            "password reset link", SIGNED_OUT, reverse("password_reset_confirm", args=[uid, token])
        ),
    ]
    assert decided.pk != disputed.pk
    return MainPages(scene=scene, pages=pages)
