"""How deep JSON nests, counted on the raw bytes before a parser builds anything.

A parser pays for depth before it can refuse it: ijson's prefixes ("item.item.item…") grow
with the square of the depth (100,000 ``[`` in 200 KB took 10 GB), and ``json.loads`` recurses.
DepthScan counts ``[``/``{`` outside strings as the bytes stream past and raises at the first
one past the limit, naming its byte offset. Pure: imports no Django (annotator/issues/formats.py
and the API's parser, annotator/api_parsers.py, use it).
"""

from __future__ import annotations

import re

_STRUCTURE = re.compile(rb'[\[\]{}"]')
_STRING_STOP = re.compile(rb'["\\]')
_OPENERS = frozenset(b"[{")


class TooDeep(ValueError):
    """Nesting past the limit. ``offset`` is the byte (from 0) of the bracket that passed it."""

    def __init__(self, offset: int, limit: int) -> None:
        super().__init__(f"JSON nested deeper than the limit of {limit} at byte {offset}")
        self.offset, self.limit = offset, limit


class DepthScan:
    """Feed it the bytes in order (any chunking); it raises TooDeep past `limit` levels.
    A regex finds the next bracket or quote, so the Python loop runs per token, not per byte."""

    def __init__(self, limit: int) -> None:
        self.limit, self.depth, self.offset = limit, 0, 0
        self._in_string = self._escaped = False

    def feed(self, chunk: bytes) -> None:
        pos, size = 0, len(chunk)
        if self._escaped and size:
            pos, self._escaped = 1, False
        while pos < size:
            pos = self._in_text(chunk, pos) if self._in_string else self._outside(chunk, pos)
        self.offset += size

    def _in_text(self, chunk: bytes, pos: int) -> int:
        stop = _STRING_STOP.search(chunk, pos)
        if stop is None:
            return len(chunk)
        if chunk[stop.start()] == 0x5C:  # a backslash escapes the next byte, maybe the next chunk's
            self._escaped = stop.end() == len(chunk)
            return stop.end() + 1
        self._in_string = False
        return stop.end()

    def _outside(self, chunk: bytes, pos: int) -> int:
        found = _STRUCTURE.search(chunk, pos)
        if found is None:
            return len(chunk)
        byte = chunk[found.start()]
        if byte == 0x22:
            self._in_string = True
        elif byte in _OPENERS:
            self.depth += 1
            if self.depth > self.limit:
                raise TooDeep(self.offset + found.start(), self.limit)
        else:
            self.depth -= 1
        return found.end()


def check_depth(data: bytes, limit: int) -> None:
    """Raise TooDeep if `data` (one whole JSON text) nests deeper than `limit`."""
    DepthScan(limit).feed(data)
