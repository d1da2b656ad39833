"""An archive made before gold answers existed (no studies.goldanswer member, its migrations
stopping before the table was made) restores without them; an archive made after, missing the
table, is refused. Gold answers travel in a backup like any study row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from annotator.backup.errors import RestoreError
from annotator.backup.restore import restore_study
from annotator.studies.models import GoldAnswer, Item
from annotator.studies.services.gold import set_gold
from tests.backup.archives import dump_to, labelled_world, rewrite

pytestmark = pytest.mark.django_db
MEMBER = "studies.goldanswer.jsonl"


@pytest.fixture(scope="module")
def with_gold(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("archives") / "gold.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        world = labelled_world()
        item = Item.objects.filter(study=world.study).order_by("pk").first()
        labels = world.labels(screening="relevant", symptom="hang", fix=["version"])
        set_gold(item=item, user=world.owner, labels=labels, rationale="a hang")
        dump_to(world, path)
        transaction.set_rollback(True)
    return path


def drop_member(files: dict[str, bytes]) -> None:
    files.pop(MEMBER)


def drop_table(data: dict[str, Any]) -> None:
    data["tables"] = [t for t in data["tables"] if t["member"] != MEMBER]


def before_gold(data: dict[str, Any]) -> None:
    drop_table(data)
    (head,) = data["migrations"]["studies"]
    assert head >= "0009_gold_and_reliability_sample"  # the archive holds the table
    data["migrations"]["studies"] = ["0008_annotation_revision"]


def test_gold_answers_travel_in_a_backup(with_gold):
    study = restore_study(with_gold).study
    gold = GoldAnswer.objects.get(item__study=study)
    assert gold.rationale == "a hang" and gold.labels["symptom"] == ["hang"]


def test_an_archive_from_before_gold_restores_without_it(with_gold, tmp_path):
    older = rewrite(with_gold, tmp_path / "older.zip", members=drop_member, manifest=before_gold)
    study = restore_study(older).study
    assert study is not None and Item.objects.filter(study=study).count() == 2
    assert not GoldAnswer.objects.filter(item__study=study).exists()


def test_a_newer_archive_without_the_table_is_refused(with_gold, tmp_path):
    broken = rewrite(with_gold, tmp_path / "broken.zip", members=drop_member, manifest=drop_table)
    with pytest.raises(RestoreError, match=r"studies\.goldanswer\.jsonl: missing from the archive"):
        restore_study(broken)
