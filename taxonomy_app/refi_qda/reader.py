"""A REFI-QDA codebook (.qdc) read into the document the JSON format decodes to, then checked by
formats.parse_codebook; the mapping of codes to facets and categories is in the package
docstring. Imports no Django."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from lxml import etree

from ..formats import (
    MAX_CATEGORIES,
    MAX_DEPTH,
    MAX_NODES,
    NAME_LIMIT,
    CodebookFormatError,
    CodebookSpec,
    parse_codebook,
)
from .descriptions import CATEGORY_LINE, FACET_LINE, Section, rule_fields, unfold
from .markup import INSTRUCTION, bounded, code_place, parse, q

Document = dict[str, Any]
# Where each facet (key, None) and category (key, code) is in the file, for messages.
Places = dict[tuple[str, str | None], str]
_FIELDS = {"Example": "examples", "Examples": "examples"}
_PLACE = re.compile(
    r"^(?:facet '(?P<key>[^']*)'(?:, category '(?P<code>[^']*)')?|rule \d+ \(\S+ (?P<rule>\S+)\))"
)


def read_qdc(
    data: bytes | str, *, name: str = "", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> CodebookSpec:
    """A .qdc file as a CodebookSpec. `name` names the codebook when the file does not (a file
    from another tool). Raises CodebookFormatError naming the code and the field."""
    document, places = qdc_document(data, name=name, max_depth=max_depth, max_nodes=max_nodes)
    try:
        return parse_codebook(document)
    except CodebookFormatError as error:
        raise CodebookFormatError(_with_place(str(error), places)) from None


def qdc_document(
    data: bytes | str, *, name: str = "", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> tuple[Document, Places]:
    """The file as the JSON format's document (unchecked), and where each facet and category
    of it is in the file ("code 'Hang' (line 7, guid …)")."""
    root = parse(data, max_nodes)
    head = _head(root, name)
    codebook = head.get("codebook")
    codebook_name = str(codebook.get("name") or "") if isinstance(codebook, Mapping) else ""
    mapper = _Mapper(codebook_name or "Codes", max_depth)
    facets, rules = mapper.facets(root.find(q("Codes")).findall(q("Code")))
    return {**head, "facets": facets, **({"rules": rules} if rules else {})}, mapper.places


def name_from_filename(filename: str) -> str:
    """A codebook's name from an uploaded file's name: its last part without the extension."""
    base = re.split(r"[/\\]", filename or "")[-1].rsplit(".", 1)[0]
    clean = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return clean[:NAME_LIMIT]


def slug(text: str, limit: int, fallback: str) -> str:
    """The ASCII letters and digits of `text` joined by "-" ("Über-Fehler" → "uber-fehler")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    value = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-")
    return value or fallback


def _head(root: Any, name: str) -> Document:
    """The format, codebook and version of our instruction; else a codebook called `name`."""
    for node in root.itersiblings(preceding=True):
        if isinstance(node, etree._ProcessingInstruction) and node.target == INSTRUCTION:
            return _instruction(node.text or "")
    origin = (root.get("origin") or "").strip()
    name = name.strip() or (f"Codebook from {origin}" if origin else "REFI-QDA codebook")
    name = name[:NAME_LIMIT].strip()
    return {"codebook": {"name": name, "slug": slug(name, 100, "codebook")}}


def _instruction(text: str) -> Document:
    where = f"the <?{INSTRUCTION}?> instruction"
    try:
        head = json.loads(text)
    except json.JSONDecodeError as error:
        raise CodebookFormatError(f"{where}: not valid JSON at column {error.colno}") from None
    if not isinstance(head, dict) or not set(head) <= {"format", "codebook", "version"}:
        raise CodebookFormatError(f"{where}: expected a mapping of format, codebook, version")
    return head


