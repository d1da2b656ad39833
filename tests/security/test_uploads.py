"""Hostile uploads on every upload route, page and API: too large (refused while streaming),
not what the name says, zip bombs, unsafe or encrypted archive members, XML entities (XXE and
billion laughs) in a workbook, YAML alias bombs, and file names that try to become paths or
markup. Each is refused with a message naming the file, or neutralised — and the database and
MEDIA_ROOT are as they were. Downloads name their files in a header no name can break."""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from defusedxml import EntitiesForbidden
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.exports.models import ExportJob
from annotator.exports.services import run_export_job, start_export_job
from annotator.exports.spreadsheets import SpreadsheetError, inspect_workbook
from annotator.issues.access import grant_import
from annotator.issues.models import ImportJob, Issue
from annotator.studies.models import Item, Study
from annotator.upload_handling import ROUTE_KINDS, LimitedUploadHandler
from annotator.uploads import TextScan, UploadRefused, content_disposition, sniff
from taxonomy_app.models import Codebook, CodebookVersion
from tests.exports.factories import exported_world
from tests.factories import UserFactory
from tests.issues.test_import_service import ISSUES
from tests.taxonomy_app.factories import published_small, small_document

pytestmark = pytest.mark.django_db
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MB = 1024 * 1024


# --- files -------------------------------------------------------------------------------------


