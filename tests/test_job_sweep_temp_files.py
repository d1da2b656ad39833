"""The app's temporary directory: uploads and XLSX exports write there, and the job sweep
removes what a killed request or job left, once old enough and open in no process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import TemporaryUploadedFile

from annotator.exports.columns import Column
from annotator.exports.writers import XlsxSheet, write_xlsx
from annotator.job_sweep import remove_temp_leftovers, sweep_lost_jobs


@pytest.fixture
def temp_dir(settings, tmp_path: Path) -> Path:
    root = tmp_path / "app-tmp"
    settings.TEMP_DIR = root
    settings.FILE_UPLOAD_TEMP_DIR = str(root / "uploads")
    settings.XLSX_TEMP_DIR = str(root / "xlsx")
    return root


def aged(path: Path, seconds: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * 100)
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


@pytest.mark.django_db
def test_the_sweep_removes_old_leftovers_and_keeps_fresh_and_open_files(
    temp_dir: Path, settings
) -> None:
    age = settings.TEMP_FILE_MAX_AGE_SECONDS
    old_upload = aged(temp_dir / "uploads" / "tmpab12.upload.yaml", age + 60)
    old_sheet = aged(temp_dir / "xlsx" / "openpyxl.k3j2", age + 60)
    fresh_upload = aged(temp_dir / "uploads" / "tmpcd34.upload.xlsx", 60)
    fresh_sheet = aged(temp_dir / "xlsx" / "openpyxl.zz99", age - 60)
    held = aged(temp_dir / "xlsx" / "openpyxl.held", age + 60)
    with held.open("rb"):
        sweep_lost_jobs()
    assert not old_upload.exists() and not old_sheet.exists()
    assert fresh_upload.exists() and fresh_sheet.exists() and held.exists()
    assert remove_temp_leftovers() == [held]


def test_the_safe_age_outlasts_any_task(settings) -> None:
    assert settings.TEMP_FILE_MAX_AGE_SECONDS > settings.CELERY_TASK_TIME_LIMIT


def test_an_xlsx_export_spools_its_sheets_in_the_apps_directory(temp_dir: Path) -> None:
    seen: list[list[str]] = []

    def rows():  # type: ignore[no-untyped-def]
        for n in range(3):
            seen.append(sorted(p.name for p in (temp_dir / "xlsx").iterdir()))
            yield {"n": n}

    out = temp_dir.parent / "export.xlsx"
    with out.open("wb") as handle:
        sheets = [XlsxSheet("a", [Column("n", "int")], rows()), XlsxSheet("b", [], iter([]))]
        write_xlsx(sheets, handle)
    # While a sheet is written: its cells' spool and openpyxl's own, both named as the sweep
    # expects (openpyxl.*).
    assert seen and all(all(n.startswith("openpyxl.") for n in names) for names in seen)
    assert all(sum(n.endswith(".cells") for n in names) == 1 for names in seen)
    assert list((temp_dir / "xlsx").iterdir()) == []  # saved: the workbook removed its spools
    assert out.stat().st_size > 0


def test_a_large_upload_is_received_in_the_apps_directory(temp_dir: Path) -> None:
    from annotator.upload_handling import LimitedUploadHandler

    LimitedUploadHandler().new_file("file", "a.yaml", "text/yaml", 10)
    upload = TemporaryUploadedFile("a.yaml", "text/yaml", 10, "utf-8")
    try:
        assert Path(upload.temporary_file_path()).parent == temp_dir / "uploads"
    finally:
        upload.close()


def test_a_fresh_data_directory_passes_djangos_checks(tmp_path: Path) -> None:
    """The temporary directories are made at start-up: Django refuses a FILE_UPLOAD_TEMP_DIR
    that does not exist (files.E001), which would stop migrate and runserver on a new machine."""
    data = tmp_path / "fresh"
    env = {**os.environ, "ANNOTATOR_DATA_DIR": str(data)}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (data / "tmp" / "uploads").is_dir() and (data / "tmp" / "xlsx").is_dir()
