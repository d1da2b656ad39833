"""Automatic decisions, adjudication with optimistic locking, majority rule, the audit trail."""

from __future__ import annotations

import pytest

from annotator.adjudication.models import Change, Decision, DecisionLabel, ItemAgreement
from annotator.adjudication.services import (
    AdjudicationError,
    DecisionConflict,
    LabelErrors,
    adjudicate_item,
    decide_item_if_complete,
    item_history,
    set_majority_rule,
)
from annotator.studies.models import Assignment
from annotator.studies.services import next_assignment
from tests.adjudication.helpers import label_next, make_scene, submit

pytestmark = pytest.mark.django_db


def final(item) -> dict[str, list[str]]:
    rows = DecisionLabel.objects.filter(decision__item=item).order_by("facet__order", "category")
    out: dict[str, list[str]] = {}
    for key, code in rows.values_list("facet__key", "category__code"):
        out.setdefault(key, []).append(code)
    return out


def test_agreeing_annotations_are_decided_unanimously(scene):
    item = label_next(
        scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "hang", "fix": ["version"]}
    )
    decision = Decision.objects.get(item=item)
    assert decision.source == "unanimous" and decision.decided_by is None
    assert final(item) == {"screening": ["relevant"], "symptom": ["hang"], "fix": ["version"]}
    assert ItemAgreement.objects.get(item=item).value == 1.0