def workbook() -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "label1"
    sheet.append(["Link", "Stage"])
    sheet.append(["https://github.com/o/r/issues/1", "training"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def rebuilt(data: bytes, replace: dict[str, bytes] | None = None, **add: bytes) -> bytes:
    """A copy of the archive `data` with members replaced (or added), plus members in `add`
    ("__" standing for "/")."""
    members = {**(replace or {}), **{n.replace("__", "/"): c for n, c in add.items()}}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", 8) as dst:
        for info in src.infolist():
            if info.filename not in members:
                dst.writestr(info.filename, src.read(info))
        for name, content in members.items():
            dst.writestr(name, content)
    return out.getvalue()


def with_sheet(xml: str) -> bytes:
    return rebuilt(workbook(), {"xl/worksheets/sheet1.xml": xml.encode()})


SHEET = (
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>{}</t></is></c></row>'
    "</sheetData></worksheet>"
)
XXE = with_sheet(
    '<?xml version="1.0"?><!DOCTYPE w [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    + SHEET.format("&xxe;")
)
LOL = "".join(f'<!ENTITY l{n} "{f"&l{n - 1};" * 10}">' for n in range(1, 10))


def with_shared_strings(xml: str) -> bytes:
    """A workbook whose shared strings part is `xml`, declared so that openpyxl reads it."""
    with zipfile.ZipFile(io.BytesIO(workbook())) as src:
        types = src.read("[Content_Types].xml").decode()
    part = (
        '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
    )
    return rebuilt(
        workbook(),
        {
            "[Content_Types].xml": types.replace("</Types>", part + "</Types>").encode(),
            "xl/sharedStrings.xml": xml.encode(),
        },
    )


BILLION_LAUGHS = with_shared_strings(
    f'<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY l0 "lol">{LOL}]>'
    '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" '
    'uniqueCount="1"><si><t>&l9;</t></si></sst>'
)
TRAVERSAL = rebuilt(workbook(), **{"..__..__evil.txt": b"planted"})


def encrypted(data: bytes, member: str) -> bytes:
    """Set the "encrypted" flag of `member` in the central directory (the stdlib cannot encrypt)."""
    buffer, at = bytearray(data), data.find(b"PK\x01\x02")
    while at >= 0:
        size = int.from_bytes(buffer[at + 28 : at + 30], "little")
        if buffer[at + 46 : at + 46 + size] == member.encode():
            buffer[at + 8] |= 0x01
        at = data.find(b"PK\x01\x02", at + 4)
    return bytes(buffer)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A workbook whose sheet inflates to 200 MB of zeros, written streamed: ~200 KB in all."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(workbook())) as src, zipfile.ZipFile(out, "w", 8) as dst:
        for info in src.infolist():
            if info.filename != "xl/worksheets/sheet1.xml":
                dst.writestr(info.filename, src.read(info))
                continue
            with dst.open(info.filename, "w") as member:
                for _ in range(200):
                    member.write(bytes(MB))
    return out.getvalue()


# --- routes ------------------------------------------------------------------------------------


@dataclass
class Route:
    name: str
    kind: str
    api: bool
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return reverse(self.name)


MAPPING = {
    "key_column": "Link",
    "sheet_to_annotator": {"label1": "label1"},
    "column_to_facet": {"Stage": "symptom"},
    "values": {"symptom": {"training": "slow"}},
    "study_name": "S",
}
ROUTES = [
    Route("issues:import", "issues", False, {"format": "auto"}),
    Route("api-import-create", "issues", True),
    Route("exports:prior_upload", "workbook", False, {"study_name": "Prior"}),
    Route("api-prior-inspect", "workbook", True),
    Route("api-prior-import", "workbook", True),
    Route("taxonomy:import", "codebook", False, {"format": "auto"}),
    Route("api-codebook-import", "codebook", True, {"format": "auto"}),
]
BY_KIND = {
    kind: [r for r in ROUTES if r.kind == kind] for kind in ("issues", "workbook", "codebook")
}
OTHER_CODEBOOK = small_document(codebook={"name": "Other bugs", "slug": "other-bugs"})
GOOD = {
    "issues": ("issues.json", ISSUES.read_bytes(), "application/json"),
    "workbook": ("labels.xlsx", workbook(), XLSX),
    "codebook": ("codebook.json", json.dumps(OTHER_CODEBOOK).encode(), "application/json"),
}


@pytest.fixture
def world(settings, tmp_path: Path) -> dict[str, Any]:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "incoming")
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024  # bigger uploads go through a temp file
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    (tmp_path / "incoming").mkdir()
    owner = UserFactory(username="owner")
    grant_import(owner)  # the issue import routes are for importers
    page, api = Client(), APIClient()
    page.force_login(owner)
    api.force_authenticate(owner)
    return {
        "page": page,
        "api": api,
        "owner": owner,
        "media": settings.MEDIA_ROOT,
        "incoming": tmp_path / "incoming",
    }


def version(world: dict[str, Any]) -> int:
    """A published codebook version for the prior-labels routes, made on first use."""
    if "version" not in world:
        world["version"] = published_small(user=world["owner"]).pk
    return int(world["version"])


def send(world: dict[str, Any], route: Route, name: str, content: bytes, type: str = "") -> Any:
    upload = SimpleUploadedFile(name, content, type or GOOD[route.kind][2])
    data = {**route.data, "file": upload}
    if route.name == "exports:prior_upload":
        data["codebook_version"] = version(world)
    if route.name == "api-prior-import":
        data["mapping"] = json.dumps({**MAPPING, "codebook_version": version(world)})
    if route.api:
        return world["api"].post(route.url, data, format="multipart")
    return world["page"].post(route.url, data)


def refusal(response: Any, route: Route) -> str:
    assert response.status_code == 400, response.content[:2000]
    if route.api:
        return str(response.json()["file"][0])
    message = str(response.context["form"].errors["file"][0])
    assert message.endswith(". Nothing was imported."), message
    return message.removesuffix(". Nothing was imported.")


def state(world: dict[str, Any]) -> dict[str, Any]:
    """Everything an upload could leave behind: rows, stored files, files still incoming."""
    media: Path = world["media"]
    models = (ImportJob, Issue, Study, Item, Codebook, CodebookVersion)
    stored = sorted(str(p.relative_to(media)) for p in media.rglob("*")) if media.exists() else []
    return {
        "rows": [model.objects.count() for model in models],
        "media": stored,
        "incoming": sorted(os.listdir(world["incoming"])),
    }


def refused(world: dict[str, Any], route: Route, name: str, content: bytes, type: str = "") -> str:
    if route.kind == "workbook":
        version(world)  # made before the snapshot: it is the route's input, not its output
    before = state(world)
    message = refusal(send(world, route, name, content, type), route)
    assert state(world) == before
    return message


# --- every route -------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_good_file_passes_every_route(world, route: Route) -> None:
    name, content, _ = GOOD[route.kind]
    response = send(world, route, name, content)
    assert response.status_code in (200, 201, 202, 302), response.content[:2000]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_an_oversized_file_is_refused_while_streaming(world, settings, route: Route) -> None:
    limits = {
        "issues": "IMPORT_MAX_BYTES",
        "workbook": "WORKBOOK_MAX_BYTES",
        "codebook": "CODEBOOK_MAX_BYTES",
    }
    setattr(settings, limits[route.kind], 64 * 1024)
    if route.kind == "workbook":  # these routes also take Label Studio/doccano files
        settings.LABEL_FILE_MAX_BYTES = 64 * 1024
    name, content, _ = GOOD[route.kind]
    big = (
        content + b" " * (300 * 1024)
        if route.kind != "workbook"
        else rebuilt(content, **{"xl__media__pad.bin": os.urandom(300 * 1024)})
    )
    settings.FILE_UPLOAD_HANDLERS = [
        "annotator.upload_handling.LimitedUploadHandler",
        "tests.security.test_uploads.Recorder",
        "django.core.files.uploadhandler.TemporaryFileUploadHandler",
    ]
    Recorder.received.clear()
    assert refused(world, route, name, big) == f"{name} is larger than the limit of 64 KB"
    # The handlers after ours saw no more than the limit: the rest was never written.
    assert 0 < Recorder.received[-1] <= 64 * 1024


class Recorder(FileUploadHandler):
    """Records how many bytes of a file reach the handlers after LimitedUploadHandler."""

    received: list[int] = []  # shared on purpose: the test reads it

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received.append(0)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received[-1] += len(raw_data)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


WRONG_TYPES = {
    "issues": [
        (
            "report.json",
            b"<!DOCTYPE html><html><body>login</body></html>",
            "report.json should be UTF-8 text (.json); it looks like an HTML page",
        ),
        (
            "tool.json",
            b"MZ\x90\x00\x03" + bytes(200),
            "tool.json should be UTF-8 text (.json); it looks like a Windows executable",
        ),
        (
            "issues.exe",
            b"[]",
            "issues.exe: expected a file of issues (.json, .jsonl, .ndjson or .csv)",
        ),
        (
            "issues.jsonl",
            b"[1, 2]",
            "issues.jsonl is not JSON Lines: each line should be an object {…}",
        ),
        (
            "issues.csv",
            b"number,title\n" + b"1,a\n" * 3000 + b"2,\xe9t\xe9\n",
            "issues.csv: not UTF-8 text (at byte 12015)",
        ),
        (
            "issues.csv",
            b"number,title\n" + b"1,a\n" * 3000 + b"2,b\x00\n",
            "issues.csv: a NUL byte at byte 12016: not text",
        ),
    ],
    "workbook": [
        (
            "report.xlsx",
            b"<html><body>Sign in to continue</body></html>",
            "report.xlsx is not an .xlsx workbook: it looks like an HTML page",
        ),
        (
            "labels.xlsx",
            b"%PDF-1.7\n" + bytes(100),
            "labels.xlsx is not an .xlsx workbook: it looks like a PDF document",
        ),
        ("labels.csv", b"Link,Stage\n", "labels.csv: expected a .xlsx workbook (.xlsx)"),
        (
            "notes.xlsx",
            rebuilt(b"PK\x05\x06" + bytes(18), readme__txt=b"hi"),
            "notes.xlsx is a zip archive but not an .xlsx workbook",
        ),
    ],
    "codebook": [
        (
            "codebook.yaml",
            b"\x7fELF\x02\x01\x01" + bytes(100),
            "codebook.yaml should be UTF-8 text (.yaml); it looks like an ELF executable",
        ),
        (
            "codebook.json",
            b"<html>nope</html>",
            "codebook.json should be UTF-8 text (.json); it looks like an HTML page",
        ),
        (
            "codebook.exe",
            b"{}",
            "codebook.exe: expected a JSON, YAML or REFI-QDA codebook (.json, .yaml, .yml or .qdc)",
        ),
    ],
}


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_file_that_is_not_what_its_name_says_is_refused(world, route: Route) -> None:
    for name, content, message in WRONG_TYPES[route.kind]:
        assert refused(world, route, name, content) == message


@pytest.mark.parametrize("route", BY_KIND["issues"] + BY_KIND["codebook"], ids=lambda r: r.name)
def test_a_declared_html_type_is_refused_even_with_good_bytes(world, route: Route) -> None:
    name, content, _ = GOOD[route.kind]
    expected = f"{name}: sent as text/html, which is not a "
    assert refused(world, route, name, content, "text/html").startswith(expected)


ARCHIVES = [
    (
        "bomb",
        None,
        r"^labels\.xlsx: xl/worksheets/sheet1\.xml inflates \d+ times \(limit 100\): "
        r"refusing a likely zip bomb$",
    ),
    (
        "traversal",
        TRAVERSAL,
        r"^labels\.xlsx: member '\.\./\.\./evil\.txt' points outside the archive$",
    ),
    (
        "encrypted",
        encrypted(workbook(), "xl/styles.xml"),
        r"^labels\.xlsx: member 'xl/styles\.xml' is encrypted$",
    ),
    ("xxe", XXE, r"^labels\.xlsx: xl/worksheets/sheet1\.xml declares a DOCTYPE or entities, "),
    ("billion-laughs", BILLION_LAUGHS, r"^labels\.xlsx: xl/sharedStrings\.xml declares a DOCTYPE "),
]


@pytest.mark.parametrize("route", BY_KIND["workbook"], ids=lambda r: r.name)
def test_hostile_workbooks_are_refused_before_openpyxl_reads_them(world, bomb, route) -> None:
    for label, content, pattern in ARCHIVES:
        message = refused(world, route, "labels.xlsx", content or bomb)
        assert re.match(pattern, message), (label, message)


def test_a_workbook_inflating_past_the_total_limit_is_refused(world, settings) -> None:
    settings.XLSX_MAX_INFLATED_BYTES = 1 * MB
    padded = rebuilt(workbook(), **{"xl__media__photo.bin": os.urandom(2 * MB)})
    message = refused(world, ROUTES[3], "labels.xlsx", padded)
    expected = (
        r"labels\.xlsx inflates to [\d,]+ bytes, over the limit of 1,048,576: split the workbook"
    )
    assert re.fullmatch(expected, message)


@pytest.mark.parametrize("route", BY_KIND["codebook"], ids=lambda r: r.name)
def test_a_yaml_alias_bomb_is_refused_without_expanding(world, route: Route) -> None:
    levels = "".join(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 10))
    laughs = f"l0: &l0 lol\n{levels}codebook: {{name: *l9}}\nfacets: []\n".encode()
    before = state(world)
    response = send(world, route, "codebook.yaml", laughs)
    assert response.status_code == 400
    body = response.json() if route.api else response.context["form"].errors
    text = json.dumps(body)
    assert "not valid YAML at line 2: aliases such as *l0 are not accepted" in text
    assert state(world) == before


