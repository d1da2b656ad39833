"""The codebook file format (JSON or YAML): parse and validate, and write. Imports no Django.

A document is a mapping:

    format: annotator-codebook/1          # optional when reading
    codebook: {name, slug, description}   # name required; slug defaults from the name
    version: {number, status, changelog}  # informational; changelog is kept on import
    facets:                               # in order
      - key: symptom                      # unique; letters, digits, - and _
        name: Symptom
        kind: single | multi
        required: false
        help: ...
        categories:                       # in order; `parent` names a code of the same facet
          - {code, name, parent, definition, include, exclude, examples, archived}
    rules:                                # optional; see taxonomy_app.rules for the kinds
      - {kind: requires, facet: symptom, when_facet: screening, when_categories: [relevant]}
      - {kind: forbids, facet: symptom, when_facet: screening, when_categories: [not-a-bug]}
      - {kind: leaf_only, facet: symptom, categories: []}   # groups that stay selectable
      - {kind: exclusive, facet: fix-pattern, categories: [other, change-hardware]}
      - {kind: max_choices, facet: fix-pattern, max_choices: 3}

Every problem is reported as a `CodebookFormatError` naming the facet key, the category code and
the field, e.g. "facet 'symptom', category 'oom': field 'parent': unknown parent 'memory'", and
each rule by its position, kind and facet, e.g. "rule 2 (requires symptom): field
'when_categories': 'yes' is not a category of facet 'screening'".
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NoReturn, cast

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from .rules import KINDS, FacetInfo, Rule, RuleError, check_rules

FORMAT = "annotator-codebook/1"
FACET_KINDS = ("single", "multi")
NAME_LIMIT = 200
SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")
TEXT_FIELDS = ("definition", "include", "exclude", "examples")
CODEBOOK_FIELDS = {"name", "slug", "description"}
FACET_FIELDS = {"key", "name", "kind", "required", "help", "categories"}
CATEGORY_FIELDS = {"code", "name", "parent", "archived", *TEXT_FIELDS}
RULE_FIELDS = {"kind", "facet", "when_facet", "when_categories", "categories", "max_choices"}


class CodebookFormatError(ValueError):
    """A codebook file that cannot be imported; the message names the element and field."""


@dataclass(frozen=True)
class CategorySpec:
    code: str
    name: str
    parent: str | None = None
    definition: str = ""
    include: str = ""
    exclude: str = ""
    examples: str = ""
    archived: bool = False


@dataclass(frozen=True)
class FacetSpec:
    key: str
    name: str
    kind: str = "single"
    required: bool = False
    help: str = ""
    categories: tuple[CategorySpec, ...] = ()


@dataclass(frozen=True)
class CodebookSpec:
    name: str
    slug: str
    description: str = ""
    changelog: str = ""
    facets: tuple[FacetSpec, ...] = ()
    rules: tuple[Rule, ...] = ()


# Reading -------------------------------------------------------------------------------------


# A codebook nests 5 levels (facets, a facet, its categories, a category, its examples); deeper
# input is refused before it is built (settings.CODEBOOK_MAX_DEPTH where the project sets it).
MAX_DEPTH = 32
# The seed codebook (38 KB) holds 65 categories and ~1,100 YAML values (keys, scalars, lists and
# mappings). A file past either limit is refused: the values as the YAML is composed (before
# the rest is read), the categories before anything is written (each is a row to insert).
MAX_NODES = 50_000
MAX_CATEGORIES = 2_000
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class _PythonParser(Reader, Scanner, Parser):
    """PyYAML's pure-Python scanner and parser (those of yaml.SafeLoader)."""

    def __init__(self, stream: Any) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


try:  # libyaml's scanner and parser, as yaml.CSafeLoader uses
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _Parser = _PythonParser  # type: ignore[assignment,misc]


