"""Structural changes: merge carries labels over, split reports its labels, archive not delete,
no cycles, and the diff that shows them with the labels each touches."""

from __future__ import annotations

import pytest

from taxonomy_app import services
from taxonomy_app.errors import CodebookError
from taxonomy_app.models import Category, ChangeOperation
from tests.taxonomy_app.factories import category

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(v1):  # type: ignore[no-untyped-def]
    return services.start_draft(codebook=v1.codebook)


def test_merge_carries_labels_over_to_the_target(v1, draft, labels):
    labels.update(
        {
            "a1": category(v1, "symptom", "hang").pk,
            "a2": category(v1, "symptom", "hang").pk,
            "b1": category(v1, "symptom", "oom").pk,
            "c1": category(v1, "fix", "config").pk,
        }
    )
    services.merge_categories(
        source=category(draft, "symptom", "hang"), target=category(draft, "symptom", "oom")
    )
    services.publish_version(version=draft)

    result = services.carry_over_labels(version=draft)

    oom, config = category(draft, "symptom", "oom").pk, category(draft, "fix", "config").pk
    assert labels == {"a1": oom, "a2": oom, "b1": oom, "c1": config}
    assert (result.moved, result.needs_decision) == (4, {})
    assert category(draft, "symptom", "hang").archived


def test_merges_in_a_chain_carry_labels_to_the_last_category(v1, draft, labels):
    labels["x"] = category(v1, "symptom", "hang").pk
    services.merge_categories(
        source=category(draft, "symptom", "hang"), target=category(draft, "symptom", "oom")
    )
    services.merge_categories(
        source=category(draft, "symptom", "oom"), target=category(draft, "symptom", "crash")
    )
    services.publish_version(version=draft)

    services.carry_over_labels(version=draft)

    assert labels["x"] == category(draft, "symptom", "crash").pk


def test_split_reports_exactly_the_labels_of_the_old_category(v1, draft, labels):
    hang = category(v1, "symptom", "hang").pk
    labels.update({"l1": hang, "l2": category(v1, "symptom", "oom").pk, "l3": hang})

    result = services.split_category(
        source=category(draft, "symptom", "hang"), names=["Deadlock", "Timeout"]
    )

    assert result.affected_labels == ["l1", "l3"]
    assert [c.code for c in result.categories] == ["deadlock", "timeout"]
    assert all(c.parent.code == "failure" for c in result.categories)
    op = ChangeOperation.objects.get(kind="split")
    assert (op.category.code, sorted(t.code for t in op.targets.all())) == (
        "hang",
        ["deadlock", "timeout"],
    )


def test_split_labels_wait_for_a_decision_when_carried_over(v1, draft, labels):
    labels.update(
        {"l1": category(v1, "symptom", "hang").pk, "l2": category(v1, "symptom", "slow").pk}
    )
    services.split_category(
        source=category(draft, "symptom", "hang"),
        names=["Deadlock"],
        into=[category(draft, "symptom", "crash")],
    )
    services.publish_version(version=draft)

    result = services.carry_over_labels(version=draft)

    hang_v1 = category(v1, "symptom", "hang").pk
    assert result.needs_decision == {hang_v1: ["l1"]}
    assert labels == {"l1": hang_v1, "l2": category(draft, "symptom", "slow").pk}


def test_split_needs_two_targets(draft):
    with pytest.raises(CodebookError, match="at least two"):
        services.split_category(source=category(draft, "symptom", "hang"), names=["Only one"])


def test_published_category_is_archived_not_deleted(v1, draft, labels, owner):
    labels["l1"] = category(v1, "symptom", "slow").pk
    slow = category(draft, "symptom", "slow")

    with pytest.raises(CodebookError, match="archive it instead of deleting it"):
        services.delete_category(category=slow)
    services.archive_category(category=slow)

    slow.refresh_from_db()
    assert slow.archived and Category.objects.filter(pk=slow.pk).exists()
    assert [c.labels for c in services.diff_version(version=draft, viewer=owner).archived] == [1]


