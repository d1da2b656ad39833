"""Normalising raw label values and matching them to category codes (pure, no Django).

Used by `spreadsheets.py` for prior rounds; equally usable for any import of free-text labels.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Occurrence:
    sheet: str
    row: int
    column: str


@dataclass(frozen=True)
class Unmatched:
    value: str
    normalised: str
    count: int
    occurrences: tuple[Occurrence, ...]
    suggestions: tuple[str, ...]  # category codes whose names are close, for the user to pick


@dataclass(frozen=True)
class Matching:
    matched: dict[str, str]  # raw value → category code
    unmatched: tuple[Unmatched, ...]  # most frequent first

    @property
    def matched_count(self) -> int:
        return len(self.matched)


_PLURAL = re.compile(r"\b(\w{2,}?[^isu\s])s\b")


def normalise(value: object) -> str:
    """The comparison form of a label: "Hang & Timeout" == "hang and timeout".

    NFKC, case-folded; `&` and `+` read as "and"; every other run of punctuation (`/`, `-`, dashes,
    `_`, `.`) or spacing becomes one space; a plain English plural `s` is dropped from words of
    four letters or more ("Program Failures" == "program failure"; "loss", "bus" are kept).
    Integral floats read as integers, since Excel stores 1 as 1.0.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = unicodedata.normalize("NFKC", str(value)).casefold()
    text = re.sub(r"\s*[&+]\s*", " and ", text)
    text = re.sub(r"[\W_]+", " ", text).strip()
    return _PLURAL.sub(r"\1", text)


def match_values(
    raw_values: Mapping[str, Sequence[Occurrence]] | Iterable[str],
    categories: Mapping[str, Sequence[str]],
) -> Matching:
    """Match raw values to category codes by their normalised form.

    `categories` maps each code to its name and synonyms; the code itself matches too
    ("hang-timeout" ~ "Hang & timeout"). Two categories that normalise alike are refused, since a
    value could not be told between them. Pass `PriorLabels.values(facet)` to learn where each
    unmatched value occurs, or any iterable of raw values (repeats count).
    """
    index = _category_index(categories)
    places = _places(raw_values)
    matched: dict[str, str] = {}
    unmatched: list[Unmatched] = []
    for value, (count, where) in places.items():
        form = normalise(value)
        if form in index:
            matched[value] = index[form]
        else:
            suggestions = _suggest(form, index)
            unmatched.append(Unmatched(value, form, count, tuple(where), suggestions))
    unmatched.sort(key=lambda u: (-u.count, u.normalised))
    return Matching(matched, tuple(unmatched))


def _suggest(form: str, index: Mapping[str, str]) -> tuple[str, ...]:
    """Codes the user probably means: near spellings ("fix netowrk setting"), then names that
    contain every word of the value ("hang" → hang & timeout)."""
    close = difflib.get_close_matches(form, list(index), n=3, cutoff=0.8)
    words = set(form.split())
    close += [name for name in index if words and words <= set(name.split())]
    return tuple(dict.fromkeys(index[name] for name in close))[:5]


def _category_index(categories: Mapping[str, Sequence[str]]) -> dict[str, str]:
    index: dict[str, str] = {}
    for code, names in categories.items():
        for name in {code, *names}:
            form = normalise(name)
            if index.get(form, code) != code:
                raise ValueError(f"categories {index[form]!r} and {code!r} both read as {form!r}")
            index[form] = code
    return index


def _places(
    raw_values: Mapping[str, Sequence[Occurrence]] | Iterable[str],
) -> dict[str, tuple[int, list[Occurrence]]]:
    if isinstance(raw_values, Mapping):
        return {v: (len(w), list(w)) for v, w in raw_values.items()}
    return {v: (n, []) for v, n in Counter(raw_values).items()}
