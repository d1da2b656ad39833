"""Deeply nested JSON and YAML, a few hundred KB that a parser would need gigabytes for, is
refused before the parser has built much: issue files (in the formats and as an import job),
codebook files on every codebook route, and API bodies. Each message names the position and the limit, and
nothing is written. The speed and memory figures are benchmarks/hostile_files.py's."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from annotator.issues.formats import ImportFormatError, iter_records
from annotator.issues.models import ImportJob, Issue
from annotator.jobs import memory_budget
from annotator.json_depth import DepthScan, TooDeep
from annotator.studies.models import Study
from taxonomy_app.formats import CodebookFormatError, load_document
from tests.issues.test_import_jobs import upload, wait_for
from tests.issues.test_import_service import rest_issue
from tests.security import test_uploads
from tests.security.test_uploads import BY_KIND, Route, send, state

world = test_uploads.world  # the upload tests' fixture: an importer, their clients, MEDIA_ROOT

NESTED = b"[" * 200_000  # the reviewed file: 200 KB of "["


def nested_raw(depth: int) -> dict[str, Any]:
    """A REST issue whose raw data nests `depth` levels in all (the array and issue count)."""
    value: Any = 1
    for _ in range(depth - 2):
        value = [value]
    return rest_issue(1, extra=value)


# --- the scan ------------------------------------------------------------------------------------


def test_brackets_inside_strings_and_escapes_do_not_count():
    scan = DepthScan(2)
    for chunk in (b'[{"a": "[[[\\', b'"[[[", "b\\\\"', b', "]]]]"}]'):  # an escape split in two
        scan.feed(chunk)
    assert scan.depth == 0


def test_the_scan_names_the_byte_past_the_limit():
    with pytest.raises(TooDeep) as caught:
        DepthScan(3).feed(b'[{"a": [[1]]}]')
    assert (caught.value.offset, caught.value.limit) == (8, 3)


_INSIDE = st.sampled_from([b"a", b"[", b"]", b"{", b"}", b"\\\\", b'\\"', b"\\n", b"'"])
_STRING = st.lists(_INSIDE, max_size=6).map(lambda parts: b'"' + b"".join(parts) + b'"')
_TOKEN = st.one_of(st.sampled_from([b"[", b"]", b"{", b"}", b",", b":", b"1"]), _STRING)


class _TokenByToken(DepthScan):
    """The scan as it reads a chunk that goes past the limit: token by token, every chunk."""

    def feed(self, chunk: bytes) -> None:
        self._feed_exactly(chunk)
        self.offset += len(chunk)


def _scanned(scan: DepthScan, data: bytes, cuts: list[int]) -> tuple[object, ...]:
    try:
        for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
            scan.feed(data[start:end])
    except TooDeep as error:
        return ("too deep at", error.offset)
    return (scan.depth, scan._in_string, scan._escaped)


@given(
    tokens=st.lists(_TOKEN, max_size=25),
    end=st.integers(min_value=0),
    cuts=st.lists(st.integers(min_value=0), max_size=4),
    limit=st.integers(min_value=0, max_value=5),
)
def test_the_scan_in_c_agrees_with_the_scan_token_by_token(tokens, end, cuts, limit):
    """However the bytes are cut into chunks, and where a file stops mid-string or mid-escape:
    the same depth, the same string and escape state, the same byte named past the limit."""
    data = b"".join(tokens)
    data = data[: end % (len(data) + 1)]
    cuts = sorted(c % (len(data) + 1) for c in cuts)
    fast = _scanned(DepthScan(limit), data, cuts)
    assert fast == _scanned(_TokenByToken(limit), data, cuts)


def test_a_string_that_does_not_close_in_its_chunk_is_read_once():
    scan = DepthScan(2)
    scan.feed(b'[{"a": "' + b'\\"[' * 30_000)  # escaped quotes and brackets, all text
    scan.feed(b'"}]')
    assert scan.depth == 0


# --- issue files -------------------------------------------------------------------------------


def test_a_file_of_nested_brackets_is_refused_naming_the_byte_and_the_limit():
    # Within 256 MB more (format detection alone once took 10 GB for this file).
    with pytest.raises(ImportFormatError) as caught, memory_budget(256):
        list(iter_records(io.BytesIO(NESTED)))
    assert str(caught.value) == "JSON is nested deeper than the limit of 64 levels at byte 64"


def test_an_issue_nested_to_the_limit_is_read_and_one_level_more_is_refused():
    records = list(iter_records(io.BytesIO(json.dumps([nested_raw(64)]).encode())))
    assert [record.number for record in records] == [1]
    with pytest.raises(ImportFormatError, match="deeper than the limit of 64 levels at byte"):
        list(iter_records(io.BytesIO(json.dumps([nested_raw(65)]).encode())))


def test_brackets_written_as_escapes_in_a_body_do_not_hide_the_depth():
    """The depth check counts an element's brackets, less its body's where the text spells them
    as brackets; a body of \\u005b escapes must not be taken off the count."""
    text = json.dumps([nested_raw(65) | {"body": "@" * 300}]).replace("@", "\\u005b").encode()
    (record,) = list(iter_records(io.BytesIO(json.dumps([nested_raw(64)]).encode())))
    assert record.number == 1
    with pytest.raises(ImportFormatError, match="deeper than the limit of 64 levels at byte"):
        list(iter_records(io.BytesIO(text)))


@pytest.mark.parametrize("tail", [b"}", b"]]]", b"x", b""])
def test_nesting_past_the_limit_is_named_before_a_syntax_error_after_it(tail):
    """Whatever follows the brackets (bad JSON, or the end of the file), the message is the
    depth's, naming the byte a scan of the whole file names."""
    data = b'[{"a": ' + b"[" * 70 + tail
    with pytest.raises(TooDeep) as scanned:
        DepthScan(64).feed(data)
    with pytest.raises(ImportFormatError) as caught:
        list(iter_records(io.BytesIO(data)))
    assert str(caught.value) == (
        f"JSON is nested deeper than the limit of 64 levels at byte {scanned.value.offset}"
    )