def test_the_api_content_field_is_checked_as_a_file_named_content(world) -> None:
    sent = {"content": "<!doctype html><p>Sign in</p>"}
    response = world["api"].post(reverse("api-codebook-import"), sent, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "content": ["content.yaml should be UTF-8 text (.yaml); it looks like an HTML page"]
    }


# --- file names --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawFile:
    name: str  # sent exactly as given
    content: bytes
    content_type: str


def raw_post(client: Client, url: str, fields: dict[str, str], file: RawFile) -> Any:
    """A multipart POST whose file name is sent exactly as given (the test client would strip
    path parts before sending)."""
    name, content, content_type = file.name, file.content, file.content_type
    boundary = "annotator-boundary-7d3"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{name}"\r\nContent-Type: {content_type}\r\n\r\n'.encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return client.generic(
        "POST", url, b"".join(parts), content_type=f"multipart/form-data; boundary={boundary}"
    )


@pytest.mark.parametrize(
    "name", ["../../etc/passwd.json", "..\\..\\etc\\passwd.json", "/etc/passwd.json"]
)
def test_a_path_as_file_name_never_reaches_the_filesystem(world, tmp_path, name: str) -> None:
    file = RawFile(name, ISSUES.read_bytes(), "application/json")
    response = raw_post(world["page"], reverse("issues:import"), {"format": "auto"}, file)
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert re.fullmatch(r"imports/\d{4}/\d{2}/[0-9a-f]{32}\.json", job.file.name), job.file.name
    assert job.original_name == "passwd.json"
    assert state(world)["media"][-1] == job.file.name
    assert not (tmp_path / "etc").exists() and not (world["media"] / "etc").exists()


