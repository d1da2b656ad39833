"""REFI-QDA codebooks (.qdc): export valid against Codebook.xsd, lossless round trips, files from
other tools mapped as documented, bad files refused naming the code and field (nothing written),
and the upload page, the download link and the API as a logged-in user uses them."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from lxml import etree

from taxonomy_app.formats import MAX_CATEGORIES, CodebookFormatError, parse_codebook
from taxonomy_app.models import Category, Codebook, CodebookVersion, Facet
from taxonomy_app.refi_qda import NAMESPACE, read_qdc, schema, write_qdc
from taxonomy_app.refi_qda.descriptions import CATEGORY_LINE, FACET_LINE, fold, unfold
from taxonomy_app.services import (
    export_version,
    import_codebook,
    start_draft,
    update_category,
    version_spec,
)
from taxonomy_app.uploads import check_upload
from tests.taxonomy_app.factories import SMALL_RULES, category, small_document
from tests.taxonomy_app.test_import_export import snapshot

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
NS = {"q": NAMESPACE}
GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# Texts that a naive folding would lose: several lines, a line reading as a heading, backslashes,
# a carriage return, tabs, markup characters, non-ASCII.
TRICKY = (
    "First line.\nInclude: not a heading here\n\\Code: nor this\n\tTabbed <b>&amp;</b> ]]>\r\nÜ"
)


def valid(text: str) -> bool:
    return bool(schema().validate(etree.fromstring(text.encode()).getroottree()))


def rich_document() -> dict:
    """SMALL with its rules, a deeper hierarchy, an archived category and tricky texts."""
    document = small_document(rules=SMALL_RULES)
    document["codebook"] = {"name": "Rich bugs", "slug": "rich-bugs"}
    document["codebook"]["description"] = "Line one.\nRule 1: not a rule"
    document["version"]["changelog"] = "Imported ?> with a PI end inside."
    facets = document["facets"]
    facets[0]["help"] = "Decide first.\nKey: not a key\nHelp: not help"
    symptom = facets[1]["categories"]
    symptom[1].update(definition=TRICKY, include="Timeouts.\n\nAnd more.", examples="- one\n- two")
    symptom.append(
        {"code": "nccl-hang", "name": "NCCL hang", "parent": "hang", "definition": "Deep."}
    )
    symptom.append({"code": "old", "name": "Old symptom", "archived": True, "exclude": "All."})
    return document


@pytest.fixture
def rich(owner):  # type: ignore[no-untyped-def]
    data = json.dumps(rich_document())
    return import_codebook(data=data, fmt="json", publish=True, user=owner)


def foreign_file() -> bytes:
    """A codebook shaped like ATLAS.ti's and MAXQDA's exports: nested codes, colours,
    descriptions in prose (one with our headings), every code codable, a set, no facets."""
    return """<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:schemaLocation="urn:QDA-XML:codebook:1.0 Codebook.xsd" origin="ATLAS.ti 23.2.1">
  <Codes>
    <Code guid="{B7D1C3A0-0000-4000-8000-000000000001}" name="Symptom" isCodable="true"
        color="#FF0000">
      <Description>What the user sees.
Kind: any failure counts.</Description>
      <Code guid="B7D1C3A0-0000-4000-8000-000000000002" name="Hang" isCodable="true"
          color="#00ff00">
        <Description>Definition: The job waits forever.
Include: NCCL timeouts.
Example: Rank 3 stuck in all_reduce.</Description>
        <Code guid="B7D1C3A0-0000-4000-8000-000000000003" name="Deadlock" isCodable="true">
          <Code guid="B7D1C3A0-0000-4000-8000-000000000004" name="Other" isCodable="true"/>
        </Code>
      </Code>
      <Code guid="B7D1C3A0-0000-4000-8000-000000000005" name="Crash" isCodable="true"
          color="#abc"/>
      <Code guid="B7D1C3A0-0000-4000-8000-000000000006" name="Other" isCodable="true"/>
    </Code>
    <Code guid="B7D1C3A0-0000-4000-8000-000000000007" name="Follow up" isCodable="true">
      <Description>Needs a second look.</Description>
    </Code>
    <Code guid="B7D1C3A0-0000-4000-8000-000000000008" name="Fehlerursache" isCodable="false">
      <Code guid="B7D1C3A0-0000-4000-8000-000000000009" name="Übertragung" isCodable="true"/>
    </Code>
    <Code guid="B7D1C3A0-0000-4000-8000-00000000000a" name="Wontfix" isCodable="true"/>
    <Code guid="B7D1C3A0-0000-4000-8000-00000000000b" name="Stage" isCodable="false"/>
  </Codes>
  <Sets>
    <Set guid="B7D1C3A0-0000-4000-8000-0000000000ff" name="Memory related">
      <MemberCode guid="B7D1C3A0-0000-4000-8000-000000000002"/>
    </Set>
  </Sets>
