"""A codebook as a REFI-QDA codebook (.qdc); where each field goes is in the package docstring.
Imports no Django."""

from __future__ import annotations

import json
import uuid
from typing import Any

from lxml import etree

from ..formats import FORMAT, CategorySpec, CodebookSpec, FacetSpec, to_document
from ..rules import Rule
from .descriptions import CATEGORY_LINE, FACET_LINE, fold, rule_line
from .markup import INSTRUCTION, NAMESPACE, q, xml_text

# Tableau 10: distinct on screen and in print. Facet n takes colour n (mod 10), and so do its
# categories: the colour says which facet a code belongs to.
PALETTE = (
    "#4E79A7",
    "#F28E2B",
    "#E15759",
    "#76B7B2",
    "#59A14F",
    "#EDC948",
    "#B07AA1",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
)
# The namespace of our guids: changing it changes every guid ever exported.
GUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://annotator.invalid/refi-qda/codebook")
RuleNumbers = dict[str, list[tuple[int, Rule]]]


def write_qdc(spec: CodebookSpec, *, number: int | None = None, status: str = "") -> str:
    """The codebook as a .qdc document: facets as top-level codes, categories inside them; the
    same spec gives the same text."""
    origin = f"annotator ({FORMAT}): {spec.name}" + (f" v{number}" if number else "")
    root = etree.Element(q("CodeBook"), nsmap={None: NAMESPACE}, origin=xml_text(origin))
    codes = etree.SubElement(root, q("Codes"))
    rules: RuleNumbers = {}
    for position, rule in enumerate(spec.rules, 1):
        rules.setdefault(rule.facet, []).append((position, rule))
    for index, facet in enumerate(spec.facets):
        _facet(codes, spec.slug, facet, PALETTE[index % len(PALETTE)], rules)
    root.addprevious(etree.ProcessingInstruction(INSTRUCTION, _head(spec, number, status)))
    text = etree.tostring(
        root.getroottree(), xml_declaration=True, encoding="UTF-8", pretty_print=True
    )
    return bytes(text).decode("utf-8")


def _head(spec: CodebookSpec, number: int | None, status: str) -> str:
    """The JSON format's head: format, codebook {name, slug, description}, version."""
    head = CodebookSpec(spec.name, spec.slug, spec.description, spec.changelog)
    document = to_document(head, number=number, status=status)
    info = {key: document[key] for key in ("format", "codebook", "version")}
    # "?>" would end the instruction; JSON may write ">" as \u003e inside a string.
    return xml_text(json.dumps(info, ensure_ascii=False).replace("?>", "?\\u003e"))


def _facet(codes: Any, slug: str, facet: FacetSpec, color: str, rules: RuleNumbers) -> None:
    lines = [("Key", facet.key), ("Kind", facet.kind), ("Required", _yes_no(facet.required))]
    lines += [(f"Rule {n}", rule_line(rule)) for n, rule in rules.get(facet.key, [])]
    lines.append(("Help", facet.help))
    description = fold(lines, FACET_LINE)
    element = _code(codes, guid(slug, facet.key), facet.name, False, color, description)
    children: dict[str | None, list[CategorySpec]] = {}
    for category in facet.categories:
        children.setdefault(category.parent, []).append(category)
    # Depth first without recursion: a hierarchy may be deeper than Python's stack.
    stack = [(element, category) for category in reversed(children.get(None, []))]
    while stack:
        parent, category = stack.pop()
        node = _category(parent, guid(slug, facet.key, category.code), category, color)
        stack.extend((node, child) for child in reversed(children.get(category.code, [])))


def _category(parent: Any, code_guid: str, category: CategorySpec, color: str) -> Any:
    lines = [
        ("Code", category.code),
        ("Archived", "yes" if category.archived else ""),
        ("Definition", category.definition),
        ("Include", category.include),
        ("Exclude", category.exclude),
        ("Example", category.examples),
    ]
    description = fold(lines, CATEGORY_LINE)
    return _code(parent, code_guid, category.name, not category.archived, color, description)


def _code(
    parent: Any, code_guid: str, name: str, codable: bool, color: str, description: str
) -> Any:
    element = etree.SubElement(
        parent,
        q("Code"),
        guid=code_guid,
        name=xml_text(name),
        isCodable="true" if codable else "false",
        color=color,
    )
    if description:
        etree.SubElement(element, q("Description")).text = xml_text(description)
    return element


def guid(*parts: str) -> str:
    """The guid of a facet (slug, key) or category (slug, key, code): the same every export."""
    return str(uuid.uuid5(GUID_NAMESPACE, "/".join(parts)))


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"
