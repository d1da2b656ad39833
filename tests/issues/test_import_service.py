"""The import service against PostgreSQL: counts, idempotency, updates, atomicity."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotator.issues.formats import ImportFormatError
from annotator.issues.models import Issue, IssueComment, Repository, RepositoryAlias
from annotator.issues.services import BATCH_SIZE, import_issues

DEMO = Path(__file__).resolve().parents[2] / "annotator" / "issues" / "demo_data"
ISSUES = DEMO / "colossalai_issues.json"
COMMENTS = DEMO / "colossalai_comments.json"

pytestmark = pytest.mark.django_db


def rest_issue(number: int, repo: str = "hpcaitech/ColossalAI", **fields: object) -> dict:
    issue = {
        "url": f"https://api.github.com/repos/{repo}/issues/{number}",
        "repository_url": f"https://api.github.com/repos/{repo}",
        "html_url": f"https://github.com/{repo}/issues/{number}",
        "id": 1000 + number,
        "number": number,
        "title": f"Issue {number}",
        "state": "open",
        "labels": [{"name": "bug"}],
        "user": {"login": "someone"},
        "body": "NCCL timeout\r\n```\nlog\n```",
        "created_at": "2023-01-02T03:04:05Z",
        "updated_at": "2023-01-03T03:04:05Z",
        "closed_at": None,
        "comments": 0,
    }
    issue.update(fields)
    return issue


def run(payload: bytes | list | str, **options: object):
    if isinstance(payload, list):
        payload = json.dumps(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return import_issues(stream=io.BytesIO(payload), **options)


def snapshot() -> tuple:
    return (
        list(Repository.objects.values_list("owner", "name").order_by("pk")),
        list(Issue.objects.values_list("number", "title", "content_hash").order_by("pk")),
        list(IssueComment.objects.values_list("key", "body").order_by("pk")),
    )


def test_demo_issues_and_comments_import_with_counts():
    with ISSUES.open("rb") as stream:
        issues = import_issues(stream=stream, filename=ISSUES.name)
    with COMMENTS.open("rb") as stream:
        comments = import_issues(stream=stream, filename=COMMENTS.name)

    assert str(issues) == "created 36, updated 0, unchanged 0, skipped 0"
    # The stored copy of issue 3140 holds one comment twice, byte for byte: skipped, not an error.
    assert str(comments) == "created 39, updated 0, unchanged 0, skipped 1"
    repository = Repository.objects.get()
    assert repository.full_name == "hpcaitech/ColossalAI"
    assert Issue.objects.filter(is_pull_request=True).count() == 4
    assert IssueComment.objects.count() == 39


def test_reimporting_the_same_file_changes_nothing():
    first = run([rest_issue(1), rest_issue(2)])
    before = snapshot()
    second = run([rest_issue(1), rest_issue(2)])

    assert str(first) == "created 2, updated 0, unchanged 0, skipped 0"
    assert str(second) == "created 0, updated 0, unchanged 2, skipped 0"
    assert snapshot() == before


@pytest.mark.parametrize(
    ("field", "value", "column", "expected"),
    [
        ("title", "Renamed", "title", "Renamed"),
        ("body", "new body", "body", "new body"),
        ("state", "closed", "state", "closed"),
        ("labels", [{"name": "bug"}, {"name": "distributed"}], "labels", ["bug", "distributed"]),
    ],
)
def test_a_changed_field_updates_the_row(field, value, column, expected):
    run([rest_issue(1), rest_issue(2)])
    counts = run([rest_issue(1, **{field: value}), rest_issue(2)])

    assert str(counts) == "created 0, updated 1, unchanged 1, skipped 0"
    assert getattr(Issue.objects.get(number=1), column) == expected


def test_identical_duplicates_in_one_file_are_skipped():
    counts = run([rest_issue(1), rest_issue(1)])

    assert str(counts) == "created 1, updated 0, unchanged 0, skipped 1"


def test_conflicting_duplicates_far_apart_reject_the_whole_file():
    records = [rest_issue(n) for n in range(1, 2501)] + [rest_issue(7, title="Other title")]

    with pytest.raises(ImportFormatError) as error:
        run(records)

    assert "record 2501 (number 7)" in str(error.value)
    assert "different content" in str(error.value)
    assert Issue.objects.count() == 0


def test_conflicting_duplicates_in_one_batch_reject_the_file():
    with pytest.raises(ImportFormatError, match=r"record 2 \(number 1\).*first at record 1"):
        run([rest_issue(1), rest_issue(1, title="changed")])
    assert Issue.objects.count() == 0


def test_an_error_late_in_a_big_file_leaves_earlier_batches_unwritten():
    run([rest_issue(1)])
    before = snapshot()
    records = [rest_issue(n) for n in range(2, 3000)] + [rest_issue(3001, created_at="yesterday")]

    with pytest.raises(ImportFormatError, match="created_at"):
        run(records)

    assert snapshot() == before


VALUES_NO_COLUMN_HOLDS = {
    "number": (rest_issue(3_000_000_000), "3000000000 is out of range (0 to 2147483647)"),
    "github_id": (rest_issue(2, id=2**63), f"{2**63} is out of range"),
    "author": (rest_issue(2, user={"login": "x" * 101}), "101 characters, more than the 100"),
}


@pytest.mark.postgresql_only
@pytest.mark.parametrize("field", VALUES_NO_COLUMN_HOLDS)
def test_a_value_its_column_cannot_hold_is_refused_naming_record_and_field(field):
    """Checked as the row is encoded for COPY: the file is refused, nothing written, and the
    message names the record and the field (the database's own error named neither)."""
    record, detail = VALUES_NO_COLUMN_HOLDS[field]
    with pytest.raises(ImportFormatError) as error:
        run("\n".join(json.dumps(r) for r in (rest_issue(1), record)))

    assert error.value.record == f"record 2 (number {record['number']})"
    assert error.value.field == field
    assert detail in str(error.value)
    assert Issue.objects.count() == 0


@pytest.mark.parametrize("shape", ["array", "pretty", "jsonl"])
def test_the_raw_object_is_stored_as_the_file_wrote_it(shape):
    """Each object's own JSON text goes to jsonb as it is (not encoded again): what is stored is
    the object, whatever the file's spacing and escapes."""
    objects = [
        rest_issue(
            1, body="é 中文 🔥 a \\u0000 that is text", milestone={"t": "\u2028", "n": 1.25}
        ),
        rest_issue(2, reactions={"+1": 0, "big": 2**70}, locked=True, assignee=None),
    ]
    payload = {
        "array": json.dumps(objects),
        "pretty": json.dumps(objects, indent=3, ensure_ascii=False),
        "jsonl": "\n".join(json.dumps(o, ensure_ascii=False) for o in objects),
    }[shape]
    run(payload)
    assert [issue.raw for issue in Issue.objects.order_by("number")] == objects


def test_a_string_jsonb_cannot_hold_refuses_the_file_and_writes_nothing():
    """The bad record comes after a whole batch, which the writer may have stored already: the
    import is one transaction."""
    issues = [rest_issue(n) for n in range(1, BATCH_SIZE + 2)]
    issues.append(rest_issue(BATCH_SIZE + 2, milestone={"title": "v1\x00"}))
    with pytest.raises(ImportFormatError) as error:
        run(issues)
    assert str(error.value) == (
        f"record {BATCH_SIZE + 2} (number {BATCH_SIZE + 2}): field 'milestone.title': "
        "holds a NUL character (\\u0000)"
    )
    assert Issue.objects.count() == 0


@pytest.mark.postgresql_only
def test_an_issue_stored_after_the_writer_looked_is_updated_not_refused(monkeypatch):
    """The writer COPYs a batch it found all new straight into the table; an issue stored in
    between (here: the lookup made blind to it) makes that COPY decline, and the batch is
    upserted instead."""
    from annotator.issues.writer import RecordWriter

    run([rest_issue(2, title="stored before")])
    monkeypatch.setattr(RecordWriter, "_existing_issues", lambda self, by_key: {})

    run([rest_issue(1), rest_issue(2, title="from the file")])

    stored = dict(Issue.objects.values_list("number", "title"))
    assert stored == {1: "Issue 1", 2: "from the file"}
    assert Issue.objects.filter(search_vector__isnull=True).count() == 0


BAD_RECORDS = {
    "parse error": rest_issue(3600, created_at="yesterday"),
    "write error": rest_issue(7, title="Other title"),  # number 7 again, different content
}


@pytest.mark.parametrize("bad", BAD_RECORDS)
def test_a_failed_import_stops_the_parse_ahead_and_writes_nothing(bad):
    """Batches are parsed in a thread ahead of the writer: a failure on either side ends it."""
    records = [rest_issue(n) for n in range(1, 3500)] + [BAD_RECORDS[bad]]
    records += [rest_issue(n) for n in range(4000, 7000)]

    with pytest.raises(ImportFormatError, match="record 3500"):
        run(records)

    assert Issue.objects.count() == 0
    threads = {"import-parser", "import-vectors"}
    assert not [t for t in threading.enumerate() if t.name in threads and t.is_alive()]
    assert _other_sessions() == 0  # the vectors' connection closed with its thread


def _other_sessions() -> int:
    """Other sessions on this test database, given up to 2 s to end: a backend leaves
    pg_stat_activity a moment after its client closes the connection."""
    import time

    from django.db import connection

    deadline = time.monotonic() + 2
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            sessions = int(cursor.fetchone()[0])
        if sessions == 0 or time.monotonic() > deadline:
            return sessions
        time.sleep(0.05)


@pytest.fixture
def vectors_computed(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """The size of each batch whose search vectors the import computed ahead."""
    from annotator.issues import sql, writer

    computed: list[int] = []
    text_vectors = sql.text_vectors
    monkeypatch.setattr(
        writer, "text_vectors", lambda t, b: computed.append(len(t)) or text_vectors(t, b)
    )
    return computed


@pytest.mark.postgresql_only
def test_the_vectors_computed_ahead_are_the_ones_the_indexer_computes(vectors_computed):
    """The import computes its issues' search vectors on a connection of their own, ahead of the
    upsert: what it stores is what indexing the stored rows gives."""
    from annotator.issues.search import index_pending_issues

    computed = vectors_computed
    fence = "```"
    bodies = [
        f"Hangs at step {n}.\n{fence}\nnode-{n} NCCL WARN timeout\nRuntimeError: NCCL error\n{fence}"
        for n in range(1, 1201)
    ]
    run([rest_issue(n, body=body) for n, body in enumerate(bodies, 1)])

    imported = dict(Issue.objects.values_list("pk", "search_vector"))
    Issue.objects.update(search_vector=None)
    index_pending_issues()
    assert dict(Issue.objects.values_list("pk", "search_vector")) == imported
    assert computed == [1000, 200] and len(imported) == 1200
    assert Issue.objects.filter(search_vector="nccl & runtimeerror").count() == 1200
    assert _other_sessions() == 0


@pytest.mark.postgresql_only
def test_a_reimport_stops_computing_vectors_once_a_batch_wrote_nothing(
    vectors_computed, monkeypatch
):
    from annotator.issues import services

    computed = vectors_computed
    monkeypatch.setattr(services, "BATCH_SIZE", 100)
    records = [rest_issue(n) for n in range(1, 1201)]
    run(records)
    assert len(computed) == 12

    computed.clear()
    assert str(run(records)) == "created 0, updated 0, unchanged 1200, skipped 0"

    # Those computed before the first batch was found unchanged: the one the writer holds,
    # the ones queued ahead of it and the one in the making, at most.
    assert 1 <= len(computed) <= services.PARSED_AHEAD + 2


def test_progress_is_reported_after_each_batch_in_file_order():
    seen = []

    run([rest_issue(n) for n in range(1, 2501)], on_progress=lambda p: seen.append(p.records))

    assert seen == [1000, 2000, 2500]
    assert Issue.objects.count() == 2500


def test_renamed_repository_lands_in_the_current_one():
    run([rest_issue(1, repo="microsoft/DeepSpeed")])
    run([rest_issue(2, repo="deepspeedai/DeepSpeed")])

    repository = Repository.objects.get()
    assert repository.full_name == "deepspeedai/DeepSpeed"
    assert list(repository.issues.values_list("number", flat=True).order_by("number")) == [1, 2]
    assert RepositoryAlias.objects.get().owner == "microsoft"


def test_repository_lookup_ignores_case():
    run([rest_issue(1, repo="HPCAITECH/colossalai")])
    run([rest_issue(2, repo="hpcaitech/ColossalAI")])

    assert Repository.objects.count() == 1


def test_comments_on_unknown_issues_are_skipped_and_named():
    run([rest_issue(1)])
    comments = [
        {
            "issue_url": "https://api.github.com/repos/hpcaitech/ColossalAI/issues/1",
            "user": {"login": "a"},
            "body": "seen",
            "created_at": "2023-01-05T00:00:00Z",
        },
        {
            "issue_url": "https://api.github.com/repos/hpcaitech/ColossalAI/issues/99",
            "user": {"login": "b"},
            "body": "orphan",
            "created_at": "2023-01-05T00:00:00Z",
        },
    ]

    counts = run(comments)

    assert str(counts) == "created 1, updated 0, unchanged 0, skipped 1"
    assert "hpcaitech/ColossalAI#99" in counts.skipped_reasons[0]


def test_comments_without_ids_reimport_idempotently():
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())
    out = io.StringIO()

    call_command("import_issues", str(COMMENTS), stdout=out)

    assert out.getvalue().strip() == "created 0, updated 0, unchanged 39, skipped 1"


def test_search_finds_words_in_comments_only():
    run([rest_issue(1, body="nothing here"), rest_issue(2, body="nothing either")])
    run(
        [
            {
                "id": 5,
                "issue_url": "https://api.github.com/repos/hpcaitech/ColossalAI/issues/2",
                "user": {"login": "a"},
                "body": "try NCCL_P2P_DISABLE=1 with the pipeline",
                "created_at": "2023-01-05T00:00:00Z",
            }
        ]
    )

    found = Issue.objects.search("pipeline")

    assert [issue.number for issue in found] == [2]
    assert Issue.objects.get(number=2).comments_count == 1


def test_records_without_repository_need_the_repo_option():
    gh = [{"number": 3, "title": "t", "state": "OPEN", "author": {"login": "x"}}]

    with pytest.raises(ImportFormatError, match="field 'repository'"):
        run(gh, format="gh")
    counts = run(gh, format="gh", repository="NVIDIA/Megatron-LM")

    assert counts.created == 1
    assert Issue.objects.get().repository.full_name == "NVIDIA/Megatron-LM"


def test_command_prints_the_counts_line():
    out = io.StringIO()

    call_command("import_issues", str(ISSUES), stdout=out)

    assert out.getvalue().strip() == "created 36, updated 0, unchanged 0, skipped 0"


def test_command_on_bad_input_fails_naming_record_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([rest_issue(1), {**rest_issue(2), "number": "two"}]))

    with pytest.raises(CommandError) as error:
        call_command("import_issues", str(bad), stdout=io.StringIO())

    assert "record 2" in str(error.value)
    assert "'number'" in str(error.value)
    assert "nothing was imported" in str(error.value)
    assert Issue.objects.count() == 0


def test_the_collector_is_eased_during_an_import_and_put_back_after(monkeypatch):
    """The import keeps the objects alive before it out of the collector's view and collects
    less often while it runs (each full collection walked them all), and puts both back when
    it ends, however it ends; a process that froze its own start-up objects (annotator/wsgi.py)
    keeps them frozen."""
    import gc

    from annotator.issues.writer import RecordWriter

    during: list[tuple[int, int]] = []
    write = RecordWriter.write

    def spy(self, batch):  # type: ignore[no-untyped-def]
        during.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        write(self, batch)

    monkeypatch.setattr(RecordWriter, "write", spy)
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    run([rest_issue(1)])
    with pytest.raises(ImportFormatError):
        run([rest_issue(2), rest_issue(2, title="changed")])
    assert len(during) == 2 and during[0][0] > 1000 and during[0][1] == 20_000
    assert (gc.get_freeze_count(), gc.get_threshold()) == (0, before)

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run([rest_issue(3)])
        assert gc.get_freeze_count() >= frozen and gc.get_threshold() == before
    finally:
        gc.unfreeze()
