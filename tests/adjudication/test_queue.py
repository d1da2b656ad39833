"""The disagreement queue (order, filters, count) and the re-labeling queue after a split."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.adjudication.paging import IdsFirstPaginator
from annotator.adjudication.services import (
    adjudicate_item,
    disagreement_queue,
    item_overview,
    next_in_queue,
    queue_entries,
    queue_ids,
    relabel_queue,
)
from annotator.studies.services import create_round
from taxonomy_app.services import split_category, start_draft
from tests.adjudication.helpers import label_next
from tests.factories import IssueFactory
from tests.taxonomy_app.factories import category

pytestmark = pytest.mark.django_db


def test_queue_is_ordered_by_lowest_agreement_and_counts_what_remains(scene):
    half = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})  # 0.5
    agreed = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})  # decided
    worst = label_next(
        scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "oom", "fix": ["config"]}
    )  # screening agrees, symptom and fix do not: 1/3
    queue = disagreement_queue(study=scene.study)
    assert [e.item_id for e in queue] == [worst.pk, half.pk]
    assert agreed.pk not in [e.item_id for e in queue] and queue.count() == 2
    assert next_in_queue(study=scene.study) == worst
    labels = scene.world.labels(screening="relevant", symptom="oom")
    adjudicate_item(item=worst, user=scene.adjudicator, labels=labels, reason="other", version=0)
    assert [e.item_id for e in disagreement_queue(study=scene.study)] == [half.pk]


def test_queue_filters_by_facet_and_round(scene):
    symptom_only = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    fix_only = label_next(scene, {"fix": ["version"]}, {"fix": ["config"]})
    facets = {f.key: f.pk for f in scene.world.version.facets.all()}
    by_fix = disagreement_queue(study=scene.study, facet_id=facets["fix"])
    assert [e.item_id for e in by_fix] == [fix_only.pk]
    by_symptom = disagreement_queue(study=scene.study, facet_id=facets["symptom"])
    assert [e.item_id for e in by_symptom] == [symptom_only.pk]
    other = create_round(study=scene.study)
    assert not disagreement_queue(study=scene.study, round_id=other.pk).exists()
    assert disagreement_queue(study=scene.study, round_id=scene.world.round.pk).count() == 2


def test_labels_on_a_category_split_later_return_to_the_relabeling_queue(scene):
    split_item = label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})  # unanimous
    other = label_next(scene, {"symptom": "oom"}, {"symptom": "oom"})
    assert not relabel_queue(study=scene.study).exists()
    draft = start_draft(codebook=scene.world.version.codebook)
    split_category(source=category(draft, "symptom", "hang"), names=["NCCL hang", "Deadlock"])
    assert list(relabel_queue(study=scene.study)) == [split_item]
    assert other not in relabel_queue(study=scene.study)
    # a person decides it again without the split category: it leaves the queue
    labels = scene.world.labels(screening="relevant", symptom="crash")
    adjudicate_item(
        item=split_item, user=scene.adjudicator, labels=labels, reason="codebook-change", version=1
    )
    assert not relabel_queue(study=scene.study).exists()


def test_next_in_queue_is_the_first_entry_of_the_filtered_queue_or_none(scene):
    symptom_only = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})  # 0.5
    worst = label_next(
        scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "oom", "fix": ["config"]}
    )  # 1/3
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})  # decided by the rules
    facets = {f.key: f.pk for f in scene.world.version.facets.all()}
    round_id = scene.world.round.pk
    for filters in (
        {},
        {"facet_id": facets["fix"]},
        {"facet_id": facets["symptom"]},
        {"round_id": round_id},
        {"facet_id": facets["screening"]},
    ):
        first = disagreement_queue(study=scene.study, **filters).first()
        assert next_in_queue(study=scene.study, **filters) == (first.item if first else None)
    assert next_in_queue(study=scene.study, facet_id=facets["fix"]) == worst
    assert next_in_queue(study=scene.study, facet_id=facets["screening"]) is None
    labels = scene.world.labels(screening="relevant", symptom="oom")
    adjudicate_item(item=worst, user=scene.adjudicator, labels=labels, reason="other", version=0)
    assert next_in_queue(study=scene.study) == symptom_only
    adjudicate_item(
        item=symptom_only, user=scene.adjudicator, labels=labels, reason="other", version=0
    )
    assert next_in_queue(study=scene.study) is None


def test_queue_ignores_other_studies(scene):
    label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    IssueFactory()
    assert disagreement_queue(study=scene.study).count() == 1


@pytest.mark.parametrize("per_page, orphans", [(1, 0), (2, 0), (3, 1)])
def test_ids_first_pages_equal_the_plain_pages(scene, per_page, orphans):
    label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    label_next(scene, {"fix": ["version"]}, {"fix": ["config"]})
    label_next(scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "oom"})
    label_next(scene, {"symptom": "hang"}, {"symptom": "hang"})
    lists = [
        disagreement_queue(study=scene.study).prefetch_related("disagreeing_facets"),
        item_overview(study=scene.study),
    ]
    for rows in lists:
        plain = Paginator(rows, per_page, orphans=orphans)
        fast = IdsFirstPaginator(rows, per_page, orphans=orphans)
        assert fast.count == plain.count and fast.num_pages == plain.num_pages
        for number in plain.page_range:
            expected, got = plain.page(number), fast.page(number)
            assert [r.pk for r in got] == [r.pk for r in expected]
            assert (got.start_index(), got.end_index()) == (
                expected.start_index(),
                expected.end_index(),
            )
    # the rows come with what the pages show, without a query each
    entries = list(IdsFirstPaginator(lists[0], 10).page(1))
    items = list(IdsFirstPaginator(lists[1], 10).page(1))
    with CaptureQueriesContext(connection) as queries:
        shown = [
            (e.item.issue.title, e.item.round.number, list(e.disagreeing_facets.all()))
            for e in entries
        ]
        shown += [(i.issue.repository.name, i.state, i.round.number) for i in items]
    assert len(shown) == 3 + 4 and len(queries) == 0


def test_kept_queue_ids_follow_every_submit_and_decision(scene):
    def same(**filters):  # type: ignore[no-untyped-def]
        expected = [e.pk for e in disagreement_queue(study=scene.study, **filters)]
        assert queue_ids(study=scene.study, **filters) == expected
        return expected

    half = label_next(scene, {"symptom": "hang"}, {"symptom": "oom"})
    worst = label_next(
        scene, {"symptom": "hang", "fix": ["version"]}, {"symptom": "oom", "fix": ["config"]}
    )
    assert len(same()) == 2
    labels = scene.world.labels(screening="relevant", symptom="oom")
    adjudicate_item(item=worst, user=scene.adjudicator, labels=labels, reason="other", version=0)
    assert same() == [half.agreement.pk]
    label_next(scene, {"fix": ["version"]}, {"fix": ["config"]})
    assert len(same()) == 2
    facets = {f.key: f.pk for f in scene.world.version.facets.all()}
    for facet in facets.values():
        same(facet_id=facet)
    same(round_id=scene.world.round.pk)
    assert queue_entries(same())[0].item.issue.title
