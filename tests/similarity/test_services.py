"""The pass job, the owner's marks, and what they keep out (selection, agreement, export)."""

from __future__ import annotations

import io

import pytest

from annotator.agreement.labels import load_label_table
from annotator.exports.services import export_dataset
from annotator.similarity.models import (
    DuplicateGroup,
    DuplicateMark,
    DuplicatePass,
    SimilarIssues,
)
from annotator.similarity.services import (
    SimilarityError,
    duplicate_issue_ids,
    mark_issue,
    run_duplicate_pass,
    similar_issues,
    start_duplicate_pass,
    withdraw_mark,
)
from annotator.studies.models import Item
from annotator.studies.services import next_assignment, select_issues, submit_annotation
from tests.factories import IssueFactory, RepositoryFactory
from tests.similarity.test_duplicates import OTHERS, report, respaced

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool():
    repository = RepositoryFactory(owner="deepspeedai", name="DeepSpeed")
    first = IssueFactory(repository=repository, title="ZeRO-3 hang", body=report())
    second = IssueFactory(
        repository=repository,
        title="ZeRO-3 hang",
        body=respaced(report(when="2023-11-30 23:59:59", home="/opt/conda/lib/python3.8")),
    )
    others = [
        IssueFactory(repository=repository, title=f"Other {i}", body=t)
        for i, t in enumerate(OTHERS)
    ]
    return {"repository": repository, "first": first, "second": second, "others": others}


def run_pass(**kwargs) -> DuplicatePass:
    job = start_duplicate_pass(enqueue=False, **kwargs)
    return run_duplicate_pass(pass_id=job.pk)


def test_a_pass_writes_groups_with_similarity_and_each_issues_neighbours(pool):
    job = run_pass(repository=pool["repository"])
    assert job.status == "succeeded" and job.progress == 100
    assert job.counts["issues"] == 5 and job.counts["groups"] == 1
    group = DuplicateGroup.objects.get()
    assert sorted(group.members.values_list("issue_id", flat=True)) == [
        pool["first"].pk,
        pool["second"].pk,
    ]
    pair = group.pairs.get()
    assert pair.similarity >= 0.9 and pair.same_signature
    assert job.params["duplicates"]["num_perm"] > 0 and job.params["similar"]["k"] == 10
    near = SimilarIssues.objects.get(issue=pool["first"]).neighbours
    assert near[0][0] == pool["second"].pk and near[0][1] > 0.5


def test_a_second_pass_replaces_the_groups_of_its_scope(pool):
    run_pass(repository=pool["repository"])
    run_pass()
    assert DuplicateGroup.objects.count() == 1
    assert SimilarIssues.objects.filter(issue=pool["first"]).count() == 1


def test_a_marked_duplicate_is_not_selected_unless_included(world, pool):
    mark = mark_issue(
        study=world.study,
        issue=pool["second"],
        decision="duplicate",
        duplicate_of=pool["first"],
        user=world.owner,
    )
    assert duplicate_issue_ids(study=world.study) == {pool["second"].pk}
    selection = select_issues(
        study=world.study,
        round=world.round,
        filters={"repository": pool["repository"].pk},
        seed=1,
        user=world.owner,
    )
    chosen = set(Item.objects.filter(round=world.round).values_list("issue_id", flat=True))
    assert pool["second"].pk not in chosen and pool["first"].pk in chosen
    assert selection.matched == 4
    withdraw_mark(study=world.study, mark_id=mark.pk, user=world.owner)
    assert duplicate_issue_ids(study=world.study) == set()


def test_include_anyway_keeps_a_duplicate_in(world, pool):
    mark_issue(
        study=world.study,
        issue=pool["second"],
        decision="duplicate",
        duplicate_of=pool["first"],
        include=True,
        user=world.owner,
    )
    assert duplicate_issue_ids(study=world.study) == set()


