"""The two commands' edges: a study named by id or name, a missing folder, `--check`."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotator.studies.models import Study
from tests.backup.archives import labelled_world

pytestmark = pytest.mark.django_db


def test_dump_study_names_a_study_by_exact_name_and_refuses_an_unknown_one(tmp_path):
    labelled_world()
    out = io.StringIO()
    call_command("dump_study", "Study", "--out", str(tmp_path / "s.zip"), stdout=out)
    assert "study 'Study', " in out.getvalue() and (tmp_path / "s.zip").stat().st_size > 0
    with pytest.raises(CommandError, match="no study with id or name 'Nope'"):
        call_command("dump_study", "Nope", "--out", str(tmp_path / "n.zip"))
    with pytest.raises(CommandError, match=r"the folder .*missing does not exist"):
        call_command("dump_study", "Study", "--out", str(tmp_path / "missing" / "s.zip"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zip"]  # no partial file left


def test_restore_study_check_lists_the_tables_and_writes_nothing(tmp_path):
    labelled_world()
    archive = tmp_path / "s.zip"
    call_command("dump_study", "Study", "--out", str(archive), stdout=io.StringIO())
    out = io.StringIO()
    call_command("restore_study", str(archive), "--check", stdout=out)
    assert "s.zip: intact backup (format 1) of study 'Study'" in out.getvalue()
    assert "  studies.annotationlabel: 12 rows" in out.getvalue()
    assert Study.objects.count() == 1
    with pytest.raises(CommandError, match="no such file"):
        call_command("restore_study", str(tmp_path / "absent.zip"))
    with pytest.raises(CommandError, match="--owner: no user 'ghost'"):
        call_command("restore_study", str(archive), "--owner", "ghost")
