"""Pseudonymised text (pure: no Django): people's names replaced by their study codes.

A `Pseudonymiser` holds name → code (annotators' user names as `A01`, GitHub logins as
`U0001`; `annotator/exports/package.py` keeps the codes per study in the `Pseudonym` model) and
rewrites text and JSON-like values:

1. @mentions: every GitHub-shaped `@login` becomes `@<code>` (a login without a code becomes
   `@user`, so none leaks). Not a mention: an address (`a@b.org`), a decorator or attribute
   (`@torch.no_grad()`, `@x.y`) — the regex, MENTION, reads the character after the name.
2. Names: each known name (case-insensitively, as GitHub logins compare) standing alone as a
   word, `github.com/<login>` included, becomes its code.

The price: a known login that is also a word (`owner`) becomes its code wherever it stands
alone in exported text, and a decorator on its own line (`@staticmethod`) reads as a mention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# GitHub logins: letters, digits and inner hyphens, at most 39 characters.
MENTION = re.compile(
    r"(?<![\w@./+-])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?)(?![\w-]|\.\w|\()"
)
UNKNOWN_MENTION = "user"


def mentions(text: str | None) -> set[str]:
    """The logins @mentioned in `text`, lower-cased."""
    return {found.lower() for found in MENTION.findall(text or "")}


def annotator_code(number: int) -> str:
    return f"A{number:02d}"


def github_code(number: int) -> str:
    return f"U{number:04d}"


class Pseudonymiser:
    """Rewrites text and values with every known name replaced by its code."""

    def __init__(self, codes: Mapping[str, str]) -> None:
        self.codes = {name.lower(): code for name, code in codes.items() if name and name.strip()}
        names = sorted(self.codes, key=len, reverse=True)  # the longest name wins an overlap
        alternatives = "|".join(re.escape(name) for name in names)
        self.pattern = (
            re.compile(rf"(?<![\w-])({alternatives})(?![\w-])", re.IGNORECASE) if names else None
        )

    def text(self, value: str) -> str:
        value = MENTION.sub(lambda m: "@" + self.codes.get(m[1].lower(), UNKNOWN_MENTION), value)
        if self.pattern is None:
            return value
        return self.pattern.sub(lambda m: self.codes[m[1].lower()], value)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string (dict keys too) rewritten."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def rows(
        self, rows: Iterable[Mapping[str, Any]], columns: Iterable[str]
    ) -> Iterable[dict[str, Any]]:
        """Rows with the text of `columns` rewritten (str or list values)."""
        names = list(columns)
        for row in rows:
            out = dict(row)
            for name in names:
                if out.get(name) is not None:
                    out[name] = self.value(out[name])
            yield out