def test_a_new_mark_replaces_the_current_one_and_history_stays(world, pool):
    first = mark_issue(
        study=world.study, issue=pool["second"], decision="distinct", user=world.owner
    )
    second = mark_issue(
        study=world.study,
        issue=pool["second"],
        decision="duplicate",
        duplicate_of=pool["first"].pk,
        user=world.owner,
    )
    first.refresh_from_db()
    assert first.withdrawn_at is not None and first.withdrawn_by == world.owner
    assert second.decided_by == world.owner and second.decided_at is not None
    assert DuplicateMark.objects.current().count() == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"decision": "maybe"}, "field 'decision'"),
        ({"decision": "duplicate"}, "field 'duplicate_of': name the issue"),
        ({"decision": "duplicate", "duplicate_of": 10**9}, "field 'duplicate_of': no issue"),
        ({"decision": "duplicate", "duplicate_of": "abc"}, "field 'duplicate_of': no issue"),
        ({"decision": "distinct", "include": True}, "field 'include'"),
    ],
)
def test_bad_marks_name_the_field_and_change_nothing(world, pool, kwargs, message):
    with pytest.raises(SimilarityError, match=message):
        mark_issue(study=world.study, issue=pool["second"], user=world.owner, **kwargs)
    assert not DuplicateMark.objects.exists()


def test_an_issue_cannot_duplicate_itself_or_close_a_cycle(world, pool):
    first, second = pool["first"], pool["second"]
    with pytest.raises(SimilarityError, match="cannot duplicate itself"):
        mark_issue(study=world.study, issue=first, decision="duplicate", duplicate_of=first)
    mark_issue(study=world.study, issue=second, decision="duplicate", duplicate_of=first)
    with pytest.raises(SimilarityError, match="undo that mark first"):
        mark_issue(study=world.study, issue=first, decision="duplicate", duplicate_of=second)
    assert DuplicateMark.objects.count() == 1


def test_undoing_twice_is_refused(world, pool):
    mark = mark_issue(study=world.study, issue=pool["second"], decision="distinct")
    withdraw_mark(study=world.study, mark_id=mark.pk)
    with pytest.raises(SimilarityError, match="already undone"):
        withdraw_mark(study=world.study, mark_id=mark.pk)
    with pytest.raises(SimilarityError, match="field 'mark': no mark"):
        withdraw_mark(study=world.study, mark_id="x")


def _label_everything(world):
    for annotator in world.annotators:
        while (assignment := next_assignment(study=world.study, annotator=annotator)) is not None:
            submit_annotation(
                assignment=assignment,
                user=annotator,
                labels=world.labels(screening="relevant", symptom="hang", fix="version"),
            )


def test_duplicates_are_left_out_of_agreement_and_the_export_card_lists_them(world):
    _label_everything(world)
    kept, dropped = world.issues[0], world.issues[1]
    before = load_label_table(study_id=world.study.pk, version=world.version)
    mark_issue(study=world.study, issue=dropped, decision="duplicate", duplicate_of=kept)
    after = load_label_table(study_id=world.study.pk, version=world.version)
    assert after.counts["duplicates_left_out"] == 1
    assert after.labels < before.labels
    out = io.BytesIO()
    result = export_dataset(study=world.study, format="csv", out=out)
    assert result.rows == len(world.issues) - 1
    assert "| issues left out as near-duplicates | 1 |" in result.card
    assert f"{dropped} duplicates {kept}" in result.card


def test_an_annotator_sees_only_similar_issues_they_labeled_with_their_own_labels(world):
    _label_everything(world)
    a = world.annotators[0]
    mine = world.issues[1]
    job = start_duplicate_pass(enqueue=False)
    SimilarIssues.objects.create(
        issue=world.issues[0],
        neighbours=[[mine.pk, 0.8], [IssueFactory().pk, 0.7]],
        found_by=job,
    )
    shown = similar_issues(issue=world.issues[0], user=a)
    assert [s["issue"].pk for s in shown] == [mine.pk]
    hang = world.category("symptom", "hang")
    assert hang.name in shown[0]["labels"][hang.facet.name]
    owner_sees = similar_issues(issue=world.issues[0], user=world.owner)
    assert len(owner_sees) == 2 and all(s["labels"] == {} for s in owner_sees)
