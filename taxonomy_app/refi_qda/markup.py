"""The XML side of a .qdc file: parsing it safely, validating it against Codebook.xsd, and naming
its elements in messages. Imports no Django."""

from __future__ import annotations

import re
import threading
from functools import cache
from pathlib import Path
from typing import Any

from lxml import etree

from ..formats import CodebookFormatError

NAMESPACE = "urn:QDA-XML:codebook:1.0"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "Codebook.xsd"
INSTRUCTION = "annotator-codebook"  # the processing instruction holding the codebook's head
# Refused anywhere in the file, before lxml sees it (like annotator/uploads.py's XLSX scan).
_DECLARATIONS = (b"<!doctype", b"<!entity")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_lock = threading.Lock()  # an XMLSchema keeps the last validation's errors on itself


def q(tag: str) -> str:
    """An element name of the codebook namespace, as lxml spells it."""
    return f"{{{NAMESPACE}}}{tag}"


def xml_text(text: str) -> str:
    """Text XML 1.0 can hold: control characters it cannot (no codebook needs one) become U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def looks_like_qdc(data: bytes | str) -> bool:
    """Whether a file is XML rather than JSON or YAML: its first character is "<"."""
    head = data[:1024]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return text.lstrip("\ufeff \t\r\n").startswith("<")


def parse(data: bytes | str, max_nodes: int) -> Any:
    """The root <CodeBook> of a file valid against Codebook.xsd, or CodebookFormatError."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not raw.strip():
        raise CodebookFormatError("the file is empty")
    if any(declaration in raw.lower() for declaration in _DECLARATIONS):
        raise CodebookFormatError(
            "not a REFI-QDA codebook: it declares a DOCTYPE or entities, which a codebook never "
            "needs (they can read local files or exhaust memory)"
        )
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as error:
        line, column = error.position
        message = f"not valid XML at line {line}, column {column}: {error.msg}"
        raise CodebookFormatError(message) from None
    _check_root(root, max_nodes)
    _validate(root)
    return root


def _check_root(root: Any, max_nodes: int) -> None:
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise CodebookFormatError("not a REFI-QDA codebook: it declares a DOCTYPE")
    if root.tag != q("CodeBook"):
        raise CodebookFormatError(f"not a REFI-QDA codebook: {_root_problem(root)}")
    count = sum(1 for _ in root.iter())
    if count > max_nodes:
        raise CodebookFormatError(
            f"too large: {count:,} XML elements, more than the limit of {max_nodes:,} for a "
            "codebook; split it into several codebooks"
        )
    sets = root.find(q("Sets"))
    if sets is not None and len(sets) == 0:
        root.remove(sets)  # Taguette writes an empty <Sets/>, which the schema does not allow


def _root_problem(root: Any) -> str:
    name = etree.QName(root)
    namespace = f' xmlns="{name.namespace}"' if name.namespace else " without a namespace"
    project = name.localname == "Project"
    hint = " (a REFI-QDA project: export its codebook as .qdc instead)" if project else ""
    expected = f'expected <CodeBook xmlns="{NAMESPACE}">'
    return f"the root element is <{name.localname}>{namespace}{hint}; {expected}"


@cache
def schema() -> Any:
    """Codebook.xsd of REFI-QDA 1.0, compiled once."""
    return etree.XMLSchema(etree.parse(str(SCHEMA_PATH)))


def _validate(root: Any) -> None:
    tree = root.getroottree()
    with _lock:
        if schema().validate(tree):
            return
        entry = schema().error_log[0]
    raise CodebookFormatError(
        f"not a valid REFI-QDA codebook at line {entry.line}: {_schema_problem(tree, entry)}"
    )


def _schema_problem(tree: Any, entry: Any) -> str:
    """The first schema error, naming the code and the field (the attribute or element)."""
    found = tree.xpath(entry.path) if entry.path else []
    element = found[0] if found else None
    message = entry.message.replace(f"{{{NAMESPACE}}}", "")
    attribute = re.search(r"attribute '(\w+)'", message)
    if element is None:
        return bounded(message)
    if attribute is None:
        detail = re.sub(r"^Element '[^']*': ", "", message)
        return f"{element_place(element)}: {bounded(detail)}"
    field = attribute.group(1)
    problem = _attribute_problem(field, element.get(field), message)
    return f"{element_place(element)}: field {field!r}: {problem}"


def _attribute_problem(field: str, value: str | None, message: str) -> str:
    if value is None:
        return "missing"
    shown = bounded(repr(value), 80)
    if field == "guid":
        return f"{shown} is not a GUID (such as 0c5e2f0a-3b1d-4c8e-9f7a-1d2e3f4a5b6c)"
    if field == "color":
        return f"{shown} is not a colour (#RRGGBB or #RGB)"
    if "boolean" in message:
        return f"expected true or false, got {shown}"
    return bounded(re.sub(r"^Element '[^']*', attribute '\w+': ", "", message))


def element_place(element: Any) -> str:
    """How messages name an element: a code, a set, or another element and where it is."""
    if element.tag == q("Code"):
        return code_place(element)
    name = etree.QName(element).localname if isinstance(element.tag, str) else "?"
    if name == "Set":
        return f"set {element.get('name', '')!r} (line {element.sourceline})"
    parent = element.getparent()
    return f"element <{name}>" + (f" in {element_place(parent)}" if parent is not None else "")


def code_place(element: Any) -> str:
    """How messages name a code of the file: "code 'Hang' (line 7, guid …)"."""
    guid = element.get("guid")
    where = [f"line {element.sourceline}"] + ([f"guid {guid}"] if guid else [])
    return f"code {bounded(repr(element.get('name', '')), 120)} ({', '.join(where)})"


def bounded(text: str, limit: int = 300) -> str:
    """At most `limit` characters of a message part (a value may be huge)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
