"""The pure parsing core of the issue importer: formats, detection, records and every bad input."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

import pytest

from annotator.issues.formats import (
    FORMATS,
    CommentRecord,
    ImportFormatError,
    IssueRecord,
    detect_format,
    iter_records,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO_DATA = ROOT / "annotator" / "issues" / "demo_data"
REAL_ISSUES = DEMO_DATA / "colossalai_issues.json"
REAL_COMMENTS = DEMO_DATA / "colossalai_comments.json"
T = TypeVar("T", IssueRecord, CommentRecord)
API = "https://api.github.com/repos/octo/widgets"
WEB = "https://github.com/octo/widgets"


def parse(data: bytes, **options: Any) -> list[IssueRecord | CommentRecord]:
    return list(iter_records(io.BytesIO(data), **options))


def parse_error(data: bytes, **options: Any) -> ImportFormatError:
    with pytest.raises(ImportFormatError) as caught:
        parse(data, **options)
    return caught.value


def rest_issue(number: int = 1, **fields: Any) -> dict[str, Any]:
    issue = {
        "url": f"{API}/issues/{number}",
        "repository_url": API,
        "html_url": f"{WEB}/issues/{number}",
        "number": number,
        "title": f"Issue {number}",
        "state": "open",
        "body": "text",
    }
    return issue | fields


def gh_issue(number: int = 1, **fields: Any) -> dict[str, Any]:
    issue = {
        "number": number,
        "title": f"Issue {number}",
        "body": "text",
        "state": "OPEN",
        "stateReason": "",
        "labels": [],
        "author": {"login": "alice"},
        "createdAt": "2023-01-02T03:04:05Z",
        "updatedAt": "2023-01-03T03:04:05Z",
        "closedAt": None,
        "url": f"{WEB}/issues/{number}",
        "comments": [],
    }
    return issue | fields


def rest_comment(number: int = 1, **fields: Any) -> dict[str, Any]:
    comment = {
        "issue_url": f"{API}/issues/{number}",
        "user": {"login": "bob"},
        "body": "a comment",
        "created_at": "2023-01-04T00:00:00Z",
    }
    return comment | fields


def read_real(path: Path, kind: type[T]) -> list[T]:
    with path.open("rb") as stream:
        records = list(iter_records(stream, filename=path.name))
    assert all(isinstance(record, kind) for record in records)
    return [record for record in records if isinstance(record, kind)]


def array(*objects: Any) -> bytes:
    return json.dumps(list(objects)).encode()


def lines(*objects: Any) -> bytes:
    return b"".join(json.dumps(obj).encode() + b"\n" for obj in objects)


class LazyStream:
    """A non-seekable stream that makes its bytes only as they are read, in short reads."""

    def __init__(self, chunks: Iterator[bytes], read_size: int | None = None) -> None:
        self._chunks = chunks
        self._buffer = bytearray()
        self._read_size = read_size

    def read(self, size: int = -1) -> bytes:
        size = min(size, self._read_size or size) if size >= 0 else (self._read_size or -1)
        while (size < 0 or len(self._buffer) < size) and (chunk := next(self._chunks, b"")):
            self._buffer += chunk
        size = len(self._buffer) if size < 0 else size
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


def lazy(chunks: Iterator[bytes], read_size: int | None = None) -> BinaryIO:
    return cast(BinaryIO, LazyStream(chunks, read_size))


def generated_array(count: int, body_size: int = 500) -> Iterator[bytes]:
    yield b"["
    for number in range(1, count + 1):
        issue = rest_issue(number, body="x" * body_size, labels=[{"name": "bug"}])
        yield (b"," if number > 1 else b"") + json.dumps(issue).encode()
    yield b"]"


# --- the real Colossal-AI data ----------------------------------------------------------------
def test_real_issues_parse_into_36_issues_of_which_4_are_pull_requests() -> None:
    records = read_real(REAL_ISSUES, IssueRecord)
    assert len(records) == 36
    pulls = sorted(record.number for record in records if record.is_pull_request)
    assert pulls == [1320, 2178, 2222, 6377]
    assert [record.index for record in records] == list(range(1, 37))


def test_real_issues_without_a_body_get_an_empty_body() -> None:
    records = read_real(REAL_ISSUES, IssueRecord)
    empty = sorted(record.number for record in records if record.body == "")
    assert empty == [1126, 1320, 2178, 2183, 2222, 3140, 4311, 4353, 4971, 6066]
    assert not any("\r" in record.body for record in records)


def test_real_issues_name_their_repository_state_and_page() -> None:
    records = read_real(REAL_ISSUES, IssueRecord)
    assert {record.repository for record in records} == {"hpcaitech/ColossalAI"}
    assert sum(record.state == "closed" for record in records) == 21
    first = records[0]
    assert (first.number, first.github_id, first.labels) == (124, None, ())
    assert first.html_url == "https://github.com/hpcaitech/ColossalAI/issues/124"
    assert first.raw["title"] == first.title


def test_real_files_are_detected_as_github_rest_arrays() -> None:
    for path in (REAL_ISSUES, REAL_COMMENTS):
        assert detect_format(path.read_bytes()[:4096], path.name) == "github"


def test_real_comments_parse_into_40_comments_without_ids() -> None:
    issue_numbers = {issue.number for issue in read_real(REAL_ISSUES, IssueRecord)}
    comments = read_real(REAL_COMMENTS, CommentRecord)
    assert len(comments) == 40
    assert {comment.issue_number for comment in comments} <= issue_numbers
    first = comments[0]
    assert (first.repository, first.issue_number, first.author) == (
        "hpcaitech/ColossalAI",
        774,
        "FrankLeeeee",
    )
    assert first.created_at == datetime(2022, 4, 24, tzinfo=UTC)
    assert first.github_id is None and first.identity().startswith("h:")


def test_real_comments_repeated_verbatim_share_one_identity() -> None:
    # Issue 3140 holds the same comment twice (same author, day and text); without ids they
    # cannot be told apart, so 40 comments give 39 identities and the service skips one.
    comments = read_real(REAL_COMMENTS, CommentRecord)
    assert len({(c.issue_number, c.identity()) for c in comments}) == 39


# --- REST issues ------------------------------------------------------------------------------
def test_rest_issue_maps_every_field() -> None:
    issue = rest_issue(
        812,
        id=99001,
        state="closed",
        state_reason="completed",
        labels=[{"name": "bug", "color": "red"}, "help wanted"],
        user={"login": "alice", "id": 3},
        created_at="2022-04-24T00:00:00Z",
        updated_at="2022-04-25T10:30:00+02:00",
        closed_at="2022-04-26T00:00:00Z",
        comments=7,
        pull_request={"url": f"{API}/pulls/812"},
    )
    [record] = parse(array(issue), format="github")
    assert record == IssueRecord(
        index=1,
        repository="octo/widgets",
        number=812,
        github_id=99001,
        title="Issue 812",
        body="text",
        state="closed",
        state_reason="completed",
        labels=("bug", "help wanted"),
        author="alice",
        created_at=datetime(2022, 4, 24, tzinfo=UTC),
        updated_at=datetime(2022, 4, 25, 8, 30, tzinfo=UTC),
        closed_at=datetime(2022, 4, 26, tzinfo=UTC),
        is_pull_request=True,
        html_url=f"{WEB}/issues/812",
        comments_count=7,
        raw=issue,
    )


def test_rest_issue_with_null_fields_gets_empty_defaults() -> None:
    issue = rest_issue(body=None, user=None, labels=None, state_reason=None, pull_request=None)
    [record] = parse(array(issue))
    assert isinstance(record, IssueRecord)
    assert (record.body, record.author, record.labels, record.state_reason) == ("", "", (), "")
    assert record.is_pull_request is False and record.comments_count == 0


def test_crlf_and_lone_cr_in_bodies_become_newlines() -> None:
    issue = rest_issue(body="one\r\ntwo\rthree\n")
    comment = rest_comment(body="a\r\nb")
    records = parse(lines(issue, comment), format="jsonl")
    assert [record.body for record in records] == ["one\ntwo\nthree\n", "a\nb"]


@pytest.mark.parametrize(
    ("fields", "repository"),
    [
        ({}, "octo/widgets"),
        ({"repository_url": None}, "octo/widgets"),
        ({"repository_url": None, "url": None}, "octo/widgets"),
        ({"repository_url": "https://ghe.example.com/api/v3/repos/corp/tool"}, "corp/tool"),
        ({"repository_url": None, "url": None, "html_url": None}, None),
    ],
)
def test_repository_comes_from_repository_url_then_url_then_html_url(
    fields: dict[str, Any], repository: str | None
) -> None:
    [record] = parse(array(rest_issue(**fields)), format="github")
    assert record.repository == repository


def test_default_repository_fills_records_that_name_none_and_never_overrides() -> None:
    data = array(rest_issue(1), rest_issue(2, repository_url=None, url=None, html_url=None))
    records = parse(data, default_repository="other/place")
    assert [record.repository for record in records] == ["octo/widgets", "other/place"]


def test_dates_are_converted_to_utc_and_naive_dates_taken_as_utc() -> None:
    issue = rest_issue(created_at="2022-01-01T09:00:00+09:00", updated_at="2022-01-02T00:00:00")
    [record] = parse(array(issue))
    assert isinstance(record, IssueRecord)
    assert record.created_at == datetime(2022, 1, 1, 0, 0, tzinfo=UTC)
    assert record.updated_at == datetime(2022, 1, 2, tzinfo=UTC)
    assert record.created_at.tzinfo is UTC


def test_records_come_out_before_a_later_bad_record_is_met() -> None:
    records = iter_records(io.BytesIO(array(rest_issue(1), rest_issue(2), {"title": "x"})))
    assert [record.index for record in (next(records), next(records))] == [1, 2]
    with pytest.raises(ImportFormatError, match="record 3: field 'number': missing"):
        next(records)


# --- gh issue list --json ---------------------------------------------------------------------
def test_gh_output_is_detected_and_mapped() -> None:
    issue = gh_issue(
        7,
        state="CLOSED",
        stateReason="NOT_PLANNED",
        labels=[{"name": "bug", "id": "LA_1"}],
        closedAt="2023-02-01T00:00:00Z",
        comments=[{"author": {"login": "x"}, "body": "hi"}, {"body": "there"}],
        id="I_kwDOabc",
    )
    [record] = parse(array(issue))
    assert isinstance(record, IssueRecord)
    assert (record.repository, record.number, record.github_id) == ("octo/widgets", 7, None)
    assert (record.state, record.state_reason, record.labels) == ("closed", "not_planned", ("bug",))
    assert (record.author, record.comments_count, record.html_url) == (
        "alice",
        2,
        f"{WEB}/issues/7",
    )
    assert record.created_at == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert record.closed_at == datetime(2023, 2, 1, tzinfo=UTC)


def test_gh_objects_in_a_github_array_are_read_as_gh() -> None:
    # A head that ends before any gh key leaves detection at "github"; the data still counts.
    [record] = parse(array(gh_issue(4)), format="github")
    assert isinstance(record, IssueRecord)
    assert (record.author, record.created_at) == (
        "alice",
        datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("fields", "state", "is_pull_request"),
    [
        ({}, "open", False),
        ({"state": "MERGED", "url": f"{WEB}/pull/7"}, "closed", True),
        ({"isPullRequest": True}, "open", True),
        ({"isPullRequest": False, "url": f"{WEB}/pull/7"}, "open", False),
    ],
)
def test_gh_pull_requests_are_recognised_by_flag_or_url(
    fields: dict[str, Any], state: str, is_pull_request: bool
) -> None:
    [record] = parse(array(gh_issue(7, **fields)), format="gh")
    assert isinstance(record, IssueRecord)
    assert (record.state, record.is_pull_request) == (state, is_pull_request)


# --- comments ---------------------------------------------------------------------------------
def test_rest_comment_maps_its_issue_and_fields() -> None:
    comment = rest_comment(42, id=555, updated_at="2023-01-05T00:00:00Z")
    [record] = parse(array(comment), format="github")
    assert record == CommentRecord(
        index=1,
        repository="octo/widgets",
        issue_number=42,
        github_id=555,
        author="bob",
        body="a comment",
        created_at=datetime(2023, 1, 4, tzinfo=UTC),
        updated_at=datetime(2023, 1, 5, tzinfo=UTC),
        raw=comment,
    )
    assert record.identity() == "id:555"


def test_comment_identity_without_id_depends_on_author_date_and_body_only() -> None:
    first, same_elsewhere, edited, other_author = parse(
        array(
            rest_comment(1),
            rest_comment(2, html_url="https://github.com/octo/widgets/issues/2#c"),
            rest_comment(1, body="a comment!"),
            rest_comment(1, user={"login": "carol"}),
        )
    )
    assert isinstance(first, CommentRecord) and isinstance(same_elsewhere, CommentRecord)
    assert first.identity() == same_elsewhere.identity()
    assert first.identity().startswith("h:") and len(first.identity()) == 42
    assert isinstance(edited, CommentRecord) and isinstance(other_author, CommentRecord)
    others = {edited.identity(), other_author.identity()}
    assert first.identity() not in others and len(others) == 2


# --- content hash -----------------------------------------------------------------------------
def test_content_hash_is_pinned_and_ignores_index_and_raw() -> None:
    # Stored hashes tell unchanged re-imports from updates: changing this value makes every
    # stored issue look updated on its next import.
    data = array(rest_issue(5, id=1, created_at="2022-01-01T00:00:00Z"))
    [record] = parse(data)
    _, again = parse(lines(rest_issue(9), rest_issue(5, id=1, created_at="2022-01-01T00:00Z", x=1)))
    assert (record.index, again.index) == (1, 2) and record.raw != again.raw
    assert record.content_hash() == again.content_hash()
    assert (
        record.content_hash() == "369b64b46e67eb17edee92da1c20a25c238c57ef8be3954a32d5433cfbe8379f"
    )


@pytest.mark.parametrize(
    "change",
    [
        {"title": "other"},
        {"body": "other"},
        {"labels": ["bug"]},
        {"state": "closed"},
        {"user": {"login": "z"}},
        {"closed_at": "2022-01-01T00:00:00Z"},
        {"comments": 3},
        {"id": 2},
        {"pull_request": {}},
    ],
)
def test_content_hash_changes_with_any_field(change: dict[str, Any]) -> None:
    [record] = parse(array(rest_issue(5, id=1)))
    [changed] = parse(array(rest_issue(5, id=1) | change))
    assert record.content_hash() != changed.content_hash()


def test_comment_content_hash_changes_with_the_body() -> None:
    first, second = parse(array(rest_comment(1), rest_comment(1, body="edited")))
    assert first.content_hash() != second.content_hash()


# --- JSON Lines -------------------------------------------------------------------------------
def test_jsonl_mixes_issue_comment_and_gh_lines_and_skips_blank_lines() -> None:
    data = lines(rest_issue(1)) + b"\n  \r\n" + lines(rest_comment(1), gh_issue(2))
    records = parse(data)
    assert [type(record).__name__ for record in records] == [
        "IssueRecord",
        "CommentRecord",
        "IssueRecord",
    ]
    assert [record.index for record in records] == [1, 4, 5]
    assert records[2].author == "alice"  # read as gh: author.login


# --- CSV --------------------------------------------------------------------------------------
CSV_HEADER = (
    "repository,number,title,body,state,state_reason,labels,author,created_at,updated_at,"
    "closed_at,is_pull_request,html_url,comments_count,github_id,notes\r\n"
)


def test_csv_maps_every_documented_column_and_keeps_unknown_ones_in_raw() -> None:
    row = (
        'octo/widgets,12,Crash on start,"line 1\r\nline 2",closed,completed, bug ; ;perf,'
        "alice,2022-04-24T00:00:00Z,2022-04-25,2022-04-26 12:00,yes,"
        f"{WEB}/issues/12,4,1234,my note\r\n"
    )
    [record] = parse((CSV_HEADER + row).encode())
    assert isinstance(record, IssueRecord)
    assert (record.repository, record.number, record.github_id) == ("octo/widgets", 12, 1234)
    assert (record.title, record.body) == ("Crash on start", "line 1\nline 2")
    assert (record.state, record.state_reason, record.labels) == (
        "closed",
        "completed",
        ("bug", "perf"),
    )
    assert (record.author, record.is_pull_request, record.comments_count) == ("alice", True, 4)
    assert record.updated_at == datetime(2022, 4, 25, tzinfo=UTC)
    assert record.closed_at == datetime(2022, 4, 26, 12, tzinfo=UTC)
    assert record.raw["notes"] == "my note" and record.raw["number"] == "12"


def test_csv_needs_only_number_and_title_and_pads_short_rows() -> None:
    data = "\ufeffTitle, Number ,html_url\n First ,1\nSecond,2,https://github.com/o/r/issues/2\n"
    first, second = parse(data.encode(), filename="issues.txt")
    assert isinstance(first, IssueRecord) and isinstance(second, IssueRecord)
    assert (first.title, first.number, first.state, first.repository) == ("First", 1, "open", None)
    assert (first.is_pull_request, first.comments_count, first.github_id) == (False, 0, None)
    assert (second.repository, second.index) == ("o/r", 2)


def test_csv_is_chosen_by_file_name_even_when_it_starts_like_json() -> None:
    assert detect_format(b"[number],title\n", "export.CSV") == "csv"


# --- format detection -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (array(rest_issue()), "github"),
        (array(rest_comment()), "github"),
        (b"\xef\xbb\xbf \n" + array(rest_issue()), "github"),
        (b"[]", "github"),
        (b"[1, 2]", "github"),
        (array(gh_issue()), "gh"),
        (array({"number": 1, "title": "t", "createdAt": "2022-01-01"}), "gh"),
        (array({"number": 1, "author": {"login": "a"}}), "gh"),
        (array({"number": 1, "state": "OPEN"}), "gh"),
        (array({"number": 1, "url": f"{WEB}/issues/1"}), "gh"),
        (array({"number": 1, "url": f"{API}/issues/1"}), "github"),
        # gh prints keys sorted, so "author" comes before a body longer than the head
        (json.dumps([gh_issue(body="x" * 70_000)], sort_keys=True)[:65536].encode(), "gh"),
        (lines(rest_issue()), "jsonl"),
        (b"number,title\n1,x\n", "csv"),
        (b"hello", "csv"),
    ],
)
def test_detect_format(head: bytes, expected: str) -> None:
    assert detect_format(head) == expected


@pytest.mark.parametrize("head", [b"", b" \n\t\r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf  \n"])
def test_detect_format_refuses_an_empty_head(head: bytes) -> None:
    with pytest.raises(ImportFormatError, match=r"^file is empty$"):
        detect_format(head)


def test_auto_detection_reads_a_non_seekable_stream_in_one_byte_reads() -> None:
    data = array(gh_issue(1), gh_issue(2))
    records = list(iter_records(lazy(iter([data]), read_size=1)))
    assert [record.title for record in records if isinstance(record, IssueRecord)] == [
        "Issue 1",
        "Issue 2",
    ]
    assert records[0].created_at == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)  # read as gh


# --- bad input --------------------------------------------------------------------------------
def issue_with(**fields: Any) -> bytes:
    return array(rest_issue(3) | fields)


TRUNCATED = array(rest_issue(1), rest_issue(2), rest_issue(3))[:-30]

BAD_INPUT = [
    # whole-file faults
    (b"", "auto", "file is empty"),
    (b"  \n\t \n", "auto", "file is empty"),
    (b"\xef\xbb\xbf\n", "csv", "file is empty"),
    (b"hello", "github", "not valid JSON: expected an array starting with '[', got 'h'"),
    (b"hello", "gh", "not valid JSON: expected an array starting with '[', got 'h'"),
    (
        TRUNCATED,
        "auto",
        "record 3: JSON is truncated: the file ends before this record is complete",
    ),
    (
        b"[" + json.dumps(rest_issue()).encode(),
        "github",
        "record 2: JSON is truncated: the file ends before this record is complete",
    ),
    (
        b'[{"number": 1, "title": "a"}, nope]',
        "github",
        "record 2: not valid JSON (Expecting value at byte 30)",
    ),
    (
        b'[{"number": 1, "title": "a"} {"number": 2}]',
        "github",
        "record 2: not valid JSON (expected ',' or ']' after the record, at byte 29)",
    ),
    (
        b'[{"number": 1, "title": "a"},]',
        "github",
        "record 2: not valid JSON (Expecting value at byte 29)",
    ),
    (
        b'[{"number": 1, "title": "a", "score": NaN}]',
        "github",
        "record 1: not valid JSON (NaN is not allowed)",
    ),
    (
        b'[{"number": 1, "title": "a"}, {"number": 2, "title": "b", "score": 1e400}]',
        "github",
        "record 2: not valid JSON (the number 1e400 is out of range)",
    ),
    (
        b'{"number": 1, "title": "a", "score": -Infinity}\n',
        "jsonl",
        "line 1: not valid JSON (-Infinity is not allowed)",
    ),
    (
        array(rest_issue()) + b" []",
        "github",
        "not valid JSON: text after the end of the array (after record 1)",
    ),
    (
        b'{"items": [{"number": 1}]}',
        "github",
        "expected a JSON array at the top level, found an object",
    ),
    (
        b'{"items": [{"number": 1}]}',
        "gh",
        "expected a JSON array at the top level, found an object",
    ),
    (b"[1, 2]", "auto", "record 1: expected an object, got number 1"),
    (b'["x"]', "github", "record 1: expected an object, got string 'x'"),
    (b'[{"title": "\xff"}]', "auto", "not valid UTF-8 at byte 12"),
    (b'[{"title": "\xe2\x82"}]', "auto", "not valid UTF-8 at byte 12"),
    (b'[{"title": "ok\xe2\x82', "auto", "not valid UTF-8 at byte 14"),
    (b"number,title\n1,caf\xe9\n", "auto", "not valid UTF-8 at byte 18"),
    (b'{"number": 1, "title": "\xc0"}\n', "jsonl", "not valid UTF-8 at byte 24"),
    (b"[]", "xml", "unknown format 'xml'; expected auto, github, jsonl, gh, csv"),
    # number
    (array({"title": "t"}), "github", "record 1: field 'number': missing"),
    (
        issue_with(number="12a"),
        "github",
        "record 1: field 'number': expected an integer, got string '12a'",
    ),
    (
        issue_with(number="12"),
        "github",
        "record 1 (number 12): field 'number': expected an integer, got string '12'",
    ),
    (
        issue_with(number=1.5),
        "github",
        "record 1: field 'number': expected an integer, got number 1.5",
    ),
    (issue_with(number=True), "github", "record 1: field 'number': expected an integer, got true"),
    (
        issue_with(number=None),
        "github",
        "record 1: field 'number': expected a positive integer, got null",
    ),
    (
        issue_with(number=0),
        "github",
        "record 1 (number 0): field 'number': expected a positive integer, got number 0",
    ),
    (
        array(gh_issue(number=False)),
        "gh",
        "record 1: field 'number': expected an integer, got false",
    ),
    # title
    (array({"number": 3}), "github", "record 1 (number 3): field 'title': missing"),
    (issue_with(title=None), "github", "record 1 (number 3): field 'title': missing"),
    (issue_with(title=""), "github", "record 1 (number 3): field 'title': empty"),
    (issue_with(title="  \n"), "github", "record 1 (number 3): field 'title': empty"),
    (
        issue_with(title=5),
        "github",
        "record 1 (number 3): field 'title': expected a string, got number 5",
    ),
    # dates
    (
        issue_with(created_at="2022-13-40"),
        "github",
        "record 1 (number 3): field 'created_at': invalid date '2022-13-40'",
    ),
    (
        issue_with(closed_at="yesterday"),
        "github",
        "record 1 (number 3): field 'closed_at': invalid date 'yesterday'",
    ),
    (
        issue_with(updated_at=20220101),
        "github",
        "record 1 (number 3): field 'updated_at': invalid date '20220101'",
    ),
    (
        array(gh_issue(3, createdAt="2022-02-30T00:00:00Z")),
        "gh",
        "record 1 (number 3): field 'createdAt': invalid date '2022-02-30T00:00:00Z'",
    ),
    # other fields
    (
        issue_with(labels="bug"),
        "github",
        "record 1 (number 3): field 'labels': expected a list, got string 'bug'",
    ),
    (
        issue_with(labels=["bug", 7]),
        "github",
        "record 1 (number 3): field 'labels': label 2 is number 7, not a name or an object with a 'name'",
    ),
    (
        issue_with(labels=[{"color": "red"}]),
        "github",
        "record 1 (number 3): field 'labels': label 1 is an object, not a name or an object with a 'name'",
    ),
    (
        issue_with(user="alice"),
        "github",
        "record 1 (number 3): field 'user': expected an object with a 'login', got string 'alice'",
    ),
    (
        issue_with(body=["x"]),
        "github",
        "record 1 (number 3): field 'body': expected a string, got an array",
    ),
    (
        issue_with(state="pending"),
        "github",
        "record 1 (number 3): field 'state': expected open or closed, got string 'pending'",
    ),
    (
        issue_with(id="abc"),
        "github",
        "record 1 (number 3): field 'id': expected an integer, got string 'abc'",
    ),
    # comments
    (array(rest_comment(issue_url=None)), "github", "record 1: field 'issue_url': missing"),
    (array(rest_comment(issue_url="")), "github", "record 1: field 'issue_url': missing"),
    (
        array(rest_comment(issue_url=f"{API}/issues")),
        "github",
        f"record 1: field 'issue_url': no issue number in '{API}/issues'",
    ),
    (
        array(rest_comment(issue_url="see #5")),
        "github",
        "record 1: field 'issue_url': no issue number in 'see #5'",
    ),
    (
        array(rest_comment(1), {"user": {"login": "x"}, "body": "lost its issue_url"}),
        "github",
        "record 2: field 'issue_url': missing",
    ),
    (
        array(rest_comment(created_at="soon")),
        "github",
        "record 1: field 'created_at': invalid date 'soon'",
    ),
    # JSON Lines
    (
        lines(rest_issue(1)) + b"\n{bad\n",
        "auto",
        "line 3: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
    ),
    (b'{"number": 1, "title": NaN}\n', "jsonl", "line 1: not valid JSON (NaN is not allowed)"),
    (lines(rest_issue(1), [1]), "jsonl", "line 2: expected an object, got an array"),
    (lines(rest_issue(1), {"title": "x"}), "jsonl", "line 2: field 'number': missing"),
    (
        lines(rest_issue(1), rest_issue(2, labels="x")),
        "jsonl",
        "line 2 (number 2): field 'labels': expected a list, got string 'x'",
    ),
    # CSV
    (b"id,body\n1,x\n", "auto", "CSV is missing required columns: number, title"),
    (b"number,body\n1,x\n", "csv", "CSV is missing required columns: title"),
    (b"number,title,Title\n1,x,y\n", "csv", "CSV has repeated columns: title"),
    (b"number,title\n12a,x\n", "csv", "record 1: field 'number': expected an integer, got '12a'"),
    (b"number,title\n1.5,x\n", "csv", "record 1: field 'number': expected an integer, got '1.5'"),
    (b"number,title\n1,x\n,y\n", "csv", "record 2: field 'number': missing"),
    (b"number,title\n4, \n", "csv", "record 1 (number 4): field 'title': missing"),
    (
        b"number,title,created_at\n4,x,2022-13-40\n",
        "csv",
        "record 1 (number 4): field 'created_at': invalid date '2022-13-40'",
    ),
    (
        b"number,title,is_pull_request\n4,x,maybe\n",
        "csv",
        "record 1 (number 4): field 'is_pull_request': expected true/false, 1/0 or yes/no, got 'maybe'",
    ),
    (
        b"number,title,repository\n4,x,widgets\n",
        "csv",
        "record 1 (number 4): field 'repository': expected owner/name, got 'widgets'",
    ),
    (
        b"number,title,comments_count\n4,x,many\n",
        "csv",
        "record 1 (number 4): field 'comments_count': expected an integer, got 'many'",
    ),
    (
        b"number,title,state\n4,x,done\n",
        "csv",
        "record 1 (number 4): field 'state': expected open or closed, got string 'done'",
    ),
    (b"number,title\n1,x\n2,y,z\n", "csv", "record 2: row has 3 fields but the header has 2"),
    (
        b'number,title\n1,"unclosed\n2,y\n',
        "csv",
        "record 1: not valid CSV (unexpected end of data)",
    ),
    (b'number,title\n1,"a"b\n', "csv", "record 1: not valid CSV (',' expected after '\"')"),
]


@pytest.mark.parametrize(("data", "format", "message"), BAD_INPUT)
def test_bad_input_is_refused_with_a_message_naming_record_and_field(
    data: bytes, format: str, message: str
) -> None:
    assert str(parse_error(data, format=format)) == message


# Strings jsonb cannot hold, in the raw object only or in a field the record keeps too.
UNSTORABLE = [
    ({"milestone": {"title": "v1\x00"}}, "milestone.title", "holds a NUL character (\\u0000)"),
    ({"assignees": [{"login": "a"}, {"login": "\udc00"}]}, "assignees[1].login", "'\\udc00'"),
    ({"title": "broken \ud800 pair"}, "title", "an unpaired surrogate ('\\ud800')"),
    ({"reactions": {"\ud83d": 1}}, "reactions.\ud83d", "its key holds an unpaired surrogate"),
]


@pytest.mark.parametrize(("fields", "field", "detail"), UNSTORABLE)
@pytest.mark.parametrize("make", [array, lines], ids=["github", "jsonl"])
def test_a_string_jsonb_cannot_hold_is_refused_naming_record_and_key(
    make: Any, fields: dict[str, Any], field: str, detail: str
) -> None:
    """A record's raw object is stored as the JSON text the file holds, so what jsonb refuses
    there is refused here, naming the key; it used to fail in the database (or, for an array,
    turn a lone surrogate into "?")."""
    error = parse_error(make(rest_issue(1), rest_issue(2, **fields)))
    where = "record 2" if make is array else "line 2"
    assert (error.record, error.field) == (f"{where} (number 2)", field)
    assert detail in error.detail


def test_escapes_that_only_look_like_nul_or_a_surrogate_are_kept() -> None:
    # An escaped backslash before "u0000", and a surrogate pair (an emoji, as Python writes it).
    text = r'[{"number": 1, "title": "\\u0000 \\ud800", "body": "\ud83d\udd25", "url": "u"}]'
    (record,) = parse(text.encode())
    assert isinstance(record, IssueRecord)
    assert (record.title, record.body) == ("\\u0000 \\ud800", "🔥")
    assert record.raw_json == text.encode()[1:-1]


def test_errors_carry_the_record_and_field_apart_from_the_message() -> None:
    error = parse_error(array(rest_issue(1), rest_issue(812, created_at="2022-13-40")))
    assert (error.record, error.field) == ("record 2 (number 812)", "created_at")
    assert error.detail == "invalid date '2022-13-40'"
    assert isinstance(error, ValueError)


def test_a_message_given_with_its_prefix_is_not_prefixed_twice() -> None:
    error = ImportFormatError(
        "record 4: field 'repository': missing", record="record 4", field="repository"
    )
    assert str(error) == "record 4: field 'repository': missing"
    assert (
        str(ImportFormatError("missing", record="line 2", field="number"))
        == "line 2: field 'number': missing"
    )


def test_bad_default_repository_is_refused() -> None:
    assert str(parse_error(array(rest_issue()), default_repository="widgets")) == (
        "repository must be owner/name, got 'widgets'"
    )


def test_an_array_cut_anywhere_is_truncated_at_the_record_it_cuts() -> None:
    """Every prefix of an array: the records wholly before the cut are read, then the one it
    cuts (or the next, where it falls between two) is named as truncated, wherever the cut falls
    (in a key, a string, an escape, a number, a literal, between elements)."""
    objects = [
        rest_issue(1, body='a "quoted" \\ back \u00e9 \u4e2d', locked=True, milestone=None),
        rest_issue(22, comments=1.25e-3, labels=[{"name": "bug"}], locked=False),
        rest_issue(3, body="\U0001f525 \t\n"),
    ]
    data = json.dumps(objects, indent=1).encode()
    ends = [
        data.index(b"\n }", data.index(f'"number": {o["number"]}'.encode())) + 3 for o in objects
    ]
    for cut in range(1, len(data)):
        records: list[int] = []
        with pytest.raises(ImportFormatError) as caught:
            for record in iter_records(io.BytesIO(data[:cut])):
                records.append(record.index)
        done = sum(end <= cut for end in ends)
        assert records == list(range(1, done + 1)), cut
        assert caught.value.record == f"record {done + 1}", cut
        assert "JSON is truncated" in caught.value.detail, cut


def test_truncated_array_names_the_record_reached() -> None:
    data = array(*(rest_issue(n) for n in range(1, 11)))
    cut = data.index(b'"number": 7') + 5
    records: list[int] = []
    with pytest.raises(ImportFormatError) as caught:
        for record in iter_records(io.BytesIO(data[:cut])):
            records.append(record.index)
    assert records == [1, 2, 3, 4, 5, 6]
    assert caught.value.record == "record 7" and "truncated" in str(caught.value)


@pytest.mark.parametrize(
    "data",
    [
        array(rest_issue(1, labels=[{"name": "é"}]), rest_comment(1), gh_issue(2)),
        lines(rest_issue(1, body="ü\r\n"), rest_comment(1), gh_issue(2)),
        (CSV_HEADER + 'o/r,1,t,"é\r\nx",open,,a;b,al,2022-01-01,,,no,,1,2,n\r\n').encode(),
    ],
    ids=["github", "jsonl", "csv"],
)
def test_no_exception_but_import_format_error_escapes_from_cut_or_damaged_files(
    data: bytes,
) -> None:
    damaged = [data[:cut] for cut in range(len(data))]
    damaged += [
        data[:at] + bytes([byte]) + data[at + 1 :]
        for at in range(0, len(data), 7)
        for byte in (0x00, 0x22, 0x2C, 0x5D, 0x7B, 0xFF)
    ]
    for variant in damaged:
        with contextlib.suppress(ImportFormatError):
            list(iter_records(io.BytesIO(variant)))


# --- each record's own JSON text --------------------------------------------------------------
AWKWARD = [
    rest_issue(1, body='é 中文 🔥 "q" \\ \r\n' * 50, labels=[{"name": "a\u2028b"}]),
    rest_issue(2, body="x" * 70_000, user={"login": "ü"}),  # longer than a read
    rest_comment(2, body="[{]}" * 10),
    rest_issue(3, title="{[", body=None, comments=0.5, id=2**62),
]


def test_each_record_keeps_its_objects_json_text_as_the_file_wrote_it() -> None:
    pretty = json.dumps(AWKWARD, indent=2, ensure_ascii=False).encode()
    escaped = json.dumps(AWKWARD, separators=(",", ":")).encode()  # ASCII, with \u escapes
    for data in (pretty, escaped):
        records = parse(data)
        assert [json.loads(r.raw_json or b"") for r in records] == AWKWARD
        assert [r.raw for r in records] == AWKWARD
        assert all(r.raw_json in data for r in records if r.raw_json)
    jsonl = parse(lines(*AWKWARD))
    assert [r.raw_json for r in jsonl] == [json.dumps(o).encode() for o in AWKWARD]
    csv_record = parse(b"number,title\n1,a\n")[0]
    assert csv_record.raw_json is None


@pytest.mark.parametrize("chunk", [1, 2, 7, 4096])
def test_an_array_reads_the_same_in_reads_of_any_size(monkeypatch: Any, chunk: int) -> None:
    import annotator.issues.formats as formats

    data = b" \n[ " + b" ,\n ".join(json.dumps(o, ensure_ascii=False).encode() for o in AWKWARD)
    data += b"\n ]\n "
    whole = parse(data)
    monkeypatch.setattr(formats, "_ARRAY_CHUNK", chunk)
    for read_size in (1, 3, None):
        records = list(iter_records(lazy(iter([data]), read_size)))
        assert records == whole
        assert [r.raw_json for r in records] == [r.raw_json for r in whole]


# --- size limit and streaming -----------------------------------------------------------------
def test_file_over_max_bytes_is_refused_naming_the_limit_in_megabytes() -> None:
    records = iter_records(lazy(generated_array(10_000)), max_bytes=2**20)  # ~7 MB, made lazily
    with pytest.raises(ImportFormatError) as caught:
        for _ in records:
            pass
    assert str(caught.value) == "file is larger than the limit of 1 MB"


def test_file_of_exactly_max_bytes_is_accepted() -> None:
    data = array(rest_issue(1), rest_issue(2))
    assert len(parse(data, max_bytes=len(data))) == 2
    with pytest.raises(ImportFormatError, match="larger than the limit"):
        parse(data, max_bytes=len(data) - 1)


def test_parsing_is_streamed_in_memory_that_does_not_grow_with_the_file() -> None:
    stream = lazy(generated_array(20_000))  # about 15 MB of JSON
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_records(stream))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20_000
    assert peak < 3 * 2**20


def test_jsonl_and_csv_are_streamed_too() -> None:
    def jsonl() -> Iterator[bytes]:
        for number in range(1, 20_001):
            yield json.dumps(rest_issue(number, body="x" * 500)).encode() + b"\n"

    def csv_rows() -> Iterator[bytes]:
        yield b"number,title,body\n"
        for number in range(1, 20_001):
            yield f"{number},Issue {number},{'x' * 500}\n".encode()

    for chunks in (jsonl(), csv_rows()):
        tracemalloc.start()
        try:
            count = sum(1 for _ in iter_records(lazy(chunks)))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert (count, peak < 3 * 2**20) == (20_000, True)


# --- purity -----------------------------------------------------------------------------------
def test_formats_imports_no_django() -> None:
    code = (
        "import annotator.issues.formats, sys; "
        "assert not any(m.startswith('django') for m in sys.modules), 'django loaded'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_formats_lists_the_four_formats() -> None:
    assert FORMATS == ("github", "jsonl", "gh", "csv")