</CodeBook>
""".encode()


def qdc(codes: str, head: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>{head}\n'
        f'<CodeBook xmlns="{NAMESPACE}" origin="test"><Codes>\n{codes}\n</Codes></CodeBook>'
    ).encode()


def code(n: int, name: str, inner: str = "", codable: str = "true", **attributes: str) -> str:
    guid = f"00000000-0000-4000-8000-{n:012d}"
    extra = "".join(f' {key}="{value}"' for key, value in attributes.items())
    return f'<Code guid="{guid}" name="{name}" isCodable="{codable}"{extra}>{inner}</Code>'


def description(text: str) -> str:
    return f"<Description>{text}</Description>"


# Export ----------------------------------------------------------------------------------------


def test_export_validates_against_the_schema(v1, rich):
    call_command("load_codebook", "--publish", stdout=io.StringIO())
    seed = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")

    for version in (v1, rich, seed):
        assert valid(export_version(version=version, fmt="qdc")), version


def test_facets_are_top_level_codes_and_categories_nest_inside_them(rich):
    root = etree.fromstring(export_version(version=rich, fmt="qdc").encode())
    tops = root.findall("q:Codes/q:Code", NS)
    symptom = tops[1]
    failure = symptom.find("q:Code", NS)
    hang = failure.find("q:Code", NS)

    assert root.get("origin") == "annotator (annotator-codebook/1): Rich bugs v1"
    assert [t.get("name") for t in tops] == ["Screening", "Symptom", "Fix pattern"]
    assert {t.get("isCodable") for t in tops} == {"false"}
    assert [c.get("name") for c in failure.findall("q:Code", NS)] == [
        "Hang",
        "Out of memory",
        "Crash",
    ]
    assert hang.find("q:Code", NS).get("name") == "NCCL hang"
    assert hang.get("isCodable") == "true"
    assert symptom.findall("q:Code", NS)[-1].get("isCodable") == "false"  # archived
    assert failure.findtext("q:Description", namespaces=NS) == "Code: failure\nDefinition: Stops."
    assert {e.get("color") for e in symptom.iter(f"{{{NAMESPACE}}}Code")} == {"#F28E2B"}
    assert all(GUID.match(e.get("guid")) for e in root.iter(f"{{{NAMESPACE}}}Code"))
    assert hang.get("guid") == str(uuid.uuid5(uuid.UUID(GUID_NS), "rich-bugs/symptom/hang"))


GUID_NS = str(uuid.uuid5(uuid.NAMESPACE_URL, "https://annotator.invalid/refi-qda/codebook"))


def test_facet_description_carries_key_kind_required_rules_and_help(rich):
    root = etree.fromstring(export_version(version=rich, fmt="qdc").encode())
    descriptions = [c.findtext("q:Description", namespaces=NS) for c in root.find("q:Codes", NS)]

    assert descriptions[0] == (
        "Key: screening\nKind: single\nRequired: yes\n"
        "Help:\nDecide first.\n\\Key: not a key\n\\Help: not help"
    )
    assert descriptions[1].splitlines()[:6] == [
        "Key: symptom",
        "Kind: single",
        "Required: no",
        "Rule 1: requires when_facet=screening when_categories=relevant",
        "Rule 2: forbids when_facet=screening when_categories=not-a-bug",
        "Rule 4: leaf_only",
    ]
    assert "Rule 5: max_choices max_choices=1" in descriptions[2]


def test_exporting_twice_gives_the_same_file(rich):
    assert export_version(version=rich, fmt="qdc") == export_version(version=rich, fmt="qdc")


# Round trip ------------------------------------------------------------------------------------


def test_export_import_export_is_identical_and_keeps_the_codebook(rich):
    exported = export_version(version=rich, fmt="qdc")
    Codebook.objects.filter(pk=rich.codebook_id).update(slug="original")

    copy = import_codebook(data=exported, fmt="auto", publish=True)

    assert export_version(version=copy, fmt="qdc") == exported
    original, again = version_spec(rich), version_spec(copy)
    assert again.facets == original.facets  # keys, kinds, required, help, codes, parents, texts
    assert again.rules == original.rules
    assert (again.name, again.description, copy.changelog) == (
        original.name,
        original.description,
        rich.changelog,
    )


def test_round_trip_keeps_codes_texts_and_cardinality(rich):
    exported = export_version(version=rich, fmt="qdc")
    Codebook.objects.filter(pk=rich.codebook_id).update(slug="original")

    copy = import_codebook(data=exported, fmt="qdc")

    hang = Category.objects.get(facet__version=copy, code="hang")
    assert (hang.parent.code, hang.definition, hang.include, hang.examples) == (
        "failure",
        TRICKY.strip(),
        "Timeouts.\n\nAnd more.",
        "- one\n- two",
    )
    assert Category.objects.get(facet__version=copy, code="nccl-hang").parent == hang
    assert Category.objects.get(facet__version=copy, code="old").archived
    kinds = dict(Facet.objects.filter(version=copy).values_list("key", "kind"))
    assert kinds == {"screening": "single", "symptom": "single", "fix": "multi"}
    assert copy.rules.count() == len(SMALL_RULES)


def test_json_and_qdc_imports_of_one_version_are_equal(rich):
    spec = version_spec(rich)

    assert read_qdc(write_qdc(spec, number=1, status="published")) == spec
    assert parse_codebook(json.loads(export_version(version=rich, fmt="json"))) == spec


@pytest.mark.parametrize(
    "text",
    [
        "one line",
        "two\nlines",
        "Include: at the start\nthen more",
        "\\Include: escaped already\n\\\\Code: twice",
        "ends with a heading\nExample:",
        "blank\n\n\nlines",
        "carriage\r\nreturns",
    ],
)
def test_fold_then_unfold_gives_each_value_back(text):
    fields = [("Code", "x"), ("Definition", text), ("Include", text), ("Example", "e")]

    preamble, sections = unfold(fold(fields, CATEGORY_LINE), CATEGORY_LINE)

    assert preamble == ""
    assert [(s.heading, s.value) for s in sections] == [(h, v.strip()) for h, v in fields]
    assert unfold(fold([("Help", text)], FACET_LINE), FACET_LINE)[1][0].value == text.strip()


# Files from other tools ------------------------------------------------------------------------


def test_a_file_from_another_tool_maps_as_documented(owner):
    version = import_codebook(data=foreign_file(), user=owner, name="bug-codes")

    facets = list(version.facets.order_by("order"))
    assert [(f.key, f.name, f.kind, f.required) for f in facets] == [
        ("symptom", "Symptom", "multi", False),
        ("bug-codes", "bug-codes", "multi", False),  # the loose top-level codes, where the first is
        ("fehlerursache", "Fehlerursache", "multi", False),
        ("stage", "Stage", "multi", False),  # not codable, no codes inside: an empty facet
    ]
    assert facets[0].help == "What the user sees.\nKind: any failure counts."  # prose, not ours
    rows = Category.objects.filter(facet=facets[0]).order_by("order", "pk")
    assert {c.code: (c.name, c.parent.code if c.parent else None) for c in rows} == {
        "hang": ("Hang", None),
        "deadlock": ("Deadlock", "hang"),
        "other": ("Other", "deadlock"),
        "crash": ("Crash", None),
        "other-2": ("Other", None),  # a repeated name gets a suffix
    }
    roots = [c.code for c in rows if c.parent is None]
    assert roots == ["hang", "crash", "other-2"]
    hang = rows.get(code="hang")
    assert (hang.definition, hang.include, hang.examples) == (
        "The job waits forever.",
        "NCCL timeouts.",
        "Rank 3 stuck in all_reduce.",
    )
    loose = Category.objects.filter(facet=facets[1]).order_by("pk")
    assert [(c.code, c.definition) for c in loose] == [
        ("follow-up", "Needs a second look."),
        ("wontfix", ""),
    ]
    assert Category.objects.get(facet=facets[2]).code == "ubertragung"
    assert (version.codebook.name, version.codebook.slug) == ("bug-codes", "bug-codes")


def test_a_flat_list_with_an_empty_sets_element_becomes_one_facet(db):
    # As Taguette writes it: upper-case guids, no descriptions, <Sets/> (which the schema refuses).
    data = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<CodeBook xmlns="urn:QDA-XML:codebook:1.0" '
        b'origin="Taguette 1.4.1"><Codes>'
        b'<Code guid="098AC082-A9C7-50F4-9728-48730081A95E" name="Crash" isCodable="true"/>'
        b'<Code guid="A2209CFF-8E89-5B0A-A7B0-CDDC4BE92936" name="Hang" isCodable="true"/>'
        b"</Codes><Sets/></CodeBook>"
    )

    version = import_codebook(data=data)

    facet = version.facets.get()
    assert (version.codebook.name, facet.key, facet.name) == (
        "Codebook from Taguette 1.4.1",
        "codebook-from-taguette-1-4-1",
        "Codebook from Taguette 1.4.1",
    )
    assert list(facet.categories.values_list("code", flat=True)) == ["crash", "hang"]


def test_a_foreign_file_imported_as_a_next_version_is_named_after_that_codebook(owner, v1):
    data = qdc(code(1, "Crash") + code(2, "Hang"))

    version = import_codebook(data=data, codebook=v1.codebook, user=owner, name="ignored")

    assert version.number == 2
    assert list(version.facets.values_list("key", "name")) == [("small-bugs", "Small bugs")]


def test_load_codebook_reads_a_qdc_file(tmp_path, v1):
    path = tmp_path / "small.qdc"
    path.write_text(export_version(version=v1, fmt="qdc"))
    out = io.StringIO()

    call_command("load_codebook", str(path), stdout=out)

    assert out.getvalue().strip() == "Small bugs: unchanged (v1 published)"


# Bad files -------------------------------------------------------------------------------------


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (n, (b"&lol%d;" % (n - 1) if n > 1 else b"&lol;") * 10)
        for n in range(1, 10)
    )
    + b']>\n<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>'
    + b'<Code guid="00000000-0000-4000-8000-000000000001" name="&lol9;" isCodable="true"/>'
    + b"</Codes></CodeBook>"
)
XXE = qdc(
    code(1, "x", description("&xxe;")), '\n<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
)
BAD_FILES = [
    ("empty", b"  \n", r"^the file is empty$"),
    ("not XML", b"<CodeBook><Codes>", r"^not valid XML at line 1, column 18: "),
    (
        "a project, not a codebook",
        b'<Project xmlns="urn:QDA-XML:project:1.0" name="p"/>',
        r'^not a REFI-QDA codebook: the root element is <Project> xmlns="urn:QDA-XML:project:1.0"'
        r" \(a REFI-QDA project: export its codebook as \.qdc instead\); expected <CodeBook",
    ),
    (
        "wrong namespace",
        b'<CodeBook xmlns="urn:QDA-XML:codebook:1:0"><Codes/></CodeBook>',
        r'^not a REFI-QDA codebook: the root element is <CodeBook> xmlns="urn:QDA-XML:codebook:1:0"',
    ),
    (
        "bad guid",
        qdc(code(1, "Ok") + '\n<Code guid="nope" name="Hang" isCodable="true"/>'),
        r"^not a valid REFI-QDA codebook at line 4: code 'Hang' \(line 4, guid nope\): "
        r"field 'guid': 'nope' is not a GUID",
    ),
    (
        "missing isCodable",
        qdc('<Code guid="00000000-0000-4000-8000-000000000001" name="Hang"/>'),
        r"^not a valid REFI-QDA codebook at line 3: code 'Hang' \(line 3, guid [-0-9]+\): "
        r"field 'isCodable': missing$",
    ),
    (
        "bad colour",
        qdc(code(1, "Hang", color="red")),
        r"^not a valid REFI-QDA codebook at line 3: code 'Hang' .*field 'color': 'red' is not a "
        r"colour \(#RRGGBB or #RGB\)$",
    ),
    (
        "unknown element",
        qdc(code(1, "Hang", "<Memo>x</Memo>")),
        r"^not a valid REFI-QDA codebook at line 3: element <Memo> in code 'Hang' .*"
        r"This element is not expected",
    ),
    (
        "no codes",
        qdc(""),
        r"^not a valid REFI-QDA codebook at line 2: element <Codes> in element <CodeBook>: "
        r"Missing child element",
    ),
    (
        "billion laughs",
        BILLION_LAUGHS,
        r"^not a REFI-QDA codebook: it declares a DOCTYPE or entities, which a codebook never",
    ),
    ("external entity", XXE, r"^not a REFI-QDA codebook: it declares a DOCTYPE or entities"),
    (
        "duplicate code",
        qdc(
            code(
                1,
                "Symptom",
                code(2, "Hang", description("Code: hang"))
                + "\n"
                + code(3, "Stuck", description("Code: hang")),
            )
        ),
        r"^code 'Stuck' \(line 4, guid 00000000-0000-4000-8000-000000000003\): facet 'symptom', "
        r"category 'hang': field 'code': duplicate code 'hang'$",
    ),
    (
        "duplicate guid",
        qdc(code(1, "Symptom", code(2, "Hang")) + "\n" + code(2, "Crash")),
        r"^code 'Crash' \(line 4, guid 00000000-0000-4000-8000-000000000002\): field 'guid': "
        r"duplicate guid, also that of code 'Hang' \(line 3,",
    ),
    (
        "bad code",
        qdc(code(1, "Symptom", code(2, "Hang", description("Code: no spaces please")))),
        r"^code 'Hang' \(line 3, .*\): facet 'symptom', category 'no spaces please': field "
        r"'code': 'no spaces please' must be at most 80 letters, digits, - or _$",
    ),
    (
        "bad kind",
        qdc(code(1, "Symptom", description("Key: symptom\nKind: tree") + code(2, "Hang"))),
        r"^code 'Symptom' \(line 3, .*\): facet 'symptom': field 'kind': unknown facet kind "
        r"'tree'",
    ),
    (
        "bad required",
        qdc(code(1, "Symptom", description("Key: symptom\nRequired: perhaps") + code(2, "Hang"))),
        r"^code 'Symptom' \(line 3, .*\): field 'required': expected yes or no, got 'perhaps'$",
    ),
    (
        "bad rule line",
        qdc(
            code(
                1,
                "Symptom",
                description("Key: symptom\nRule 1: max_choices three") + code(2, "Hang"),
            )
        ),
        r"^code 'Symptom' \(line 3, .*\): field 'Rule 1': expected field=value, got 'three'$",
    ),
    (
        "rule naming an unknown category",
        qdc(
            code(
                1,
                "Symptom",
                description("Key: symptom\nRule 1: exclusive categories=hang,nope")
                + code(2, "Hang"),
            )
        ),
        r"^code 'Symptom' \(line 3, .*\): rule 1 \(exclusive symptom\): field 'categories': "
        r"'nope' is not a category of facet 'symptom'",
    ),
    (
        "name too long",
        qdc(code(1, "Symptom", code(2, "x" * 201))),
        r"^code 'x+… \(line 3, .*\): facet 'symptom', category 'x+': field 'name': longer than 200",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_a_bad_file_names_the_code_and_field_and_writes_nothing(v1, case, data, message):
    before = snapshot()

    with pytest.raises(CodebookFormatError) as error:
        import_codebook(data=data, fmt="auto")

    assert re.search(message, str(error.value)), str(error.value)
    assert snapshot() == before


def test_too_many_codes_are_refused_before_anything_is_written(v1):
    codes = "".join(code(n, f"C{n}") for n in range(2, MAX_CATEGORIES + 3))
    before = snapshot()

    with pytest.raises(CodebookFormatError, match=r"2,001 codes below the facets, over the limit"):
        import_codebook(data=qdc(code(1, "Symptom", codes)))

    assert snapshot() == before


def test_codes_nested_past_the_depth_limit_are_refused(v1, settings):
    settings.CODEBOOK_MAX_DEPTH = 3
    nested = code(5, "E")
    for n in range(4, 0, -1):
        nested = code(n, "ABCD"[n - 1], nested)

    with pytest.raises(CodebookFormatError) as error:
        import_codebook(data=qdc(nested))

    assert str(error.value) == (
        "code 'E' (line 3, guid 00000000-0000-4000-8000-000000000005): field 'Code': nested "
        "deeper than the limit of 3 levels"
    )


def test_the_pure_module_imports_no_django():
    code = (
        "import sys, taxonomy_app.refi_qda; print(any(m.startswith('django') for m in sys.modules))"
    )

    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# Pages and API ---------------------------------------------------------------------------------


def test_the_upload_check_takes_a_qdc_file():
    check_upload(ContentFile(qdc(code(1, "x")), name="probe.qdc"))  # raises when refused


def test_version_page_links_the_qdc_download_which_validates(owner_client, v1):
    page = owner_client.get(reverse("taxonomy:version", args=[v1.pk]))
    url = reverse("taxonomy:export", args=[v1.pk, "qdc"])

    response = owner_client.get(url)

    assert f'href="{url}"' in page.content.decode()
    assert "Download as REFI-QDA (.qdc)" in page.content.decode()
    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="small-bugs-v1.qdc"'
    assert valid(response.content.decode())


def test_the_download_needs_a_login_like_the_other_exports(client, v1):
    response = client.get(reverse("taxonomy:export", args=[v1.pk, "qdc"]))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_api_exports_qdc(logged_in_client, v1):
    response = logged_in_client.get(reverse("api-version-export", args=[v1.pk, "qdc"]))

    assert response["Content-Type"] == "application/xml; charset=utf-8"
    assert valid(response.content.decode())


def test_import_page_takes_a_qdc_file(owner_client, db):
    upload = SimpleUploadedFile("bug-codes.qdc", foreign_file(), content_type="application/xml")

    response = owner_client.post(reverse("taxonomy:import"), {"file": upload, "format": "auto"})

    version = CodebookVersion.objects.get(codebook__slug="bug-codes")
    assert response.status_code == 302 and response["Location"] == version.get_absolute_url()
    assert version.facets.count() == 4


def test_import_page_round_trips_our_own_download(owner_client, v1):
    exported = owner_client.get(reverse("taxonomy:export", args=[v1.pk, "qdc"])).content
    Codebook.objects.filter(pk=v1.codebook_id).update(slug="original")
    upload = SimpleUploadedFile("small-bugs-v1.qdc", exported)

    response = owner_client.post(reverse("taxonomy:import"), {"file": upload, "format": "qdc"})

    copy = CodebookVersion.objects.get(codebook__slug="small-bugs")
    assert response["Location"] == copy.get_absolute_url()
    assert version_spec(copy).facets == version_spec(v1).facets


def test_import_page_shows_a_bad_qdc_files_error_and_writes_nothing(owner_client, v1):
    data = qdc(code(1, "Symptom", code(2, "Hang") + code(2, "Crash")))
    upload = SimpleUploadedFile("bad.qdc", data)
    before = snapshot()

    response = owner_client.post(reverse("taxonomy:import"), {"file": upload, "format": "auto"})

    assert response.status_code == 400
    assert "field &#x27;guid&#x27;: duplicate guid" in response.content.decode()
    assert "Nothing was imported." in response.content.decode()
    assert snapshot() == before


def test_import_page_refuses_a_qdc_file_past_the_size_limit(owner_client, settings):
    settings.CODEBOOK_MAX_BYTES = 1024
    padding = description("x" * 2048)
    upload = SimpleUploadedFile("big.qdc", qdc(code(1, "Symptom", padding)))
    before = snapshot()

    response = owner_client.post(reverse("taxonomy:import"), {"file": upload, "format": "auto"})

    assert response.status_code == 400
    assert "big.qdc is larger than the limit of 1 KB" in response.content.decode()
    assert snapshot() == before


def test_the_api_imports_qdc_content(owner_client, v1):
    exported = export_version(version=v1, fmt="qdc")
    Codebook.objects.filter(pk=v1.codebook_id).update(slug="original")

    response = owner_client.post(
        reverse("api-codebook-import"),
        {"content": exported, "publish": True},
        content_type="application/json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["status"] == "published"


def test_characters_xml_cannot_hold_are_replaced_not_fatal(v1):
    draft = start_draft(codebook=v1.codebook)
    update_category(category=category(draft, "symptom", "hang"), definition="bell\x07 tab\x0b end")

    exported = export_version(version=draft, fmt="qdc")

    assert valid(exported)
    assert "Definition: bell\ufffd tab\ufffd end" in exported
