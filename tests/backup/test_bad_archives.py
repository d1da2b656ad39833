"""Archives a restore must refuse — truncated, tampered, newer, foreign, zip bombs, members
named like paths, rows that do not fit — each with a message naming what is wrong, and nothing
written: the database holds exactly the rows it held before."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from annotator.backup.errors import REFUSALS
from annotator.backup.models import BackupJob
from annotator.backup.restore import restore_study
from annotator.backup.tables import TABLES
from tests.backup.archives import dump_to, edit_line, labelled_world, rewrite

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def good(django_db_setup, django_db_blocker, tmp_path_factory) -> Path:
    """A small study's archive, made in a transaction rolled back afterwards: the study is not
    in the database the tests restore into."""
    path = tmp_path_factory.mktemp("archives") / "good.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        dump_to(labelled_world(), path)
        transaction.set_rollback(True)
    return path


def counts() -> dict[str, int]:
    models = [t.model for t in TABLES] + [BackupJob]
    return {m._meta.label_lower: m._default_manager.count() for m in models}


def refused(path: Path, message: str) -> None:
    before = counts()
    with pytest.raises(REFUSALS) as refusal:
        restore_study(path)
    assert message in str(refusal.value), str(refusal.value)
    assert counts() == before


def test_the_good_archive_restores(good):
    before = counts()
    result = restore_study(good)
    assert result.study is not None and result.study.items.count() == 2
    assert counts()["studies.annotationlabel"] == before["studies.annotationlabel"] + 12


def test_a_truncated_archive_is_refused(good, tmp_path):
    cut = tmp_path / "cut.zip"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    refused(cut, "cut.zip is not a zip archive (or it was truncated)")


def test_a_member_changed_after_the_backup_is_refused_by_its_checksum(good, tmp_path):
    def tamper(files):
        text = files["studies.annotation.jsonl"]
        files["studies.annotation.jsonl"] = text.replace(b'"seen"', b'"SEEN"', 1)

    path = rewrite(good, tmp_path / "tampered.zip", members=tamper)
    refused(path, "studies.annotation.jsonl: SHA-256 does not match manifest.json")


def test_an_archive_of_a_newer_format_is_refused(good, tmp_path):
    path = rewrite(good, tmp_path / "v2.zip", manifest=lambda m: m.update(format_version=2))
    refused(path, "format version 2 is newer than this version of annotator reads (up to 1)")


def test_an_archive_made_with_newer_migrations_is_refused(good, tmp_path):
    path = rewrite(
        good,
        tmp_path / "newer.zip",
        manifest=lambda m: m["migrations"]["studies"].append("0099_from_the_future"),
    )
    refused(path, "migration studies.0099_from_the_future is unknown here")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"number,title\n1,Hang\n", "foreign.zip is not a zip archive"),
        ({"issues.jsonl": b"{}\n"}, "foreign.zip has no manifest.json: not an annotator study"),
        (
            {"manifest.json": b'{"format": "label-studio-export"}'},
            "format is 'label-studio-export', not 'annotator-study-backup'",
        ),
    ],
)
def test_a_foreign_file_is_refused(tmp_path, content, message):
    path = tmp_path / "foreign.zip"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in content.items():
                archive.writestr(name, data)
    refused(path, message)


def test_a_zip_bomb_is_refused_before_it_inflates(good, tmp_path, settings):
    settings.BACKUP_MAX_INFLATED_MB = 16

    def bomb(files):  # 64 MB of one byte compress to about 64 KB
        files["studies.item.jsonl"] = b"\n" * (64 * 1024 * 1024)

    path = rewrite(good, tmp_path / "bomb.zip", members=bomb, reseal=True)
    assert path.stat().st_size < 1024 * 1024
    refused(path, "would inflate to")


@pytest.mark.parametrize("name", ["../../evil.jsonl", "/etc/cron.d/evil", "studies/item.jsonl"])
def test_a_member_named_like_a_path_is_refused_and_nothing_is_extracted(good, tmp_path, name):
    work = tmp_path / "deep" / "er"
    work.mkdir(parents=True)
    path = rewrite(good, work / "traversal.zip", members=lambda files: files.update({name: b"x"}))
    refused(path, f"member {name!r} is not a backup member name")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "er", "traversal.zip"]


def test_a_row_with_a_bad_value_is_refused_by_member_line_and_field(good, tmp_path):
    # Written after users, issues, the codebook and the study: all of them roll back.
    bad = {"submitted_at": "the day before yesterday"}
    path = rewrite(
        good,
        tmp_path / "bad-row.zip",
        reseal=True,
        members=lambda files: edit_line(files, "studies.annotation.jsonl", 3, bad),
    )
    refused(path, "studies.annotation.jsonl line 3, field 'submitted_at': ")


def test_a_reference_to_a_row_not_in_the_archive_is_refused(good, tmp_path):
    path = rewrite(
        good,
        tmp_path / "dangling.zip",
        reseal=True,
        members=lambda files: edit_line(
            files, "studies.annotationlabel.jsonl", 2, {"category": 999999}
        ),
    )
    refused(
        path,
        "studies.annotationlabel.jsonl line 2, field 'category': 999999 is not a row of "
        "taxonomy_app.category.jsonl",
    )


def test_a_row_the_database_refuses_is_named_by_its_line(good, tmp_path):
    lines = []

    def duplicate_label(files):  # the same category twice on one annotation, as a last line
        lines.extend(files["studies.annotationlabel.jsonl"].splitlines())
        copy = json.loads(lines[0]) | {"id": 999999}
        files["studies.annotationlabel.jsonl"] += (json.dumps(copy) + "\n").encode()

    path = rewrite(good, tmp_path / "dup.zip", members=duplicate_label, reseal=True)
    refused(
        path,
        f"studies.annotationlabel.jsonl line {len(lines) + 1}: the database refused the row: "
        'duplicate key value violates unique constraint "label_unique"',
    )


def test_the_command_exits_non_zero_naming_the_problem(good, tmp_path):
    path = rewrite(good, tmp_path / "v2.zip", manifest=lambda m: m.update(format_version=2))
    with pytest.raises(CommandError, match=r"v2.zip: .*format version 2 .*nothing was written"):
        call_command("restore_study", str(path), stdout=io.StringIO())


def test_a_member_inflating_past_the_size_its_headers_declare_is_refused(good, tmp_path):
    """The bomb that lies: its zip headers (and manifest) claim 64 bytes, it holds 32 MB."""
    member = "studies.item.jsonl"
    path = rewrite(
        good,
        tmp_path / "liar.zip",
        reseal=True,
        members=lambda files: files.update({member: b"\n" * (32 * 1024 * 1024)}),
        manifest=lambda m: next(t for t in m["tables"] if t["member"] == member).update(bytes=64),
    )
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo(member).header_offset
    data[local + 22 : local + 26] = (64).to_bytes(4, "little")
    central = _central_entry(data, member.encode())
    data[central + 24 : central + 28] = (64).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    refused(path, f"{member}: cannot be inflated")


def _central_entry(data: bytearray, name: bytes) -> int:
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = int.from_bytes(data[at + 28 : at + 30], "little")
        if data[at + 46 : at + 46 + length] == name:
            return at
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"{name!r} not in the central directory")