def _with_place(message: str, places: Mapping[tuple[str, str | None], str]) -> str:
    """A message of parse_codebook, with where in the file the facet, category or rule it
    names is (a rule is in its facet's description)."""
    match = _PLACE.match(message)
    if match is None:
        return message
    place = places.get((match.group("key") or match.group("rule"), match.group("code")))
    return f"{place}: {message}" if place else message


class _Mapper:
    """Turns the top-level codes into facets with their categories, and collects the rules."""

    def __init__(self, codebook_name: str, max_depth: int) -> None:
        self.codebook_name = codebook_name
        self.max_depth = max_depth
        self.places: Places = {}
        self.guids: dict[str, str] = {}
        self.keys = _Names(50, "facet")
        self.rules: list[tuple[int, Document, str]] = []  # (position, rule, facet key)

    def facets(self, tops: Sequence[Any]) -> tuple[list[Document], list[Document]]:
        grouped = [bool(_children(top)) or top.get("isCodable") in ("false", "0") for top in tops]
        loose = [top for top, group in zip(tops, grouped, strict=True) if not group]
        _check_size(tops, sum(grouped))
        fields = {
            id(top): self._facet_fields(top) for top, g in zip(tops, grouped, strict=True) if g
        }
        self.keys.reserve(str(f["key"]) for f, _ in fields.values() if f.get("key"))
        facets: list[Document] = []
        for top, group in zip(tops, grouped, strict=True):
            if group:
                facets.append(self._facet(top, *fields[id(top)]))
            elif top is loose[0]:
                facets.append(self._loose_facet(loose))
        return facets, self._ordered_rules()

    def _facet_fields(self, top: Any) -> tuple[Document, list[Section]]:
        """Our fields when the description starts with "Key:" (as we write it): another tool's
        facet-like code may well say "Kind: …" or "Rule 1: …" in prose, which is its help."""
        text = _description(top)
        if not text.startswith("Key:"):
            return {"help": text.strip()}, []
        preamble, sections = unfold(text, FACET_LINE)
        fields: Document = {}
        rules = [section for section in sections if section.number is not None]
        for section in sections:
            if section.number is None:
                self._once(top, fields, section.heading.lower(), section)
        fields["help"] = _joined(preamble, fields.get("help", ""))
        return fields, rules

    def _facet(self, top: Any, fields: Document, rules: list[Section]) -> Document:
        self._remember_guid(top)
        key = fields.get("key") or self.keys.take(top.get("name", ""), top.get("guid", ""))
        self.places[(key, None)] = code_place(top)
        for section in rules:
            try:
                rule = rule_fields(section.value)
            except ValueError as error:
                self._fail(top, section.heading, str(error))
            self.rules.append((section.number or 0, {**rule, "facet": key}, key))
        return {
            "key": key,
            "name": top.get("name", ""),
            "kind": fields.get("kind") or "multi",
            "required": self._yes_no(top, "required", fields.get("required") or "no"),
            "help": fields["help"],
            "categories": self._categories(_children(top), key),
        }

    def _loose_facet(self, loose: Sequence[Any]) -> Document:
        key = self.keys.take(self.codebook_name, "")
        categories = self._categories(loose, key)
        return {"key": key, "name": self.codebook_name, "kind": "multi", "categories": categories}

    def _categories(self, elements: Sequence[Any], key: str) -> list[Document]:
        """The codes below a facet, parents before children in file order; codes read first so
        that codes made from names never take one the file writes."""
        every = list(_descendants(elements, self.max_depth))
        fields = {id(element): self._category_fields(element) for element, _ in every}
        codes = _Names(80, "code")
        codes.reserve(str(f["code"]) for f in fields.values() if f.get("code"))
        code_of: dict[int, str] = {}
        categories: list[Document] = []
        for element, parent in every:
            own = fields[id(element)]
            code = own.pop("code", "") or codes.take(
                element.get("name", ""), element.get("guid", "")
            )
            code_of[id(element)] = code
            self._remember_guid(element)
            self.places[(key, code)] = code_place(element)
            category: Document = {"code": code, "name": element.get("name", "")}
            if parent is not None:
                category["parent"] = code_of[id(parent)]
            categories.append({**category, **own})
        return categories

    def _category_fields(self, element: Any) -> Document:
        preamble, sections = unfold(_description(element), CATEGORY_LINE)
        fields: Document = {}
        for section in sections:
            field = _FIELDS.get(section.heading, section.heading.lower())
            self._once(element, fields, field, section)
        if "archived" in fields:
            fields["archived"] = self._yes_no(element, "archived", fields["archived"])
        definition = _joined(preamble, fields.pop("definition", ""))
        return {**fields, **({"definition": definition} if definition else {})}

    def _once(self, element: Any, fields: Document, field: str, section: Section) -> None:
        if field in fields:
            self._fail(element, field, f"'{section.heading}:' appears twice in the description")
        fields[field] = section.value

    def _ordered_rules(self) -> list[Document]:
        seen: dict[int, str] = {}
        for number, _, key in self.rules:
            if number in seen:
                raise CodebookFormatError(
                    f"{self.places[(key, None)]}: field 'Rule {number}': rule {number} is also "
                    f"in {self.places[(seen[number], None)]}"
                )
            seen[number] = key
        return [rule for _, rule, _ in sorted(self.rules, key=lambda item: item[0])]

    def _remember_guid(self, element: Any) -> None:
        guid = (element.get("guid") or "").strip("{}").lower()
        if guid in self.guids:
            self._fail(element, "guid", f"duplicate guid, also that of {self.guids[guid]}")
        self.guids[guid] = code_place(element)

    def _yes_no(self, element: Any, field: str, value: str) -> bool:
        if value.lower() in ("yes", "true"):
            return True
        if value.lower() in ("no", "false"):
            return False
        self._fail(element, field, f"expected yes or no, got {bounded(repr(value), 80)}")

    def _fail(self, element: Any, field: str, problem: str) -> NoReturn:
        raise CodebookFormatError(f"{code_place(element)}: field {field!r}: {problem}")


