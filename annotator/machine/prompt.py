"""Prompts from the codebook, the answer's JSON schema, and reading an answer back.

The prompt (PROMPT_VERSION) is the published codebook version — each facet's name, help, kind,
whether it is required, its label rules in words, and each category's code, name, definition,
include and exclude notes and example — then the issue thread: title, body, comments oldest
first. The thread is cut to the rater's token budget by one recorded rule (`cut_thread`).

Answers are asked for with a JSON schema (`response_format`, "json_schema", strict) whose values
are the codebook's codes; an answer is read back against the codebook and its rules, and one
outside them is invalid, with the reason — never mapped to a near code.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotator.studies.codebook import CodebookSchema

PROMPT_VERSION = "v1"
CHARS_PER_TOKEN = 4  # the estimate used for budgets and cost (no tokenizer per model)
CUT_RULE = (
    "tokens estimated as characters / 4; the codebook part is never cut; the thread gets the "
    "rest of the budget: the title whole, then the body up to half of what is left, then the "
    "comments oldest first while they fit, each cut at the end; what was cut is recorded"
)

SYSTEM = (
    "You label GitHub issues of distributed deep-learning frameworks for an empirical bug "
    "study, following the codebook exactly. Read the whole thread. For each facet choose the "
    "codes that apply, by the definitions and the include and exclude notes; choose none "
    "(null, or an empty list) where the facet does not apply. Answer with a JSON object whose "
    "keys are the facet keys and whose values are codes of that facet only."
)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def codebook_text(schema: CodebookSchema) -> str:
    lines = ["# Codebook"]
    for facet in schema.facets:
        kind = "one code or null" if not facet.is_multi else "a list of codes (possibly empty)"
        need = "required" if facet.required else "optional"
        lines.append(f"\n## Facet `{facet.key}`: {facet.name} ({kind}; {need})")
        if facet.help:
            lines.append(facet.help)
        lines += [f"Rule: {rule}" for rule in facet.rules_text]
        for c in facet.categories:
            lines.append(f"- `{c.code}` — {c.path}: {c.definition}".rstrip(": "))
            for label, text in (("Include", c.include), ("Exclude", c.exclude)):
                if text:
                    lines.append(f"  {label}: {text}")
            if c.examples:
                lines.append(f"  Example: {c.examples}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Thread:
    title: str
    body: str
    comments: Sequence[str]


def cut_thread(thread: Thread, budget_tokens: int) -> tuple[str, dict[str, Any]]:
    """The thread as prompt text within `budget_tokens` (CUT_RULE), and the record of the cut."""
    budget = max(0, budget_tokens) * CHARS_PER_TOKEN
    title = f"# Issue: {thread.title}\n"
    left = max(0, budget - len(title))
    body = thread.body or ""
    kept_body = body[: max(left // 2, 0)] if len(body) > left // 2 else body
    left -= len(kept_body)
    kept: list[str] = []
    for text in thread.comments:
        piece = text if len(text) <= left else text[:left]
        if not piece:
            break
        kept.append(piece)
        left -= len(piece)
    parts = [title, "\n## Body\n", kept_body or "(no body)"]
    parts += [f"\n\n## Comment {n + 1}\n{text}" for n, text in enumerate(kept)]
    record = {
        "rule": CUT_RULE,
        "budget_tokens": budget_tokens,
        "body_chars": len(body),
        "body_kept_chars": len(kept_body),
        "comments": len(thread.comments),
        "comments_kept": len(kept),
        "comments_cut_chars": sum(len(c) for c in thread.comments) - sum(len(c) for c in kept),
    }
    return "".join(parts), record


def messages(
    schema: CodebookSchema, thread: Thread, budget_tokens: int
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """The chat messages for one item and the record of how its thread was cut."""
    book = codebook_text(schema)
    room = budget_tokens - estimate_tokens(SYSTEM) - estimate_tokens(book)
    text, record = cut_thread(thread, room)
    record["codebook_tokens"] = estimate_tokens(book)
    return (
        [
            {"role": "system", "content": SYSTEM + "\n\n" + book},
            {"role": "user", "content": text},
        ],
        record,
    )


def prompt_hash(sent: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(sent, sort_keys=True).encode()).hexdigest()


def answer_schema(schema: CodebookSchema) -> dict[str, Any]:
    """The JSON schema an answer must follow: every facet key, its codes only."""
    properties: dict[str, Any] = {}
    for facet in schema.facets:
        codes = [c.code for c in facet.categories]
        if facet.is_multi:
            properties[facet.key] = {"type": "array", "items": {"type": "string", "enum": codes}}
        else:
            properties[facet.key] = {"type": ["string", "null"], "enum": [*codes, None]}
    return {
        "type": "object",
        "properties": properties,
        "required": [f.key for f in schema.facets],
        "additionalProperties": False,
    }


def response_format(schema: CodebookSchema) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "labels", "strict": True, "schema": answer_schema(schema)},
    }


FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def read_answer(schema: CodebookSchema, content: str | None) -> tuple[dict[str, list[str]], str]:
    """(labels as {facet key: sorted codes}, "") for a valid answer, or ({}, the reason) when it
    is not JSON, not an object, names an unknown facet or code, or breaks a facet's kind, a
    required facet or a label rule. A fenced JSON block (a model without structured output) is
    read; nothing else is repaired."""
    text = (content or "").strip()
    fenced = FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as error:
        return {}, f"not JSON: {error}"
    if not isinstance(data, dict):
        return {}, f"not a JSON object but {type(data).__name__}"
    facets = {f.key: f for f in schema.facets}
    unknown = sorted(set(data) - set(facets))
    if unknown:
        return {}, f"unknown facet keys {unknown}"
    chosen: dict[int, list[int]] = {}
    for key, facet in facets.items():
        value = data.get(key)
        codes = [] if value is None else value if isinstance(value, list) else [value]
        if not all(isinstance(c, str) for c in codes):
            return {}, f"facet {key!r}: codes are strings, got {value!r}"
        ids = {c.code: c.id for c in facet.categories}
        bad = [c for c in codes if c not in ids]
        if bad:
            return {}, f"facet {key!r}: {bad} not codes of this facet"
        if not facet.is_multi and len(codes) > 1:
            return {}, f"facet {key!r}: one code only, got {codes}"
        chosen[facet.id] = [ids[c] for c in codes]
    rows, errors = schema.validate_labels(chosen, require=True)
    if errors:
        return {}, "; ".join(f"facet {k!r}: {v}" for k, v in sorted(errors.items()))
    return schema.codes(rows), ""