def test_markup_in_a_file_name_is_shown_as_text(world) -> None:
    name = "<img src=x onerror=alert(1)>.json"
    file = RawFile(name, ISSUES.read_bytes(), "application/json")
    response = raw_post(world["page"], reverse("issues:import"), {"format": "auto"}, file)
    job = ImportJob.objects.get()
    assert job.original_name == name
    page = world["page"].get(response["Location"]).content.decode()
    assert html.escape(name) in page and name not in page
    listing = world["page"].get(reverse("issues:import")).content.decode()
    assert html.escape(name) in listing and name not in listing


def test_a_workbook_named_like_a_tag_is_stored_under_a_token_and_shown_escaped(world) -> None:
    fields = {"study_name": "Prior", "codebook_version": str(version(world))}
    file = RawFile("<script>.xlsx", workbook(), XLSX)
    response = raw_post(world["page"], reverse("exports:prior_upload"), fields, file)
    assert response.status_code == 302, response.content[:2000]
    (stored,) = [p for p in state(world)["media"] if p.endswith(".xlsx")]
    assert re.fullmatch(r"prior-labels/[0-9a-f]{32}\.xlsx", stored)
    page = world["page"].get(response["Location"]).content.decode()
    assert "Map &lt;script&gt;.xlsx" in page and "<script>.xlsx" not in page


