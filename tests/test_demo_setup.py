"""What `make run` does before serving, on the embedded SQLite database it uses by default."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["ANNOTATOR_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip


def test_demo_seeds_an_sqlite_database_without_any_service(tmp_path):
    manage("migrate", "--noinput", data_dir=tmp_path)

    first = manage("seed_demo", data_dir=tmp_path)
    again = manage("seed_demo", "--password", "chosen-password-1", data_dir=tmp_path)

    assert "colossalai_issues.json: created 36, updated 0, unchanged 0, skipped 0" in first.stdout
    assert "Demo owner account: demo / " in first.stdout
    assert "colossalai_issues.json: created 0, updated 0, unchanged 36, skipped 0" in again.stdout
    assert "Demo owner account: demo / chosen-password-1" in again.stdout
    with sqlite3.connect(tmp_path / "annotator.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM issues_issue").fetchone() == (36,)
        assert db.execute("SELECT max(comments_count) FROM issues_issue").fetchone()[0] > 0