class _Checks(Composer, SafeConstructor, Resolver):
    """yaml.safe_load's loader, refusing aliases (*name): nine aliases of nine aliases… build
    a value of 9**9 strings from a few hundred bytes ("billion laughs"), which any later walk
    or message would expand. A codebook needs none; the exporter writes none (_Dumper).
    It also refuses nesting past `max_depth` and more than `max_nodes` values, as it composes
    (before the recursion would, and before the rest of the file is built).

    Events come from libyaml (C) when PyYAML has it, as in yaml.CSafeLoader; composing stays in
    Python (yaml.composer.Composer), so the checks above see every node: about six times as
    fast as yaml.SafeLoader, whose scanner is pure Python (benchmarks/upload_parsing.py).
    libyaml reads flow nesting ahead (to 1,000 levels, then fails): such a file is read again
    by `_PythonLoader`, which stops at the limit, to name the line and column where it is passed.
    """

    max_depth = MAX_DEPTH
    max_nodes = MAX_NODES
    _depth = 0
    _nodes = 0

    parser: Any = None  # the class giving the events

    def __init__(self, stream: Any) -> None:
        self.parser.__init__(self, stream)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        Composer.__init__(self)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = cast(Any, self).peek_event()  # the parser's
        mark: Any = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            raise CodebookFormatError(
                f"not valid YAML at line {mark.line + 1}: aliases such as "
                f"*{event.anchor} are not accepted in a codebook"
            )
        self._nodes += 1
        if self._nodes > self.max_nodes:
            raise CodebookFormatError(
                f"too large at line {mark.line + 1}: more than {self.max_nodes:,} values (keys, "
                "texts, lists), the limit of a codebook; split it into several codebooks"
            )
        if not isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.max_depth:
            raise CodebookFormatError(
                f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: nested "
                f"deeper than the limit of {self.max_depth} levels"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _SafeLoaderWithoutAliases(_Checks, _Parser):
    """The checks over libyaml's events (when PyYAML has libyaml)."""

    parser = _Parser


class _PythonLoader(_Checks, _PythonParser):
    """The same checks over PyYAML's pure-Python events."""

    parser = _PythonParser


def _check_json_depth(text: str, limit: int) -> None:
    """Refuse JSON nested deeper than `limit` before json.loads recurses into it."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        if token.group() in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, token.start()) + 1
                column = token.start() - text.rfind("\n", 0, token.start())
                raise CodebookFormatError(
                    f"not valid JSON at line {line}, column {column}: nested deeper than the "
                    f"limit of {limit} levels"
                )
        elif token.group() in "]}":
            depth -= 1


def load_document(
    data: bytes | str, fmt: str = "auto", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> Any:
    """Decode JSON or YAML text (fmt "json", "yaml" or "auto": JSON when it starts with "{"),
    refusing nesting deeper than `max_depth` with the line and column, and YAML of more than
    `max_nodes` values with the line reached (JSON is parsed in C, in a fraction of the time)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise CodebookFormatError(f"the file is not UTF-8 text (byte {error.start})") from error
    if not text.strip():
        raise CodebookFormatError("the file is empty")
    if fmt == "json" or (fmt == "auto" and text.lstrip().startswith("{")):
        _check_json_depth(text, max_depth)
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise CodebookFormatError(
                f"not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
            ) from error
        except RecursionError:
            raise CodebookFormatError("not valid JSON: nested too deeply") from None
    try:
        return _load_yaml(_SafeLoaderWithoutAliases, text, max_depth, max_nodes)
    except yaml.YAMLError as error:
        if "maximum nesting depth" not in str(getattr(error, "problem", "")):
            return _yaml_error(error)
    try:  # nested past libyaml's own limit: the Python parser names where ours is passed
        return _load_yaml(_PythonLoader, text, max_depth, max_nodes)
    except RecursionError:
        raise CodebookFormatError("not valid YAML: nested too deeply") from None
    except yaml.YAMLError as error:
        return _yaml_error(error)


def _load_yaml(loader_class: Any, text: str, max_depth: int, max_nodes: int) -> Any:
    loader = loader_class(text)  # a SafeLoader, as safe_load
    loader.max_depth, loader.max_nodes = max_depth, max_nodes
    return loader.get_single_data()


def _yaml_error(error: yaml.YAMLError) -> NoReturn:
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(error, "problem", None) or str(error)
    raise CodebookFormatError(f"not valid YAML{where}: {problem}") from error


def parse_codebook(document: Any) -> CodebookSpec:
    """Validate a decoded document and return it as a CodebookSpec (categories keep file order)."""
    if not isinstance(document, Mapping):
        raise CodebookFormatError("the file must hold a mapping with 'codebook' and 'facets'")
    if document.get("format", FORMAT) != FORMAT:
        raise CodebookFormatError(f"field 'format': expected {FORMAT!r}")
    head = _mapping(document.get("codebook"), "codebook")
    _check_fields(head, "codebook", CODEBOOK_FIELDS)
    name = _text(head, "name", "codebook", required=True)
    slug = _text(head, "slug", "codebook") or slugify(name)
    _check_slug(slug, "codebook", "slug")
    version = document.get("version") or {}
    changelog = _text(version, "changelog", "version") if isinstance(version, Mapping) else ""
    facets = document.get("facets")
    if not isinstance(facets, list) or not facets:
        raise CodebookFormatError("field 'facets': a non-empty list of facets is required")
    categories = sum(len(f.get("categories") or []) for f in facets if isinstance(f, Mapping))
    if categories > MAX_CATEGORIES:
        raise CodebookFormatError(
            f"field 'facets': {categories:,} categories, over the limit of {MAX_CATEGORIES:,} "
            "for a codebook; split it into several codebooks"
        )
    specs = tuple(_parse_facet(raw, index) for index, raw in enumerate(facets, 1))
    _check_unique([facet.key for facet in specs], lambda key: f"facet {key!r}", "key")
    return CodebookSpec(
        name=name,
        slug=slug,
        description=_text(head, "description", "codebook"),
        changelog=changelog,
        facets=specs,
        rules=_parse_rules(document.get("rules"), specs),
    )


def facet_infos(facets: Sequence[FacetSpec]) -> dict[str, FacetInfo]:
    """The facets as the rules see them (groups: active categories with active children)."""
    infos: dict[str, FacetInfo] = {}
    for facet in facets:
        active = [c for c in facet.categories if not c.archived]
        groups = frozenset(c.parent for c in active if c.parent is not None)
        infos[facet.key] = FacetInfo(
            key=facet.key,
            name=facet.name,
            multi=facet.kind == "multi",
            categories={c.code: c.name for c in facet.categories},
            groups=groups & {c.code for c in active},
        )
    return infos


def _parse_rules(raw: Any, facets: Sequence[FacetSpec]) -> tuple[Rule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CodebookFormatError("field 'rules': expected a list of rules")
    rules = tuple(_parse_rule(item, n) for n, item in enumerate(raw, 1))
    try:
        check_rules(rules, facet_infos(facets))
    except RuleError as error:
        raise CodebookFormatError(str(error)) from None
    return rules


def _parse_rule(raw: Any, index: int) -> Rule:
    rule = _mapping(raw, f"rule {index}")
    kind, facet = rule.get("kind"), rule.get("facet")
    where = f"rule {index}" + (f" ({kind} {facet})" if isinstance(kind, str) else "")
    _check_fields(rule, where, RULE_FIELDS)
    if not isinstance(kind, str) or kind not in KINDS:
        expected = ", ".join(KINDS)
        got = reprlib.repr(kind)
        raise CodebookFormatError(
            f"{where}: field 'kind': unknown rule kind {got} (expected one of {expected})"
        )
    when_facet = rule.get("when_facet")
    if when_facet is not None and not isinstance(when_facet, str):
        raise CodebookFormatError(f"{where}: field 'when_facet': expected a facet key")
    maximum = rule.get("max_choices")
    if maximum is not None and (isinstance(maximum, bool) or not isinstance(maximum, int)):
        raise CodebookFormatError(f"{where}: field 'max_choices': expected a whole number")
    return Rule(
        kind=kind,
        facet=_text(rule, "facet", where, required=True),
        when_facet=when_facet or None,
        when_categories=_codes(rule, "when_categories", where),
        categories=_codes(rule, "categories", where),
        max_choices=maximum,
    )


def _codes(raw: Mapping[str, Any], field: str, where: str) -> tuple[str, ...]:
    value = raw.get(field) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise CodebookFormatError(f"{where}: field {field!r}: expected a list of category codes")
    return tuple(value)


def _parse_facet(raw: Any, index: int) -> FacetSpec:
    where = f"facet {index}"
    facet = _mapping(raw, where)
    key = _text(facet, "key", where, required=True)
    where = f"facet {key!r}"
    _check_slug(key, where, "key")
    _check_fields(facet, where, FACET_FIELDS)
    kind = facet.get("kind", "single")
    if kind not in FACET_KINDS:
        raise CodebookFormatError(
            f"{where}: field 'kind': unknown facet kind {kind!r} (expected single or multi)"
        )
    categories = facet.get("categories") or []
    if not isinstance(categories, list):
        raise CodebookFormatError(f"{where}: field 'categories': expected a list")
    specs = tuple(_parse_category(item, where, n) for n, item in enumerate(categories, 1))
    _check_unique([c.code for c in specs], lambda code: f"{where}, category {code!r}", "code")
    _check_hierarchy(specs, where)
    return FacetSpec(
        key=key,
        name=_text(facet, "name", where, required=True),
        kind=kind,
        required=_bool(facet, "required", where),
        help=_text(facet, "help", where),
        categories=specs,
    )


def _parse_category(raw: Any, facet: str, index: int) -> CategorySpec:
    where = f"{facet}, category {index}"
    category = _mapping(raw, where)
    code = _text(category, "code", where, required=True)
    where = f"{facet}, category {code!r}"
    _check_slug(code, where, "code")
    _check_fields(category, where, CATEGORY_FIELDS)
    parent = category.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise CodebookFormatError(f"{where}: field 'parent': expected a category code")
    return CategorySpec(
        code=code,
        name=_text(category, "name", where, required=True),
        parent=parent or None,
        archived=_bool(category, "archived", where),
        **{field: _text(category, field, where) for field in TEXT_FIELDS},
    )


def _check_hierarchy(categories: Sequence[CategorySpec], facet: str) -> None:
    parents = {c.code: c.parent for c in categories}
    for category in categories:
        if category.parent is not None and category.parent not in parents:
            raise CodebookFormatError(
                f"{facet}, category {category.code!r}: field 'parent': "
                f"unknown parent {category.parent!r}"
            )
    for category in categories:
        path, code = [category.code], category.parent
        while code is not None:
            path.append(code)
            if code == category.code:
                raise CodebookFormatError(
                    f"{facet}, category {category.code!r}: field 'parent': "
                    f"cycle in the hierarchy: {' → '.join(path)}"
                )
            if len(path) > len(parents) + 1:
                break  # a cycle further up, reported when its own members are checked
            code = parents[code]


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise CodebookFormatError(f"{where}: expected a mapping of fields")
    return raw


def _check_fields(raw: Mapping[str, Any], where: str, allowed: set[str]) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        expected = ", ".join(sorted(allowed))
        raise CodebookFormatError(
            f"{where}: field {unknown[0]!r}: unknown field (expected one of {expected})"
        )


def _text(raw: Mapping[str, Any], field: str, where: str, *, required: bool = False) -> str:
    value = raw.get(field)
    if value is None or value == "":
        if required:
            raise CodebookFormatError(f"{where}: field {field!r}: missing")
        return ""
    if not isinstance(value, str):
        got = reprlib.repr(value)  # bounded: the value may be huge
        raise CodebookFormatError(f"{where}: field {field!r}: expected text, got {got}")
    if field == "name" and len(value.strip()) > NAME_LIMIT:
        raise CodebookFormatError(f"{where}: field 'name': longer than {NAME_LIMIT} characters")
    return value.strip()


def _bool(raw: Mapping[str, Any], field: str, where: str) -> bool:
    value = raw.get(field, False)
    if not isinstance(value, bool):
        raise CodebookFormatError(f"{where}: field {field!r}: expected true or false")
    return value


def _check_slug(value: str, where: str, field: str) -> None:
    limit = 50 if field == "key" else 80 if field == "code" else 100
    if not SLUG.match(value) or len(value) > limit:
        raise CodebookFormatError(
            f"{where}: field {field!r}: {value!r} must be at most {limit} letters, digits, - or _"
        )


def _check_unique(values: Sequence[str], where: Any, field: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            message = f"{where(value)}: field {field!r}: duplicate {field} {value!r}"
            raise CodebookFormatError(message)
        seen.add(value)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:100] or "codebook"


# Writing -------------------------------------------------------------------------------------


def to_document(
    spec: CodebookSpec, *, number: int | None = None, status: str = ""
) -> dict[str, Any]:
    """The document for a spec: fields in a fixed order, empty optional fields left out."""
    version: dict[str, Any] = {"number": number, "status": status, "changelog": spec.changelog}
    return {
        "format": FORMAT,
        "codebook": {"name": spec.name, "slug": spec.slug, "description": spec.description},
        "version": {key: value for key, value in version.items() if value not in (None, "")},
        "facets": [_facet_document(facet) for facet in spec.facets],
        **({"rules": [rule_document(rule) for rule in spec.rules]} if spec.rules else {}),
    }


def rule_document(rule: Rule) -> dict[str, Any]:
    """A rule as the file holds it: kind and facet, then only the fields it uses."""
    document: dict[str, Any] = {"kind": rule.kind, "facet": rule.facet}
    if rule.when_facet is not None:
        document["when_facet"] = rule.when_facet
        document["when_categories"] = list(rule.when_categories)
    if rule.categories:
        document["categories"] = list(rule.categories)
    if rule.max_choices is not None:
        document["max_choices"] = rule.max_choices
    return document


def _facet_document(facet: FacetSpec) -> dict[str, Any]:
    document = {key: value for key, value in asdict(facet).items() if key != "categories"}
    document["categories"] = [_category_document(c) for c in facet.categories]
    return document


def _category_document(category: CategorySpec) -> dict[str, Any]:
    document: dict[str, Any] = {"code": category.code, "name": category.name}
    if category.parent:
        document["parent"] = category.parent
    document.update({field: getattr(category, field) for field in TEXT_FIELDS})
    if category.archived:
        document["archived"] = True
    return document


class _Dumper(yaml.SafeDumper):
    """Writes multi-line text as literal blocks, so a YAML export reads like the guideline,
    and never an alias: the reader refuses them."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_text)


def dump_document(document: Mapping[str, Any], fmt: str) -> str:
    """The document as JSON (indented) or YAML text."""
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    raise ValueError(f"unknown format {fmt!r} (expected json or yaml)")
