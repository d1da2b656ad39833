"""What a dump holds and how it writes: one study and nothing of another, every table of the
study's world (a new one cannot escape), a manifest that describes it all, streamed."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db.models import Max

from annotator.backup.archive import ArchiveReader
from annotator.backup.dump import dump_study
from annotator.backup.restore import restore_study
from annotator.backup.tables import BY_MODEL, NOT_ARCHIVED, TABLES
from annotator.issues.models import Issue, Repository
from annotator.studies.models import AnnotationLabel, Item, Membership
from annotator.studies.services import (
    add_member,
    create_study,
    next_assignment,
    select_issues,
    submit_annotation,
)
from taxonomy_app.services import carry_over_labels, publish_version, start_draft
from tests.backup.archives import dump_to, labelled_world
from tests.backup.compare import NOT_CARRIED
from tests.factories import IssueFactory, UserFactory

pytestmark = pytest.mark.django_db


def rows_of(reader: ArchiveReader, table: str) -> list[dict]:
    entry = reader.manifest.table(table)
    assert entry is not None
    return [row for _, row in reader.rows(entry)]


def test_a_backup_holds_its_study_and_nothing_of_another(tmp_path):
    world = labelled_world()
    other_owner, other_annotator = UserFactory(username="other-owner"), UserFactory(username="o-1")
    other = create_study(
        name="Other", codebook_version=world.version, owner=other_owner, overlap_k=1
    )
    add_member(study=other, user=other_annotator, role=Membership.Role.ANNOTATOR)
    elsewhere = Repository.objects.create(owner="NVIDIA", name="Megatron-LM")
    IssueFactory(repository=elsewhere)
    select_issues(study=other, round=other.rounds.get(), filters={"repository": elsewhere.pk})
    assignment = next_assignment(study=other, annotator=other_annotator)
    submit_annotation(
        assignment=assignment, user=other_annotator, labels=world.labels(screening="relevant")
    )

    with ArchiveReader(dump_to(world, tmp_path / "a.zip")) as reader:
        reader.verify()
        assert [r["name"] for r in rows_of(reader, "studies.study")] == ["Study"]
        assert {r["username"] for r in rows_of(reader, "auth.user")} == {
            "study-owner",
            "annotator-0",
            "annotator-1",
        }
        assert {r["owner"] for r in rows_of(reader, "issues.repository")} == {"hpcaitech"}
        assert len(rows_of(reader, "issues.issue")) == 2
        assert len(rows_of(reader, "studies.annotationlabel")) == 12
        assert {r["item"] for r in rows_of(reader, "studies.assignment")} == set(
            Item.objects.filter(study=world.study).values_list("pk", flat=True)
        )


def test_the_manifest_describes_every_table_its_fields_and_keys(tmp_path):
    world = labelled_world()
    with ArchiveReader(dump_to(world, tmp_path / "a.zip")) as reader:
        manifest = reader.manifest
    assert manifest.format_version == 1 and manifest.study["name"] == "Study"
    assert manifest.migrations.get("studies")
    label = manifest.table("studies.annotationlabel")
    assert label is not None and label.rows == 12 and len(label.sha256) == 64
    fields = {f.name: f for f in label.fields}
    assert fields["category"].references == "taxonomy_app.category"
    assert fields["id"].primary_key and fields["id"].type == "BigAutoField"
    assert manifest.table("issues.issue").natural_key == ("repository", "number")
    assert "password" not in manifest.table("auth.user").field_names()
    assert any("no password" in note for note in manifest.notes)


def test_every_table_that_belongs_to_a_study_is_archived_or_said_not_to_be():
    """A model pointing to an archived table (other than to a user: accounts, tokens and logs
    are the server's) is archived itself, or NOT_ARCHIVED says why not."""
    user = get_user_model()
    labels = set()
    for model in apps.get_models(include_auto_created=True):
        if model in BY_MODEL:
            continue
        points_to = {
            f.related_model
            for f in model._meta.get_fields()
            if f.is_relation and f.concrete and f.related_model in BY_MODEL
        }
        if points_to - {user}:
            labels.add(model._meta.label_lower)
    assert labels == set(NOT_ARCHIVED)


def test_every_field_is_archived_but_those_left_out_on_purpose():
    for table in TABLES:
        archived = {f.name for f in table.fields()}
        every = {f.name for f in table.model._meta.concrete_fields}
        assert every - archived == NOT_CARRIED.get(table.label, set()), table.label


def test_a_dump_streams_rows_rather_than_holding_the_study(tmp_path):
    """400 issues of 64 KB (25 MB of text): the dump holds a few fetches at a time."""
    world = labelled_world()
    repository = world.issues[0].repository
    body = "NCCL WARN Call to ibv_reg_mr failed\n" * 1800  # ~64 KB
    # numbers after the factory's: its sequence runs on across the tests of a session
    first = Issue.objects.filter(repository=repository).aggregate(Max("number"))["number__max"] + 1
    Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=first + n,
            title=f"log {n}",
            body=body,
            state="open",
            content_hash=f"{n:064x}",
        )
        for n in range(400)
    )
    select_issues(study=world.study, round=world.round, filters={"repository": repository.pk})
    total = Issue.objects.count() * len(body)
    tracemalloc.start()
    try:
        with (tmp_path / "big.zip").open("wb") as out:
            dump_study(study=world.study, target=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 25_000_000
    assert peak < total / 2, f"peak {peak:,} bytes for {total:,} bytes of issue text"


def test_the_archive_format_module_imports_no_django():
    code = (
        "import sys, annotator.backup.archive; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_labels_carried_over_to_a_later_version_bring_that_version(tmp_path):
    """carry_over_labels moves labels onto v2 while annotations still name v1: the archive holds
    both versions, and restores (here beside the original)."""
    world = labelled_world()
    draft = start_draft(codebook=world.version.codebook, user=world.owner)
    v2 = publish_version(version=draft, changelog="v2", user=world.owner)
    assert carry_over_labels(version=v2).moved == 12
    with ArchiveReader(dump_to(world, tmp_path / "a.zip")) as reader:
        versions = sorted(r["number"] for r in rows_of(reader, "taxonomy_app.codebookversion"))
    assert versions == [1, 2]
    result = restore_study(tmp_path / "a.zip")
    labels = AnnotationLabel.objects.filter(annotation__assignment__item__study=result.study)
    assert set(labels.values_list("facet__version__number", flat=True)) == {2}