def test_category_added_in_the_draft_can_be_deleted(draft):
    new = services.add_category(facet=draft.facets.get(key="fix"), name="Fix nothing")

    services.delete_category(category=new)

    assert not Category.objects.filter(pk=new.pk).exists()


def test_archiving_a_category_with_active_children_is_refused(draft):
    with pytest.raises(CodebookError, match="has active subcategories"):
        services.archive_category(category=category(draft, "symptom", "failure"))


def test_restore_undoes_an_archive(draft):
    slow = services.archive_category(category=category(draft, "symptom", "slow"))

    services.restore_category(category=slow)

    assert not Category.objects.get(pk=slow.pk).archived
    assert services.diff_version(version=draft).is_empty


@pytest.mark.parametrize(
    ("moved", "new_parent"), [("failure", "hang"), ("failure", "failure")], ids=["child", "itself"]
)
def test_moves_that_would_make_a_cycle_are_refused(draft, moved, new_parent):
    with pytest.raises(CodebookError, match="cycle in the hierarchy"):
        services.move_category(
            category=category(draft, "symptom", moved),
            parent=category(draft, "symptom", new_parent),
        )

    assert category(draft, "symptom", moved).parent is None


def test_move_to_another_facet_is_refused(draft):
    with pytest.raises(CodebookError, match="belongs to another facet"):
        services.move_category(
            category=category(draft, "symptom", "hang"), parent=category(draft, "fix", "config")
        )


def test_move_and_rename_are_recorded_and_shown_in_the_diff(draft, v1, labels, owner):
    labels["l"] = category(v1, "symptom", "slow").pk
    slow = category(draft, "symptom", "slow")
    services.move_category(category=slow, parent=category(draft, "symptom", "failure"))
    services.update_category(category=slow, name="Too slow")

    diff = services.diff_version(version=draft, viewer=owner)

    kinds = list(ChangeOperation.objects.filter(version=draft).values_list("kind", flat=True))
    assert kinds == ["move", "rename"]
    [change] = diff.changed
    assert [(f.field, f.before, f.after) for f in change.fields] == [
        ("name", "Slow", "Too slow"),
        ("parent", None, "failure"),
    ]
    assert change.labels == 1


def test_reorder_swaps_neighbours(draft):
    services.reorder_category(category=category(draft, "symptom", "oom"), direction="up")

    children = category(draft, "symptom", "failure").children.order_by("order")
    assert [c.code for c in children] == ["oom", "hang", "crash"]


def test_diff_lists_every_kind_of_change_with_label_counts(v1, draft, labels, owner):
    labels.update(
        {
            "h": category(v1, "symptom", "hang").pk,
            "o": category(v1, "symptom", "oom").pk,
            "o2": category(v1, "symptom", "oom").pk,
        }
    )
    services.add_category(facet=draft.facets.get(key="fix"), name="Fix network")
    services.update_category(category=category(draft, "screening", "relevant"), definition="Bug.")
    services.merge_categories(
        source=category(draft, "symptom", "hang"), target=category(draft, "symptom", "crash")
    )
    services.split_category(source=category(draft, "symptom", "oom"), names=["GPU OOM", "Host OOM"])
    services.archive_category(category=category(draft, "fix", "version"))

    diff = services.diff_version(version=draft, viewer=owner)

    assert diff.counts() == {
        "added": 1,
        "changed": 1,
        "merged": 1,
        "split": 1,
        "archived": 1,
        "removed": 0,
    }
    assert [(c.category.code, c.labels) for c in diff.merged] == [("hang", 1)]
    assert [(c.category.code, [t.code for t in c.targets], c.labels) for c in diff.split] == [
        ("oom", ["gpu-oom", "host-oom"], 2)
    ]
    assert diff.added[0].category.code == "fix-network"
    assert "merged symptom/hang into crash — 1 labels" in diff.summary()


def test_default_hook_reports_no_labels(v1, draft, owner):
    result = services.split_category(source=category(draft, "symptom", "hang"), names=["A", "B"])

    assert result.affected_labels == []
    assert services.diff_version(version=draft, viewer=owner).split[0].labels == 0
