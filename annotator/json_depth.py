"""How deep JSON nests, counted on the raw bytes before a parser builds anything.

A parser pays for depth before it can refuse it: ijson's prefixes ("item.item.item…") grow
with the square of the depth (100,000 ``[`` in 200 KB took 10 GB), and ``json.loads`` recurses.
DepthScan counts ``[``/``{`` outside strings as the bytes stream past and raises at the first
one past the limit, naming its byte offset. Pure: imports no Django (annotator/issues/formats.py
and the API's parser, annotator/api_parsers.py, use it).
"""

from __future__ import annotations

import re
from itertools import accumulate

_STRUCTURE = re.compile(rb'[\[\]{}"]')
_STRING_STOP = re.compile(rb'["\\]')
_OPENERS = frozenset(b"[{")


class TooDeep(ValueError):
    """Nesting past the limit. ``offset`` is the byte (from 0) of the bracket that passed it."""

    def __init__(self, offset: int, limit: int) -> None:
        super().__init__(f"JSON nested deeper than the limit of {limit} at byte {offset}")
        self.offset, self.limit = offset, limit


# The fast path's tables: the bytes that are neither brackets nor quotes (deleted to leave the
# structure), a string in what is left (to its end, if it does not close), and each bracket's
# step in depth.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_STRING = re.compile(rb'"[^"]*(?:"|$)')
_STEP = [0] * 256
for _byte in b"[{":
    _STEP[_byte] = 1
for _byte in b"]}":
    _STEP[_byte] = -1


class DepthScan:
    """Feed it the bytes in order (any chunking); it raises TooDeep past `limit` levels.

    A chunk is read with bytes methods, in C: its escapes and strings removed, the brackets
    left kept, the depths they step through summed by itertools.accumulate (a GitHub issue
    file of 66 MB: 1.2 s token by token, 0.3 s so). Only a chunk that goes past the
    limit is read again token by token (a regex finds the next bracket or quote, the loop
    runs per token), to name the byte that did. A backslash outside a string, which no JSON
    holds, may be read differently by the two; the parser stops at it either way."""

    def __init__(self, limit: int) -> None:
        self.limit, self.depth, self.offset = limit, 0, 0
        self._in_string = self._escaped = False

    def feed(self, chunk: bytes) -> None:
        state = (self.depth, self._in_string, self._escaped)
        pos, size = 0, len(chunk)
        if self._escaped and size:
            pos, self._escaped = 1, False
        while self._in_string and pos < size:
            pos = self._in_text(chunk, pos)
        if pos < size and not self._outside_fast(chunk, pos):
            self.depth, self._in_string, self._escaped = state
            self._feed_exactly(chunk)
        self.offset += size

    def _outside_fast(self, chunk: bytes, pos: int) -> bool:
        """Read `chunk` from `pos` (outside a string); False, changing nothing, if it goes
        past the limit. With its escapes removed (an escaped backslash, then an escaped
        quote, pairing backslashes from the left as a string's text does), each quote left
        opens or closes a string: the parts between them are outside and inside in turn. An
        odd number of quotes leaves the chunk inside a string, its end an escape if the
        chunk ends in an odd run of backslashes."""
        text = chunk[pos:] if pos else chunk
        if b"\\" in text:
            text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
        # One pass over the chunk leaves its quotes and brackets, a few per hundred bytes. Two
        # quotes side by side there enclose no bracket, whether they open and close a string
        # or close one and open the next, so they go at once; the strings left are cut out.
        # (Splitting the chunk itself at its quotes made an object of every string: a 330 MB
        # file in ijson's 64 KB chunks took 1.8 s, now 1.45 s, most of it the escapes.)
        structure = text.translate(None, _NOT_STRUCTURE)
        brackets = _STRING.sub(b"", structure.replace(b'""', b""))
        if brackets:
            depths = list(accumulate(map(_STEP.__getitem__, brackets), initial=self.depth))
            if max(depths) > self.limit:
                return False
            self.depth = depths[-1]
        if structure.count(b'"') % 2 == 1:
            self._in_string = True
            self._escaped = (len(chunk) - len(chunk.rstrip(b"\\"))) % 2 == 1
        return True

    def _feed_exactly(self, chunk: bytes) -> None:
        pos, size = 0, len(chunk)
        if self._escaped and size:
            pos, self._escaped = 1, False
        while pos < size:
            pos = self._in_text(chunk, pos) if self._in_string else self._outside(chunk, pos)

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
