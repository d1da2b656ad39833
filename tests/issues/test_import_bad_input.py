"""Every kind of bad input: a message naming the record and field, and nothing written."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from annotator.issues.models import Issue, IssueComment, Repository
from tests.issues.test_import_service import ISSUES, rest_issue, snapshot

ROOT = Path(__file__).resolve().parents[2]

GOOD = [rest_issue(1), rest_issue(2)]
TRUNCATED = json.dumps([rest_issue(1), rest_issue(2), rest_issue(3)])[:-200].encode()
CSV_HEADER_ONLY_TITLE = b"title,body\nHello,world\n"

BAD_INPUTS = [
    ("empty", b"", "auto", r"empty"),
    ("whitespace", b"   \n\t ", "auto", r"empty"),
    ("not json", b"this is not json", "github", r"not valid JSON"),
    (
        "truncated",
        TRUNCATED,
        "auto",
        r"(?i)(truncated|incomplete).*record 3|record 3.*(truncated|incomplete)",
    ),
    ("object not array", json.dumps({"items": GOOD}).encode(), "github", r"(?i)array"),
    ("array of numbers", b"[1, 2]", "github", r"record 1.*object"),
    (
        "no number",
        json.dumps(
            [rest_issue(1), {k: v for k, v in rest_issue(2).items() if k != "number"}]
        ).encode(),
        "auto",
        r"record 2.*'number'.*missing",
    ),
    (
        "number not integer",
        json.dumps([{**rest_issue(1), "number": "12a"}]).encode(),
        "auto",
        r"record 1.*'number'",
    ),
    (
        "number is float",
        json.dumps([{**rest_issue(1), "number": 1.5}]).encode(),
        "auto",
        r"record 1.*'number'",
    ),
    (
        "number is bool",
        json.dumps([{**rest_issue(1), "number": True}]).encode(),
        "auto",
        r"record 1.*'number'",
    ),
    (
        "conflicting duplicate",
        json.dumps([rest_issue(1), rest_issue(1, title="x")]).encode(),
        "auto",
        r"record 2 \(number 1\).*'number'",
    ),
    (
        "invalid date",
        json.dumps([rest_issue(1), rest_issue(2, created_at="2022-13-40")]).encode(),
        "auto",
        r"record 2.*'created_at'.*2022-13-40",
    ),
    ("invalid utf-8", b'[{"number": 1, "title": "caf\xe9", "state": "open"}]', "auto", r"UTF-8"),
    (
        "nul character",
        json.dumps([rest_issue(1), rest_issue(2, body="a\u0000b")]).encode(),
        "auto",
        r"record 2 \(number 2\).*'body'.*NUL",
    ),
    ("csv missing columns", CSV_HEADER_ONLY_TITLE, "csv", r"missing required columns: number"),
    ("csv bad number", b"number,title,repository\nx,Hello,a/b\n", "csv", r"record 1.*'number'"),
    (
        "jsonl bad line",
        b'{"number": 1, "title": "a", "state": "open", "repository_url": "https://api.github.com/repos/a/b"}\n{nope\n',
        "jsonl",
        r"line 2",
    ),
    (
        "comment without issue",
        json.dumps(
            [{"user": {"login": "a"}, "body": "x", "issue_url": "https://api.github.com/repos/a/b"}]
        ).encode(),
        "github",
        r"record 1.*'issue_url'",
    ),
]


@pytest.fixture
def existing(db):  # type: ignore[no-untyped-def]
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    return snapshot()


@pytest.mark.parametrize(
    ("case", "payload", "fmt", "message"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_is_rejected_with_a_message_and_writes_nothing(
    tmp_path, existing, case, payload, fmt, message
):
    path = tmp_path / ("bad.csv" if fmt == "csv" else "bad.json")
    path.write_bytes(payload)

    with pytest.raises(CommandError, match=message):
        call_command("import_issues", str(path), "--format", fmt, stdout=io.StringIO())

    assert snapshot() == existing


def test_file_over_the_size_limit_is_rejected(tmp_path, existing, settings):
    settings.IMPORT_MAX_BYTES = 10_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps([rest_issue(n) for n in range(100, 200)]))

    with pytest.raises(CommandError, match=r"(?i)larger than the limit"):
        call_command("import_issues", str(path), stdout=io.StringIO())

    assert snapshot() == existing


@pytest.mark.django_db(transaction=True)
def test_command_exits_non_zero_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([rest_issue(1), {**rest_issue(2), "number": None}]))
    env = {"DATABASE_URL": _url(), "PATH": "/usr/bin:/bin"}

    result = subprocess.run(
        [sys.executable, "manage.py", "import_issues", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "record 2" in result.stderr and "'number'" in result.stderr
    assert (Repository.objects.count(), Issue.objects.count(), IssueComment.objects.count()) == (
        0,
        0,
        0,
    )


def _url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