def test_a_hostile_name_in_a_refusal_is_data_not_markup(world) -> None:
    name = "<b onmouseover=alert(1)>.xlsx"
    message = refused(world, ROUTES[2], name, b"<html></html>")
    assert message == f"{name} is not an .xlsx workbook: it looks like an HTML page"
    page = send(world, ROUTES[2], name, b"<html></html>").content.decode()
    assert html.escape(name, quote=False) in page and name not in page


# --- the XML parser underneath, the pure checks, downloads --------------------------------------


@pytest.mark.parametrize(
    ("content", "part"), [(XXE, "worksheets/sheet1"), (BILLION_LAUGHS, "sharedStrings")]
)
def test_openpyxl_parses_with_defusedxml_and_refuses_entities_itself(tmp_path, content, part):
    assert openpyxl.xml.DEFUSEDXML is True
    path = tmp_path / "hostile.xlsx"
    path.write_bytes(content)
    # The second line of defence, were ours bypassed: openpyxl's parser refuses the entities.
    with pytest.raises((EntitiesForbidden, ValueError)) as caught:
        openpyxl.load_workbook(path)
    assert isinstance(caught.value, EntitiesForbidden) or isinstance(
        caught.value.__context__, EntitiesForbidden
    ), repr(caught.value)
    # The first: the file is refused before openpyxl opens it.
    with pytest.raises(SpreadsheetError, match=rf"xl/{part}\.xml declares a DOCTYPE"):
        inspect_workbook(path)


def test_the_text_scan_reads_characters_split_across_chunks() -> None:
    scan = TextScan("notes.csv")
    data = "título,é\n".encode()
    for n in range(len(data)):
        scan.feed(data[n : n + 1])
    scan.feed(b"", final=True)
    with pytest.raises(UploadRefused, match=r"^notes\.csv: not UTF-8 text \(at byte 2\)$"):
        cut = TextScan("notes.csv")
        cut.feed(b"ab\xc3")
        cut.feed(b"(")