def test_a_jsonl_line_nested_too_deeply_is_refused_naming_line_and_column():
    data = json.dumps(rest_issue(1)).encode() + b"\n" + b"{" + b'"a":[' * 100_000 + b"\n"
    with pytest.raises(ImportFormatError) as caught:
        list(iter_records(io.BytesIO(data), max_depth=10))
    assert str(caught.value) == (
        "line 2: JSON is nested deeper than the limit of 10 levels at column 51"
    )


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_import_job_of_nested_brackets_fails_with_the_message_and_writes_nothing(
    celery_worker_process,
):
    job, _ = wait_for(upload("issues.json", NESTED))

    assert job.status == ImportJob.Status.FAILED
    assert job.error == "JSON is nested deeper than the limit of 64 levels at byte 64"
    assert Issue.objects.count() == 0


def test_a_memory_budget_turns_a_runaway_allocation_into_memory_error():
    with pytest.raises(MemoryError), memory_budget(64):
        bytearray(512 * 2**20)
    assert len(bytearray(512 * 2**20)) == 512 * 2**20  # the limit is gone afterwards


# --- codebook files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "not valid YAML at line 1, column 33: nested deeper than the limit of 32"),
        (
            "a:\n" + "".join("  " * n + "b:\n" for n in range(1, 40)) + "  " * 40 + "c",
            "not valid YAML at line 33, column 65: nested deeper than the limit of 32",
        ),
        (
            '{"a": ' + "[" * 100_000,
            "not valid JSON at line 1, column 38: nested deeper than the limit of 32",
        ),
    ],
    ids=["yaml-flow", "yaml-block", "json"],
)
def test_a_deep_codebook_file_is_refused_naming_line_column_and_limit(text, message):
    with pytest.raises(CodebookFormatError) as caught:
        load_document(text)
    assert str(caught.value) == message + " levels"


@pytest.mark.django_db
@pytest.mark.parametrize("route", BY_KIND["codebook"], ids=lambda r: r.name)
def test_a_deep_yaml_codebook_is_refused_on_every_route(world, route: Route) -> None:
    before = state(world)
    response = send(world, route, "codebook.yaml", b"codebook: " + b"[" * 100_000)
    assert response.status_code == 400
    body = response.json() if route.api else response.context["form"].errors
    assert "nested deeper than the limit of 32 levels" in json.dumps(body)
    assert state(world) == before


# --- API bodies ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_deep_json_api_body_is_a_400_naming_the_limit(world) -> None:
    body = b'{"name": "x", "a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    url = reverse("api-study-create")
    response = world["api"].post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "JSON parse error - nested deeper than the limit of 64 levels at byte 82"
    }
    assert Study.objects.count() == 0
