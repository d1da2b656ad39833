"""A study with something in every table a backup covers, built through the services.

Main round (k = 2, four ColossalAI issues with comments): an item both annotators agree on
(decided unanimously), one they disagree on (adjudicated, with a reason), one with a disagreement
on the multi-choice facet left in the queue and released for discussion (with a comment), and
one the first annotator skipped, the second submitted and a third left as a draft; "unsure"
marks on a submitted annotation of the queued item and on the draft, and the study's routing of
unsure labels turned off (not its default). Calibration
round: six DeepSpeed issues (a renamed repository, with its former name) both annotators agree
on, an agreement run of it that passed calibration, and one over all rounds. A proposal accepted
into v2 of the codebook (which also splits a category and moves an older one under the new
one), one rejected, an invitation, an agreement
threshold, adjudication settings and two export job records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from annotator.adjudication.services import (
    adjudicate_item,
    post_comment,
    release_item,
    set_majority_rule,
)
from annotator.agreement.headline import declare_headline
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import (
    mark_calibration_passed,
    run_agreement_run,
    set_threshold,
    start_agreement_run,
)
from annotator.exports.models import ExportJob, Pseudonym
from annotator.issues.models import Issue, Repository, RepositoryAlias
from annotator.machine.models import MachineCall, MachineRater, MachineRun
from annotator.studies.models import Item, Membership, Round
from annotator.studies.services import (
    add_member,
    create_invitation,
    create_round,
    next_assignment,
    propose_category,
    save_draft,
    select_issues,
    skip_assignment,
    submit_annotation,
    update_study,
)
from annotator.studies.services.gold import set_gold
from taxonomy_app.services import (
    accept_proposal,
    move_category,
    publish_version,
    reject_proposal,
    split_category,
)
from taxonomy_app.services.rules import add_rule
from tests.adjudication.helpers import Scene, make_scene
from tests.factories import IssueCommentFactory, IssueFactory, UserFactory

T0 = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)
# Per main-round issue (by index): each annotator's labels, or "skip".
MAIN: list[tuple[Any, Any]] = [
    (
        {"screening": "relevant", "symptom": "hang", "fix": ["config"]},
        {"screening": "relevant", "symptom": "hang", "fix": ["config"]},
    ),
    (
        {"screening": "relevant", "symptom": "oom", "fix": ["version", "config"]},
        {"screening": "relevant", "symptom": "crash", "fix": ["version"]},
    ),
    (
        {
            "screening": "relevant",
            "symptom": "slow",
            "fix": ["version", "config"],
            "unsure": ["fix"],
        },
        {"screening": "relevant", "symptom": "slow", "fix": ["config"]},
    ),
    ("skip", {"screening": "not-a-bug"}),
]
# Both annotators agree on each; every facet varies across items even with any one item left
# out, so the run's jackknife interval is defined and the round can pass calibration.
CALIBRATION = [
    {"screening": "relevant", "symptom": "hang", "fix": ["version"]},
    {"screening": "not-a-bug", "fix": ["config"]},
    {"screening": "relevant", "symptom": "oom", "fix": ["version"]},
    {"screening": "not-a-bug", "fix": ["config"]},
    {"screening": "relevant", "symptom": "hang", "fix": ["version"]},
    {"screening": "relevant", "symptom": "oom", "fix": ["config"]},
]


@dataclass
class Built:
    scene: Scene
    calibration: Round
    drafter: Any
    items: dict[str, Item]

    @property
    def study(self) -> Any:
        return self.scene.study


def rich_study() -> Built:
    scene = make_scene(items=len(MAIN))
    study, owner, world = scene.study, scene.owner, scene.world
    _enrich_issues(world.issues)
    deepspeed = Repository.objects.create(owner="deepspeedai", name="DeepSpeed")
    RepositoryAlias.objects.create(repository=deepspeed, owner="microsoft", name="DeepSpeed")
    calibration_issues = [IssueFactory(repository=deepspeed) for _ in CALIBRATION]
    _enrich_issues(calibration_issues)
    calibration = create_round(study=study, kind=Round.Kind.CALIBRATION)
    select_issues(
        study=study, round=calibration, filters={"repository": deepspeed.pk}, seed=7, user=owner
    )
    plan = {issue.pk: labels for issue, labels in zip(world.issues, MAIN, strict=True)}
    plan |= {
        i.pk: (labels, labels) for i, labels in zip(calibration_issues, CALIBRATION, strict=True)
    }
    for n, person in enumerate(scene.annotators):
        _label_everything(scene, person, {pk: both[n] for pk, both in plan.items()})
    items = {
        name: Item.objects.get(study=study, issue=issue)
        for name, issue in zip(
            ("agreed", "adjudicated", "queued", "partial"), world.issues, strict=True
        )
    }
    _runs(scene, calibration)
    drafter = _third_annotator_drafts(scene)
    _adjudicate(scene, items)
    _codebook_work(scene)
    _study_records(scene)
    # a gold answer on an item of the open main round (archived like any study row)
    set_gold(
        item=items["queued"],
        user=scene.owner,
        labels=scene.world.labels(screening="relevant", symptom="hang"),
        rationale="The job stops at the first all-reduce.",
    )
    _machine_rater(scene, items["agreed"])
    _screening_round(scene, deepspeed)
    _duplicate_marks(scene, deepspeed)
    return Built(scene=scene, calibration=calibration, drafter=drafter, items=items)


def _screening_round(scene: Scene, repository: Repository) -> None:
    """A screening round with its declared plan, a model record and an audit of its pool."""
    from annotator.screening.models import ScreeningModel
    from annotator.screening.services import draw_audit, start_screening_round

    plan = start_screening_round(study=scene.study, user=scene.owner, seed=3, retrain_every=5)
    for _ in range(3):
        IssueFactory(repository=repository)
    select_issues(
        study=scene.study,
        round=plan.round,
        filters={"repository": repository.pk},
        seed=4,
        user=scene.owner,
    )
    ScreeningModel.objects.create(
        round=plan.round,
        version=1,
        model="tfidf-svm",
        params={"model": "tfidf-svm"},
        seed=3,
        training_hash="a" * 64,
        vocabulary_size=10,
        metrics={"features": "fitted"},
    )
    draw_audit(round=plan.round, size=2, seed=1, user=scene.owner)


def _duplicate_marks(scene: Scene, repository: Repository) -> None:
    """The owner's near-duplicate decisions: an issue the study never took (in no item, with
    its comments) marked a duplicate of one of its issues; a duplicate included anyway, then
    withdrawn and marked distinct (the history stays)."""
    from annotator.similarity.services import mark_issue, withdraw_mark

    study, owner, issues = scene.study, scene.owner, scene.world.issues
    left_out = IssueFactory(repository=repository)
    _enrich_issues([left_out])
    mark_issue(
        study=study, issue=left_out, decision="duplicate", duplicate_of=issues[0], user=owner
    )
    first = mark_issue(
        study=study,
        issue=issues[1],
        decision="duplicate",
        duplicate_of=issues[0],
        include=True,
        user=owner,
    )
    withdraw_mark(study=study, mark_id=first.pk, user=owner)
    mark_issue(study=study, issue=issues[1], decision="distinct", user=owner)


def _machine_rater(scene: Scene, item: Item) -> None:
    """A machine rater with a finished run and one answered call, as a run stores them."""
    rater = MachineRater.objects.create(
        study=scene.study,
        name="llm",
        model="fake-llm-7b",
        base_url="http://127.0.0.1:9/v1",
        parameters={"temperature": 0},
        prompt_version="v1",
    )
    run = MachineRun.objects.create(
        rater=rater, round=item.round, status="succeeded", counts={"labeled": 1}
    )
    sent = [{"role": "user", "content": "# Issue: x"}]
    MachineCall.objects.create(
        run=run,
        rater=rater,
        item=item,
        outcome="labeled",
        labels={"symptom": ["hang"]},
        structured=True,
        model_returned="fake-llm-7b-2026-11-30",
        parameters={"temperature": 0},
        messages=sent,
        prompt_sha256="0" * 64,
        response={"choices": [{"message": {"content": '{"symptom": "hang"}'}}]},
        prompt_tokens=12,
        completion_tokens=3,
        latency_ms=40,
    )


def _enrich_issues(issues: list[Issue]) -> None:
    for n, issue in enumerate(issues):
        Issue.objects.filter(pk=issue.pk).update(
            labels=["bug", f"area-{n}"],
            author=f"reporter{n}",
            created_at=T0 + timedelta(days=n),
            updated_at=T0 + timedelta(days=n, hours=3),
            comments_count=2,
            raw={"number": issue.number, "reactions": {"+1": n}, "body": issue.body},
            html_url=f"https://github.com/{issue.repository.full_name}/issues/{issue.number}",
        )
        for k in range(2):
            IssueCommentFactory(
                issue=issue,
                author=f"maintainer{k}",
                created_at=T0 + timedelta(days=n, hours=k),
                raw={"id": 1000 * issue.pk + k},
                github_id=1000 * issue.pk + k,
            )


def _label_everything(scene: Scene, person: Any, plan: dict[int, Any]) -> None:
    while (assignment := next_assignment(study=scene.study, annotator=person)) is not None:
        codes = plan[assignment.item.issue_id]
        if codes == "skip":
            skip_assignment(assignment=assignment, user=person, reason="a duplicate, I think")
            continue
        submit_annotation(
            assignment=assignment,
            user=person,
            labels=scene.world.labels(**codes),
            notes=f"{person.username} on {assignment.item.issue_id}",
            seconds_spent=42,
            unsure=codes.get("unsure", ()),
        )


def _runs(scene: Scene, calibration: Round) -> None:
    """A run of the calibration round (passed) and one of every round, computed in-process."""
    set_threshold(study=scene.study, threshold=0.5)
    # a declared headline and a change of it (with its reason), both archived
    declare_headline(
        study=scene.study,
        user=scene.owner,
        coefficient="krippendorff_alpha",
        facets=["symptom"],
        threshold=0.8,
    )
    declare_headline(
        study=scene.study,
        user=scene.owner,
        coefficient="gwet_ac1",
        facets=["symptom"],
        threshold=0.7,
        reason="prevalence",
    )
    passed = start_agreement_run(study=scene.study, round=calibration, enqueue=False)
    run_agreement_run(run_id=passed.pk)
    mark_calibration_passed(run=AgreementRun.objects.get(pk=passed.pk), user=scene.owner)
    every = start_agreement_run(study=scene.study, user=scene.owner, enqueue=False)
    run_agreement_run(run_id=every.pk)


def _third_annotator_drafts(scene: Scene) -> Any:
    drafter = UserFactory(username="annotator-late")
    add_member(study=scene.study, user=drafter, role=Membership.Role.ANNOTATOR)
    assignment = next_assignment(study=scene.study, annotator=drafter)
    assert assignment is not None
    labels = scene.world.labels(screening="relevant", fix=["version", "config"])
    save_draft(
        assignment=assignment,
        user=drafter,
        labels=labels,
        notes="half done",
        seconds_spent=9,
        unsure=["symptom"],
    )
    return drafter


def _adjudicate(scene: Scene, items: dict[str, Item]) -> None:
    item = items["adjudicated"]
    labels = scene.world.labels(screening="relevant", symptom="oom", fix=["version", "config"])
    adjudicate_item(
        item=item,
        user=scene.adjudicator,
        labels=labels,
        reason="annotator-slip",
        comment="The log shows CUDA OOM first.",
        version=0,
    )
    release_item(item=items["queued"])
    queued = Item.objects.get(pk=items["queued"].pk)
    member = Membership.objects.get(study=scene.study, user=scene.annotators[0])
    post_comment(
        item=queued, user=scene.annotators[0], membership=member, body="I read **both** logs."
    )
    set_majority_rule(study=scene.study, enabled=False)


def _codebook_work(scene: Scene) -> None:
    """Open coding: a proposal accepted into a draft v2 (which also splits a category, gains a
    label rule and is published), another rejected."""
    assignment = scene.study.items.first().assignments.get(annotator=scene.annotators[0])
    facet = scene.world.version.facets.get(key="symptom")
    proposal = propose_category(
        assignment=assignment,
        user=scene.annotators[0],
        facet_id=facet.pk,
        name="NCCL timeout",
        rationale="Many hangs are NCCL timeouts.",
    )
    accepted = accept_proposal(proposal=proposal, user=scene.owner)
    other = accepted.facet.categories.get(code="other")
    split_category(source=other, names=["Other runtime", "Other build"], user=scene.owner)
    # An older category under a newer one: its parent comes later in the archive.
    slow = accepted.facet.categories.get(code="slow")
    move_category(category=slow, parent=accepted, user=scene.owner)
    assert slow.pk < accepted.pk
    add_rule(version=accepted.facet.version, kind="max_choices", facet="fix", max_choices=2)
    publish_version(version=accepted.facet.version, changelog="NCCL timeouts", user=scene.owner)
    rejected = propose_category(
        assignment=assignment,
        user=scene.annotators[0],
        facet_id=facet.pk,
        name="Flaky",
    )
    reject_proposal(proposal=rejected, reason="Not a symptom.", user=scene.owner)


def _study_records(scene: Scene) -> None:
    study = scene.study
    update_study(
        study=study,
        name=study.name,
        guidelines=study.guidelines,
        overlap_k=study.overlap_k,
        route_unsure_to_adjudication=False,
    )
    create_invitation(study=scene.study, user=scene.owner)
    ExportJob.objects.create(
        study=scene.study,
        format="parquet",
        table="final",
        filters={"round": 1},
        status="succeeded",
        total_rows=4,
        rows_written=4,
        file="exports/old.parquet",
        size_bytes=1234,
        card="# Dataset card",
        created_by=scene.owner,
    )
    ExportJob.objects.create(
        study=scene.study,
        format="xlsx",
        status="failed",
        error="disk full",
        filters={"repository": "deepspeedai/DeepSpeed"},
        created_by=scene.adjudicator,
    )
    # A pseudonymised export's codes (exports.Pseudonym): kept with the study.
    Pseudonym.objects.create(
        study=scene.study, kind="annotator", key=str(scene.owner.pk), name="owner", code="A01"
    )
    Pseudonym.objects.create(
        study=scene.study, kind="github", key="octocat", name="octocat", code="U0001"
    )