@pytest.mark.parametrize(
    ("head", "looks"),
    [
        (b"\xef\xbb\xbf[{}]", "JSON"),
        (b"number,title\n", "text"),
        (b"  <!doctype html>", "an HTML page"),
        (b"<?xml version='1.0'?>", "an XML document"),
        (b"\xff\xfeh\x00i\x00", "UTF-16 text"),
        (b"\x00\x01\x02", "binary data"),
        (b"\x89PNG\r\n", "a PNG image"),
        (b"\xc3\x28", "binary data"),
    ],
)
def test_sniffing_names_what_the_bytes_look_like(head: bytes, looks: str) -> None:
    assert sniff(head) == looks


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("study-1-final-export-2.csv", 'attachment; filename="study-1-final-export-2.csv"'),
        (
            'My "best" study.csv',
            'attachment; filename="My _best_ study.csv"; '
            "filename*=UTF-8''My%20%22best%22%20study.csv",
        ),
        ("a\r\nSet-Cookie: x=1.csv", 'attachment; filename="a Set-Cookie: x=1.csv"'),
        ("../../etc/passwd", 'attachment; filename="etc-passwd"'),
        (
            "Étude ü 分布式.xlsx",
            'attachment; filename="Etude u .xlsx"; '
            "filename*=UTF-8''%C3%89tude%20%C3%BC%20%E5%88%86%E5%B8%83%E5%BC%8F.xlsx",
        ),
        ("\n\n", 'attachment; filename="download"'),
    ],
)
def test_download_names_cannot_break_the_header(name: str, expected: str) -> None:
    value = content_disposition(name)
    assert value == expected
    HttpResponse()["Content-Disposition"] = value  # a newline would raise BadHeaderError


def test_export_downloads_send_a_sanitised_name(settings, tmp_path) -> None:
    settings.MEDIA_ROOT = tmp_path
    world = exported_world()
    Study.objects.filter(pk=world.study.pk).update(name='Q1 "final"\n/../ü')
    job = start_export_job(study=world.study, format="csv", user=world.owner)
    run_export_job(job_id=job.pk)
    job = ExportJob.objects.get(pk=job.pk)
    client = Client()
    client.force_login(world.owner)
    for url in (reverse("exports:download", args=[job.pk]), f"/api/exports/{job.pk}/download/"):
        response = client.get(url)
        assert response["Content-Disposition"] == content_disposition(job.filename)
        assert response["Content-Disposition"] == f'attachment; filename="{job.filename}"'
    card = client.get(reverse("exports:card", args=[job.pk]))
    assert card["Content-Disposition"] == f'attachment; filename="{job.filename}.md"'


def test_every_streaming_limit_route_exists() -> None:
    assert {reverse(name) for name in ROUTE_KINDS} == {route.url for route in ROUTES}


def test_each_route_streams_under_its_own_limit(settings, rf) -> None:
    settings.IMPORT_MAX_BYTES, settings.WORKBOOK_MAX_BYTES = 3 * MB, 2 * MB
    settings.CODEBOOK_MAX_BYTES, settings.UPLOAD_MAX_BYTES = 1 * MB, 9 * MB
    settings.LABEL_FILE_MAX_BYTES = 5 * MB
    expected = {
        "/api/imports/": 3 * MB,
        # a workbook or a Label Studio/doccano file: the larger limit while streaming
        "/exports/prior-labels/": 5 * MB,
        "/codebooks/import/": 1 * MB,
        "/login/": 9 * MB,
        "/no/such/route/": 9 * MB,
    }
    assert {url: LimitedUploadHandler(rf.post(url)).limit for url in expected} == expected


def test_the_checks_import_no_django() -> None:
    code = (
        "import sys, annotator.uploads as u, annotator.exports.spreadsheets\n"
        "u.sniff(b'[]'); u.content_disposition('a.csv')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'django']\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
