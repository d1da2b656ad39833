"""Restoring where the study's world already exists: beside the original study, its issues,
people and codebook are found by natural key and reused; a key holding other content here is
refused (or, for issues changed on GitHub, kept when asked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotator.backup.errors import REFUSALS
from annotator.backup.restore import RestoreOptions, restore_study
from annotator.issues.models import Issue, IssueComment
from annotator.studies.models import AnnotationLabel, Invitation, Membership, Study
from annotator.studies.services import create_invitation
from taxonomy_app.models import Category, Codebook, LabelRule
from tests.backup.archives import dump_to, labelled_world
from tests.backup.test_bad_archives import counts
from tests.factories import IssueCommentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_and_archive(tmp_path):
    world = labelled_world()
    fix = world.version.facets.get(key="fix")
    LabelRule.objects.create(version=world.version, kind="max_choices", facet=fix, max_choices=2)
    IssueCommentFactory(issue=world.issues[0], key="id:77", github_id=77)
    create_invitation(study=world.study, user=world.owner)
    return world, dump_to(world, tmp_path / "study.zip")


def labels_by_issue(study: Study) -> set[tuple[int, str, str, str]]:
    rows = AnnotationLabel.objects.filter(annotation__assignment__item__study=study)
    return set(
        rows.values_list(
            "annotation__assignment__item__issue_id",
            "annotation__assignment__annotator__username",
            "facet__key",
            "category__code",
        )
    )


def test_restoring_beside_the_original_reuses_its_issues_people_and_codebook(world_and_archive):
    world, archive = world_and_archive
    before = counts()
    result = restore_study(archive)
    restored = result.study
    assert restored is not None and restored.pk != world.study.pk
    assert restored.name.startswith("Study (restored ") and restored.name.endswith(")")
    for table in (
        "auth.user",
        "issues.issue",
        "issues.issuecomment",
        "taxonomy_app.category",
        "taxonomy_app.codebookversion",
        "taxonomy_app.labelrule",
    ):
        assert counts()[table] == before[table], table
    assert counts()["studies.item"] == 2 * before["studies.item"]
    assert labels_by_issue(restored) == labels_by_issue(world.study)
    assert restored.codebook_version_id == world.study.codebook_version_id
    tokens = Invitation.objects.filter(study__in=[world.study, restored]).values_list("token")
    assert len(set(tokens)) == 2  # the copy's link is new: the original's still works
    assert "got a new link" in result.summary()
    assert result.reused["issues.issue"] == 2 and result.written["issues.issue"] == 0


def test_an_issue_changed_here_since_the_backup_is_refused_unless_this_copy_is_kept(
    world_and_archive,
):
    world, archive = world_and_archive
    Issue.objects.filter(pk=world.issues[1].pk).update(title="Edited on GitHub since")
    before = counts()
    with pytest.raises(REFUSALS) as refusal:
        restore_study(archive)
    assert "issues.issue.jsonl line 2, field 'title': issue hpcaitech/ColossalAI#" in str(
        refusal.value
    )
    assert "--prefer-existing-issues" in str(refusal.value)
    assert counts() == before

    result = restore_study(archive, options=RestoreOptions(prefer_existing_issues=True))
    assert result.kept_existing == 1
    assert Issue.objects.get(pk=world.issues[1].pk).title == "Edited on GitHub since"
    assert labels_by_issue(result.study) == labels_by_issue(world.study)


def test_a_comment_changed_here_is_refused_by_its_line(world_and_archive):
    _, archive = world_and_archive
    IssueComment.objects.filter(key="id:77").update(body="rewritten")
    with pytest.raises(REFUSALS, match=r"issues\.issuecomment\.jsonl line \d+, field 'body': "):
        restore_study(archive)


def test_an_account_with_the_same_name_and_another_email_is_refused(world_and_archive):
    _, archive = world_and_archive
    get_user_model().objects.filter(username="annotator-1").update(email="someone@else.org")
    before = counts()
    with pytest.raises(REFUSALS) as refusal:
        restore_study(archive)
    assert "auth.user.jsonl line" in str(refusal.value)
    assert "field 'email': user 'annotator-1' exists here with another email" in str(refusal.value)
    assert counts() == before


def test_a_codebook_version_with_other_content_under_its_number_is_refused(world_and_archive):
    world, archive = world_and_archive
    Category.objects.filter(facet__version=world.version, code="hang").update(name="Deadlock")
    with pytest.raises(REFUSALS) as refusal:
        restore_study(archive)
    assert "taxonomy_app.codebookversion.jsonl line 1: codebook 'small-bugs' v1 exists here " in (
        str(refusal.value)
    )
    assert "'Deadlock'" in str(refusal.value) or "'Hang'" in str(refusal.value)


def test_a_codebook_version_whose_label_rules_changed_here_is_refused(world_and_archive):
    world, archive = world_and_archive
    before = counts()
    LabelRule.objects.filter(version=world.version).update(max_choices=1)
    with pytest.raises(REFUSALS) as refusal:
        restore_study(archive)
    assert "codebook 'small-bugs' v1 exists here with other content (label rules" in str(
        refusal.value
    )
    assert counts() == before


def test_a_name_asked_for_is_used_and_an_owner_added(world_and_archive):
    _, archive = world_and_archive
    staff = UserFactory(username="admin-person", is_staff=True)
    result = restore_study(archive, options=RestoreOptions(name="Second look", owner=staff))
    assert result.study.name == "Second look"
    assert Membership.objects.get(study=result.study, user=staff).role == "owner"
    with pytest.raises(REFUSALS, match="a study named 'Second look' exists here"):
        restore_study(archive, options=RestoreOptions(name="Second look"))


def test_a_restore_into_a_database_with_only_the_issues_adds_the_rest(world_and_archive):
    """Only the issues survive here (the study, its people and codebook are gone): the issues
    are reused, everything else written anew."""
    _, archive = world_and_archive
    issues = set(Issue.objects.values_list("pk", flat=True))
    Study.objects.all().delete()
    Category.objects.filter(parent__isnull=False).delete()  # children first: parent is PROTECT
    Codebook.objects.all().delete()
    get_user_model().objects.all().delete()
    result = restore_study(Path(archive))
    assert set(Issue.objects.values_list("pk", flat=True)) == issues
    assert result.written["auth.user"] == 3 and result.written["taxonomy_app.category"] > 0
    assert result.study.name == "Study"
    assert AnnotationLabel.objects.count() == 12
