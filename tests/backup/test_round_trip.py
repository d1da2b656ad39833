"""A populated study dumped, restored into an empty database by `manage.py restore_study` in
another process, and compared with the original row by row, field by field."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.contrib.auth.hashers import is_password_usable
from django.core.management import call_command
from django.db import connection

from annotator.backup.archive import FORMAT, MANIFEST
from annotator.backup.tables import TABLES
from tests.backup.builders import rich_study
from tests.backup.compare import Snapshot, differences

pytestmark = pytest.mark.django_db


def test_a_study_restored_into_an_empty_database_is_identical_row_for_row(tmp_path, empty_database):
    built = rich_study()
    archive = tmp_path / "study.zip"
    out = io.StringIO()
    call_command("dump_study", str(built.study.pk), "--out", str(archive), stdout=out)
    assert f"wrote {archive}" in out.getvalue()

    restore = empty_database.manage("restore_study", str(archive))
    assert restore.returncode == 0, restore.stderr
    assert "restored study 'Study'" in restore.stdout
    assert "new accounts without a password: study-owner" in restore.stdout

    with zipfile.ZipFile(archive) as opened:
        manifest = json.loads(opened.read(MANIFEST))
    labels = [t["table"] for t in manifest["tables"]]
    assert manifest["format"] == FORMAT and labels == [t.label for t in TABLES]
    with connection.cursor() as cursor:
        source = Snapshot(cursor, labels, json_as_text=True)
    target_connection = empty_database.connect()
    try:
        with target_connection.cursor() as cursor:
            target = Snapshot(cursor, labels, json_as_text=False)
            problems = differences(source, target, labels)
            assert not problems, "\n".join(problems)
            _check_what_the_comparison_cannot_see(cursor, built)
    finally:
        target_connection.close()


def _check_what_the_comparison_cannot_see(cursor, built) -> None:
    """Ids were mapped, not copied; people come back without a way in; the embedded ids of a
    run point to the restored study."""
    cursor.execute("SELECT id FROM studies_study")
    [(study_id,)] = cursor.fetchall()
    assert study_id != built.study.pk
    cursor.execute("SELECT username, password, is_staff, is_superuser FROM auth_user")
    users = cursor.fetchall()
    # The outsider, in no row of the study, is not carried.
    people = {"study-owner", "annotator-0", "annotator-1", "annotator-late", "adjudicator"}
    assert {u[0] for u in users} == people
    assert all(not is_password_usable(u[1]) and not u[2] and not u[3] for u in users)
    cursor.execute("SELECT result FROM agreement_agreementrun WHERE result IS NOT NULL")
    assert {row[0]["study"] for row in cursor.fetchall()} == {study_id}
    cursor.execute("SELECT count(*) FROM issues_issue WHERE search_vector IS NULL")
    assert cursor.fetchone() == (0,)  # indexed for search after the restore
    # The fields that came after the first archives are carried, not left at their defaults.
    cursor.execute(
        "SELECT n.status, n.unsure::text FROM studies_annotation n WHERE n.unsure <> '[]'::jsonb"
    )
    assert sorted(cursor.fetchall()) == [("draft", '["symptom"]'), ("submitted", '["fix"]')]
    cursor.execute("SELECT unsure_facets::text FROM adjudication_itemagreement")
    assert sorted(row[0] for row in cursor.fetchall()) == ['["fix"]', *["[]"] * 8]
    cursor.execute("SELECT route_unsure_to_adjudication FROM studies_study")
    assert cursor.fetchall() == [(False,)]
