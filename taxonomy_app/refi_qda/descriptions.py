"""Fields folded into a code's <Description> as "Heading: value" lines, and unfolded back.
Imports no Django.

    Code: hang                  a value of one line follows its heading
    Definition:                 a value of several lines starts on the line below
    The job waits forever:
    \\Include: this line is part of the definition, escaped
    Include: NCCL timeouts.

`unfold(fold(fields))` gives the fields back exactly (each value stripped, as the JSON reader
strips them): a line of a value that would read as a heading is written with one more
backslash in front, and loses it when read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ..formats import rule_document
from ..rules import Rule

FACET_LINE = re.compile(r"^(?P<name>Key|Kind|Required|Help|Rule (?P<number>\d+)):(?P<rest>.*)$")
CATEGORY_LINE = re.compile(
    r"^(?P<name>Code|Archived|Definition|Include|Exclude|Examples?):(?P<rest>.*)$"
)
_BACKSLASHES = re.compile(r"^\\+")


class Section(NamedTuple):
    heading: str  # as written: "Definition", "Rule 3"
    value: str
    number: int | None  # a rule's position


def fold(fields: Sequence[tuple[str, str]], headings: re.Pattern[str]) -> str:
    """Fields as heading lines, empty values left out."""
    parts: list[str] = []
    for heading, value in fields:
        if not value:
            continue
        if "\n" not in value:
            parts.append(f"{heading}: {value}")
            continue
        lines = [
            f"\\{line}" if _reads_as_heading(line, headings) else line for line in value.split("\n")
        ]
        parts.append(f"{heading}:\n" + "\n".join(lines))
    return "\n".join(parts)


def unfold(text: str, headings: re.Pattern[str]) -> tuple[str, list[Section]]:
    """The text before the first heading, and each heading with its value, in order."""
    preamble: list[str] = []
    found: list[tuple[re.Match[str], list[str]]] = []
    current = preamble
    for line in text.split("\n"):
        match = headings.match(line)
        if match:
            current = [match.group("rest")]
            found.append((match, current))
        else:
            current.append(line[1:] if _reads_as_heading(line, headings) else line)
    sections = [
        Section(match.group("name"), "\n".join(lines).strip(), _number(match))
        for match, lines in found
    ]
    return "\n".join(preamble).strip(), sections


def _reads_as_heading(line: str, headings: re.Pattern[str]) -> bool:
    """A heading, maybe after backslashes: escaped when written, unescaped when read (a line
    read that matches it and is not itself a heading starts with a backslash)."""
    return headings.match(_BACKSLASHES.sub("", line)) is not None


def _number(match: re.Match[str]) -> int | None:
    number = match.groupdict().get("number")
    return int(number) if number else None


def rule_line(rule: Rule) -> str:
    """A rule as one line: its kind, then `field=value` for each field its document holds
    (lists comma-separated; codes and keys hold no comma or space)."""
    fields = [
        f"{field}={','.join(value) if isinstance(value, list) else value}"
        for field, value in rule_document(rule).items()
        if field not in ("kind", "facet")
    ]
    return " ".join([rule.kind, *fields])


def rule_fields(line: str) -> dict[str, object]:
    """`rule_line` reversed: the rule's fields, its facet aside (values are left for
    formats.parse_codebook to check). ValueError names a part that is not `field=value`."""
    kind, *pairs = line.split() or [""]
    rule: dict[str, object] = {"kind": kind}
    for pair in pairs:
        field, equals, value = pair.partition("=")
        if not equals:
            raise ValueError(f"expected field=value, got {pair!r}")
        if field in ("when_categories", "categories"):
            rule[field] = [code for code in value.split(",") if code]
        else:
            rule[field] = int(value) if value.isdigit() else value
    return rule
