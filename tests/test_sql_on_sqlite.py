"""Every `tests/**/test_sql.py` module again on SQLite, the database of `make run` without
DATABASE_URL: each app's hand-written statements (and the ORM fallbacks beside those that exist
only on PostgreSQL) must hold there too. Tests of PostgreSQL-only statements (COPY, advisory
locks, int8send, …) carry `@pytest.mark.postgresql_only` and are left out.

The run is a subprocess because the database is chosen when settings load: without
DATABASE_URL (and REDIS_URL: the cache in memory, Celery tasks in-process) the settings take
SQLite, whose test database pytest-django keeps in memory. ANNOTATOR_DATA_DIR points at a
temporary directory so nothing lands in var/; tables are created from the models
(--no-migrations: the schema migrations add only PostgreSQL's search index), which keeps the
run to a few seconds.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("**/test_sql.py"))
# The parent run's database, queue and pytest state (an xdist worker's id, its options).
INHERITED = ("DATABASE_URL", "REDIS_URL", "PYTEST_ADDOPTS", "PYTEST_XDIST_", "PYTEST_CURRENT_")
# pytest, with a plugin that ends the report with the database the tests ran on.
RUN = """
import sys, pytest

class Database:
    def pytest_terminal_summary(self, terminalreporter):
        from django.db import connection
        terminalreporter.write_line(f"database: {connection.vendor}")

sys.exit(pytest.main(sys.argv[1:], plugins=[Database()]))
"""


def test_every_sql_module_passes_on_sqlite(tmp_path: Path) -> None:
    assert MODULES, "no tests/**/test_sql.py module found"
    env = {k: v for k, v in os.environ.items() if not k.startswith(INHERITED)}
    env["ANNOTATOR_DATA_DIR"] = str(tmp_path)
    env["DJANGO_MEDIA_ROOT"] = str(tmp_path / "media")
    args = [*MODULES, "-q", "-m", "not postgresql_only", "--no-migrations"]
    args += ["-p", "no:cacheprovider"]
    if importlib.util.find_spec("xdist") is not None:
        args += ["-n", "0"]  # one process: the modules are small, workers cost more
    result = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    output = f"$ pytest {' '.join(args)}\n{result.stdout}{result.stderr}"
    passed = re.search(r"(\d+) passed", result.stdout)
    assert result.returncode == 0, output
    assert passed is not None and int(passed.group(1)) > 0, output
    assert "database: sqlite" in result.stdout, output
