"""The owners' near-duplicate decisions travel in a backup: a duplicate left out of the study
(an issue in no item) comes back with its issue and still leaves it out; withdrawn marks come
back as history. An archive made before marks were archived restores without them; a later
archive missing the table is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from annotator.backup.errors import RestoreError
from annotator.backup.restore import restore_study
from annotator.issues.models import Issue
from annotator.similarity.models import DuplicateMark
from annotator.similarity.services import duplicate_issue_ids, mark_issue, withdraw_mark
from annotator.studies.models import Item
from tests.backup.archives import dump_to, labelled_world, read, rewrite
from tests.factories import IssueFactory

pytestmark = pytest.mark.django_db
MEMBER = "similarity.duplicatemark.jsonl"


def _marks(study: Any) -> list[tuple[str, int, str, int | None, bool, bool, str]]:
    """What a person sees of a study's marks: issue, decision, duplicate of, include,
    withdrawn, by whom (issues by repository and number, so ids do not matter)."""
    return sorted(
        (
            m.issue.repository.full_name,
            m.issue.number,
            m.decision,
            m.duplicate_of.number if m.duplicate_of else None,
            m.include,
            m.withdrawn_at is not None,
            m.decided_by.username if m.decided_by else "",
        )
        for m in DuplicateMark.objects.filter(study=study).select_related(
            "issue__repository", "duplicate_of", "decided_by"
        )
    )


@pytest.fixture(scope="module")
def with_marks(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("archives") / "marks.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        world = labelled_world()
        kept, other = world.issues
        left_out = IssueFactory(repository=kept.repository, title="the same hang, again")
        study, owner = world.study, world.owner
        mark_issue(study=study, issue=left_out, decision="duplicate", duplicate_of=kept, user=owner)
        undone = mark_issue(
            study=study, issue=other, decision="duplicate", duplicate_of=kept, user=owner
        )
        withdraw_mark(study=study, mark_id=undone.pk, user=owner)
        mark_issue(study=study, issue=other, decision="distinct", user=owner)
        dump_to(world, path)
        transaction.set_rollback(True)
    return path


def test_the_marks_and_the_left_out_issue_are_in_the_archive(with_marks):
    manifest, files = read(with_marks)
    assert files[MEMBER].count(b"\n") == 3
    issues = next(t for t in manifest["tables"] if t["table"] == "issues.issue")
    assert issues["rows"] == 3  # the study's two and the duplicate it left out


def test_a_restored_study_keeps_its_marks_and_still_leaves_the_duplicate_out(with_marks):
    # Restored into an empty database (the archive was made in a rolled-back transaction).
    study = restore_study(with_marks).study
    marks = _marks(study)
    assert len(marks) == 3
    current = [m for m in marks if not m[5]]
    withdrawn = [m for m in marks if m[5]]
    assert sorted(m[2] for m in current) == ["distinct", "duplicate"]
    assert [m[2] for m in withdrawn] == ["duplicate"]
    left_out = Issue.objects.get(title="the same hang, again")
    assert duplicate_issue_ids(study=study) == {left_out.pk}
    assert not Item.objects.filter(study=study, issue=left_out).exists()
    duplicate = DuplicateMark.objects.get(study=study, issue=left_out)
    assert duplicate.duplicate_of is not None
    assert Item.objects.filter(study=study, issue=duplicate.duplicate_of).exists()
    assert {m[6] for m in marks} == {"study-owner"}
    withdrawn_mark = DuplicateMark.objects.get(study=study, withdrawn_at__isnull=False)
    assert withdrawn_mark.issue_id != left_out.pk and withdrawn_mark.withdrawn_by is not None


def _drop_member(files: dict[str, bytes]) -> None:
    files.pop(MEMBER)


def _drop_table(data: dict[str, Any]) -> None:
    data["tables"] = [t for t in data["tables"] if t["member"] != MEMBER]


def _before_marks(data: dict[str, Any]) -> None:
    _drop_table(data)
    (head,) = data["migrations"]["similarity"]
    assert head >= "0002_duplicate_marks_in_backups"
    data["migrations"]["similarity"] = ["0001_near_duplicates_and_similar_issues"]


def test_an_archive_from_before_marks_were_archived_restores_without_them(with_marks, tmp_path):
    older = rewrite(
        with_marks, tmp_path / "older.zip", members=_drop_member, manifest=_before_marks
    )
    study = restore_study(older).study
    assert Item.objects.filter(study=study).count() == 2
    assert not DuplicateMark.objects.filter(study=study).exists()


def test_a_newer_archive_without_the_marks_is_refused(with_marks, tmp_path):
    broken = rewrite(
        with_marks, tmp_path / "broken.zip", members=_drop_member, manifest=_drop_table
    )
    with pytest.raises(RestoreError, match=r"similarity\.duplicatemark\.jsonl: missing"):
        restore_study(broken)
