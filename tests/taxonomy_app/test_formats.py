"""The pure codebook file format: every malformed file gets a message naming element and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taxonomy_app.formats import (
    CodebookFormatError,
    dump_document,
    load_document,
    parse_codebook,
    to_document,
)
from tests.taxonomy_app.factories import small_document

ROOT = Path(__file__).resolve().parents[2]


def with_category(facet_index: int, index: int, **fields: object) -> dict:
    document = small_document()
    document["facets"][facet_index]["categories"][index].update(fields)
    return document


def with_facet(index: int, **fields: object) -> dict:
    document = small_document()
    document["facets"][index].update(fields)
    return document


def cycle() -> dict:
    document = with_category(1, 0, parent="crash")  # failure → crash → failure
    return document


BAD_DOCUMENTS = [
    ("not a mapping", [1, 2], r"mapping with 'codebook' and 'facets'"),
    (
        "no codebook name",
        small_document(codebook={"slug": "x"}),
        r"codebook: field 'name': missing",
    ),
    ("no facets", small_document(facets=[]), r"field 'facets'"),
    (
        "unknown facet kind",
        with_facet(1, kind="tree"),
        r"facet 'symptom': field 'kind': unknown facet kind 'tree'",
    ),
    (
        "duplicate facet key",
        with_facet(2, key="symptom"),
        r"facet 'symptom': field 'key': duplicate key",
    ),
    ("facet without key", with_facet(0, key=""), r"facet 1: field 'key': missing"),
    ("bad facet key", with_facet(0, key="a b"), r"facet 'a b': field 'key'"),
    (
        "required not bool",
        with_facet(0, required="yes"),
        r"facet 'screening': field 'required': expected true or false",
    ),
    (
        "unknown parent",
        with_category(1, 1, parent="memory"),
        r"facet 'symptom', category 'hang': field 'parent': unknown parent 'memory'",
    ),
    (
        "duplicate code",
        with_category(1, 2, code="hang"),
        r"facet 'symptom', category 'hang': field 'code': duplicate code 'hang'",
    ),
    (
        "cycle",
        cycle(),
        r"facet 'symptom', category 'failure': field 'parent': cycle in the hierarchy: failure → crash → failure",
    ),
    (
        "own parent",
        with_category(1, 4, parent="slow"),
        r"category 'slow': field 'parent': cycle in the hierarchy: slow → slow",
    ),
    (
        "category without name",
        with_category(0, 0, name=""),
        r"facet 'screening', category 'relevant': field 'name': missing",
    ),
    (
        "category without code",
        with_category(0, 1, code=None),
        r"facet 'screening', category 2: field 'code': missing",
    ),
    (
        "text not a string",
        with_category(1, 1, definition=["a"]),
        r"category 'hang': field 'definition': expected text",
    ),
    (
        "unknown field",
        with_category(1, 1, defintion="typo"),
        r"category 'hang': field 'defintion': unknown field",
    ),
    (
        "name too long",
        with_category(1, 1, name="x" * 201),
        r"category 'hang': field 'name': longer than 200",
    ),
    ("wrong format tag", small_document(format="other/2"), r"field 'format'"),
]


@pytest.mark.parametrize(
    ("case", "document", "message"), BAD_DOCUMENTS, ids=[c[0] for c in BAD_DOCUMENTS]
)
def test_malformed_document_is_refused_naming_element_and_field(case, document, message):
    with pytest.raises(CodebookFormatError, match=message):
        parse_codebook(document)


BAD_TEXTS = [
    ("empty", b"", "auto", r"empty"),
    ("invalid json", b'{"codebook": ', "json", r"not valid JSON at line 1"),
    ("invalid yaml", b"codebook: [unclosed\nfacets: x", "yaml", r"not valid YAML at line"),
    ("not utf-8", b"\xff\xfe", "auto", r"not UTF-8"),
]


@pytest.mark.parametrize(
    ("case", "data", "fmt", "message"), BAD_TEXTS, ids=[c[0] for c in BAD_TEXTS]
)
def test_undecodable_file_is_refused_with_the_place(case, data, fmt, message):
    with pytest.raises(CodebookFormatError, match=message):
        load_document(data, fmt)


def test_parents_may_come_after_their_children():
    document = small_document()
    categories = document["facets"][1]["categories"]
    document["facets"][1]["categories"] = [*categories[1:], categories[0]]

    spec = parse_codebook(document)

    assert [c.code for c in spec.facets[1].categories][-1] == "failure"


def test_slug_defaults_from_the_name():
    spec = parse_codebook(small_document(codebook={"name": "My Bugs & Co"}))

    assert spec.slug == "my-bugs-co"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_dump_then_load_gives_the_same_spec(fmt):
    spec = parse_codebook(small_document())

    text = dump_document(to_document(spec, number=3, status="published"), fmt)

    assert parse_codebook(load_document(text, fmt)) == spec


def test_yaml_writes_multi_line_text_as_literal_blocks():
    document = with_category(1, 1, definition="First line.\nSecond line.")
    text = dump_document(to_document(parse_codebook(document)), "yaml")

    assert "definition: |-\n" in text or "definition: |\n" in text
    assert json.loads(json.dumps(load_document(text, "yaml")))  # plain data only


def test_formats_module_imports_no_django():
    code = (
        "import sys, taxonomy_app.formats; print(any(m.startswith('django') for m in sys.modules))"
    )

    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