class _Names:
    """Keys or codes made from names, unique among those reserved and taken ("-2", "-3")."""

    def __init__(self, limit: int, fallback: str) -> None:
        self.limit = limit
        self.fallback = fallback
        self.used: set[str] = set()

    def reserve(self, names: Iterable[str]) -> None:
        self.used.update(names)

    def take(self, name: str, guid: str) -> str:
        digits = guid.strip("{}")[:8].lower()
        base = slug(name, self.limit - 4, f"{self.fallback}-{digits}" if digits else self.fallback)
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}-{n}"
        self.used.add(candidate)
        return candidate


def _check_size(tops: Sequence[Any], facets: int) -> None:
    codes = sum(1 for top in tops for _ in top.iter(q("Code")))
    if codes - facets > MAX_CATEGORIES:
        raise CodebookFormatError(
            f"field 'Codes': {codes - facets:,} codes below the facets, over the limit of "
            f"{MAX_CATEGORIES:,} categories for a codebook; split it into several codebooks"
        )


def _children(element: Any) -> list[Any]:
    return list(element.findall(q("Code")))


def _description(element: Any) -> str:
    node = element.find(q("Description"))
    return "".join(node.itertext()) if node is not None else ""


def _joined(*texts: str) -> str:
    return "\n\n".join(text for text in texts if text)


def _descendants(elements: Sequence[Any], max_depth: int) -> Iterator[tuple[Any, Any]]:
    """(code, its parent code or None), depth first in file order, no deeper than max_depth."""
    stack: list[tuple[Any, Any, int]] = [(element, None, 1) for element in reversed(elements)]
    while stack:
        element, parent, depth = stack.pop()
        if depth > max_depth:
            raise CodebookFormatError(
                f"{code_place(element)}: field 'Code': nested deeper than the limit of "
                f"{max_depth} levels"
            )
        yield element, parent
        stack.extend((child, element, depth + 1) for child in reversed(_children(element)))