def test_disagreeing_annotations_wait_in_the_queue(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    assert not Decision.objects.filter(item=item).exists()
    agreement = ItemAgreement.objects.get(item=item)
    assert agreement.value == pytest.approx(0.5)  # screening agrees, symptom does not
    assert [f.key for f in agreement.disagreeing_facets.all()] == ["symptom"]


def test_an_incomplete_item_is_not_decided(scene):
    a = scene.annotators[0]
    assignment = next_assignment(study=scene.study, annotator=a)
    submit(scene, assignment, a, symptom="hang")
    assert decide_item_if_complete(item=assignment.item) is None
    assert not ItemAgreement.objects.exists()


def test_majority_rule_needs_k_of_three_and_decides_when_on(db):
    scene = make_scene(k=3, annotators=3)
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"}, {"symptom": "oom"})
    assert not Decision.objects.filter(item=item).exists()  # the rule is off by default
    assert set_majority_rule(study=scene.study, enabled=True) == 1
    decision = Decision.objects.get(item=item)
    assert decision.source == "majority" and final(item)["symptom"] == ["hang"]


def test_majority_rule_is_refused_below_k_three(scene):
    with pytest.raises(AdjudicationError, match="k ≥ 3"):
        set_majority_rule(study=scene.study, enabled=True)


def test_adjudicating_records_labels_reason_and_history(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    labels = scene.world.labels(screening="relevant", symptom="oom")
    decision = adjudicate_item(
        item=item,
        user=scene.adjudicator,
        labels=labels,
        reason="annotator-slip",
        comment="the log shows an OOM",
        version=0,
    )
    assert (decision.source, decision.reason, decision.version) == (
        "adjudicated",
        "annotator-slip",
        1,
    )
    assert decision.decided_by == scene.adjudicator
    assert final(item) == {"screening": ["relevant"], "symptom": ["oom"]}
    changes = item_history(item=item)
    assert [(c.subject, c.user) for c in changes] == [
        ("annotation", scene.annotators[0]),
        ("annotation", scene.annotators[1]),
        ("decision", scene.adjudicator),
    ]
    assert changes[-1].before is None
    assert changes[-1].after["labels"]["symptom"] == ["oom"]
    assert changes[0].after == {
        "annotator": "annotator-0",
        "status": "submitted",
        "notes": "notes of annotator-0",
        "labels": {"screening": ["relevant"], "symptom": ["hang"]},
    }


def test_second_adjudicator_on_a_stale_version_gets_a_conflict_and_the_first_write_stays(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    first = scene.world.labels(screening="relevant", symptom="oom")
    second = scene.world.labels(screening="relevant", symptom="hang")
    adjudicate_item(item=item, user=scene.adjudicator, labels=first, reason="other", version=0)
    with pytest.raises(DecisionConflict, match="adjudicator saved a decision on this item"):
        adjudicate_item(item=item, user=scene.owner, labels=second, reason="other", version=0)
    adjudicate_item(
        item=item, user=scene.adjudicator, labels=first, reason="guideline-gap", version=1
    )
    with pytest.raises(DecisionConflict):
        adjudicate_item(item=item, user=scene.owner, labels=second, reason="other", version=1)
    decision = Decision.objects.get(item=item)
    assert (decision.version, decision.reason, decision.decided_by) == (
        2,
        "guideline-gap",
        scene.adjudicator,
    )
    assert final(item)["symptom"] == ["oom"]
    assert Change.objects.filter(subject="decision").count() == 2


@pytest.mark.parametrize(
    ("codes", "reason", "errors"),
    [
        ({"symptom": "hang"}, "other", {"screening": "required: choose a category"}),
        ({"screening": "relevant"}, "", {"reason": "choose the reason for the disagreement"}),
        (
            {"screening": "relevant"},
            "because",
            {"reason": "choose the reason for the disagreement"},
        ),
    ],
)
def test_bad_decisions_are_refused_by_field_and_write_nothing(scene, codes, reason, errors):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    labels = scene.world.labels(**codes)
    with pytest.raises(LabelErrors) as caught:
        adjudicate_item(item=item, user=scene.adjudicator, labels=labels, reason=reason, version=0)
    assert caught.value.errors == errors
    assert not Decision.objects.exists()
    assert not Change.objects.filter(subject="decision").exists()


def test_a_resubmit_that_breaks_unanimity_withdraws_the_automatic_decision(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    assert Decision.objects.get(item=item).source == "unanimous"
    b = scene.annotators[1]
    submit(scene, Assignment.objects.get(item=item, annotator=b), b, symptom="crash")
    assert not Decision.objects.filter(item=item).exists()
    last = item_history(item=item)[-1]
    assert (
        last.subject == "decision" and last.after is None and last.before["source"] == "unanimous"
    )


def test_a_persons_decision_stands_when_an_annotation_changes(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    labels = scene.world.labels(screening="relevant", symptom="oom")
    adjudicate_item(item=item, user=scene.adjudicator, labels=labels, reason="other", version=0)
    a = scene.annotators[0]
    submit(scene, Assignment.objects.get(item=item, annotator=a), a, symptom="oom")
    decision = Decision.objects.get(item=item)
    assert decision.source == "adjudicated" and decision.version == 1


def test_record_change_skips_a_save_that_changed_nothing(scene):
    item = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    a = scene.annotators[0]
    assignment = Assignment.objects.get(item=item, annotator=a)
    submit(scene, assignment, a, notes="notes of annotator-0", symptom="hang")  # no change
    assert Change.objects.filter(annotation__assignment=assignment).count() == 1
    submit(scene, assignment, a, notes="changed my mind", symptom="crash")
    change = Change.objects.filter(annotation__assignment=assignment).last()
    assert change.before["labels"]["symptom"] == ["hang"] and change.after["labels"]["symptom"] == [
        "crash"
    ]
    assert change.after["notes"] == "changed my mind" and change.user == a


# What a submit costs with its two adjudication calls (record_change, decide_item_if_complete):
# the same whatever the number of labels, facets or items; recorded so a change is noticed.
SUBMIT_QUERIES = {"not complete": 10, "complete": 19}


@pytest.mark.parametrize("multi", [False, True], ids=["one-label", "many-labels"])
def test_submit_hooks_cost_a_constant_number_of_queries(scene, multi):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.studies.services import submit_annotation

    fix = ["version", "config"] if multi else ["version"]
    counts = {}
    for user, state in zip(scene.annotators, ("not complete", "complete"), strict=True):
        assignment = next_assignment(study=scene.study, annotator=user)
        labels = scene.world.labels(screening="relevant", symptom="hang", fix=fix)
        with CaptureQueriesContext(connection) as queries:
            submit_annotation(assignment=assignment, user=user, labels=labels)
        counts[state] = len(queries)
    assert counts == SUBMIT_QUERIES
