"""Near-duplicate issues (pure: datasketch and the standard library, no Django).

Two reports of one bug rarely match byte for byte: the same traceback carries another user's
paths, another rank and PID, other timestamps and addresses, other whitespace. `normalise`
folds those away; two signals then find the pairs:

- the **error signature** (`error_signature`): the exception type and its normalised message,
  with the function names of the traceback's frames when there is one. Two issues with the same
  signature *and a traceback* are paired once their texts overlap at all
  (Jaccard >= Params.signature_threshold); a bare "CUDA out of memory" is no evidence alone.
- **MinHash/LSH over word shingles** of the normalised title and body (Broder 1997, "On the
  resemblance and containment of documents"; datasketch's MinHashLSH): pairs whose estimated
  Jaccard similarity of shingle sets reaches Params.threshold.

`DuplicateIndex.add` takes the issues one at a time and returns the pairs each new issue makes
with those before it, so a caller can stream a corpus: memory holds the index (a MinHash of
Params.num_perm 32-bit values per issue, the LSH buckets, and the signature table), never the
texts. `group_pairs` joins the pairs into groups (connected components), each keeping its
pairwise similarities.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from datasketch import MinHash, MinHashLSH

MAX_TEXT_CHARS = 10_000

# Normalisation works token by token (whitespace-separated): plain words (most of a report) pass
# untouched and a token is normalised once per pass (a cache), the others go through one
# combined pattern. One regex pass per pattern over the whole text cost 2 ms an issue, over
# 3 minutes at 100,000 issues.
_TOKEN = re.compile(
    r"(?P<ts>\d{4}[-/]\d{2}[-/]\d{2}(?:[t_]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?"
    r"(?:z|[+-]\d{2}:?\d{2})?|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?)"
    r"|(?P<hex>0x[0-9a-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}(?![\w]))"
    # A path: two or more separators with names between them (POSIX or Windows, ~ or a drive
    # letter in front): a user's home, a virtualenv or a checkout differ between reports.
    r"|(?P<path>(?:[a-z]:|~)?[\\/][\w.@+~-]+(?:[\\/][\w.@+~-]+)+[\\/]?)"
    r"|(?P<addr>\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?)"
    # rank3, [rank3], gpu0, cuda:1, pid=12, node-2: the word stays, the number goes.
    r"|(?P<rank>(?:rank|pid|gpu|node|cuda|device|worker)[:=#-]?\d+)"
    # A number not inside a word ("w2v", "python3.10" and "fp16" stay): ranks, PIDs, ports,
    # sizes, steps, line numbers.
    r"|(?P<n>(?<![a-z_.\d-])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![a-z_\d]))"
)
_PLACEHOLDER = {"ts": "<ts>", "hex": "<hex>", "path": "<path>", "addr": "<addr>", "n": "<n>"}
_DIGITS = re.compile(r"\d+")
_HEX_DIGITS = frozenset("0123456789abcdef")
_FRAME = re.compile(r'\s*File\s+"[^"]*",\s+line\s+\d+,\s+in\s+(\S+)')
_EXCEPTION_WORD = re.compile(r"Error|Exception|Exit|Interrupt|Fault|Warning")
_EXCEPTION = re.compile(
    r"\s*(?:[A-Za-z_]\w*\.)*((?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Fault|Warning))"
    r"\s*:\s*(.+)$"
)


def _placeholder(match: re.Match[str]) -> str:
    if match.lastgroup == "rank":
        return _DIGITS.sub("<n>", match.group())
    return _PLACEHOLDER[match.lastgroup or "n"]


@dataclass(frozen=True)
class Params:
    """What a pass records of how it found its pairs."""

    num_perm: int = 64
    shingle_words: int = 3
    threshold: float = 0.7
    signature_threshold: float = 0.3
    # Issues an LSH bucket keeps, and pairs an issue keeps (its most similar): see DuplicateIndex.
    bucket_size: int = 10
    pairs_per_issue: int = 10
    max_text_chars: int = MAX_TEXT_CHARS
    seed: int = 1

    def as_dict(self) -> dict[str, object]:
        return {
            "method": "MinHash/LSH over word shingles + error signature",
            "num_perm": self.num_perm,
            "shingle_words": self.shingle_words,
            "threshold": self.threshold,
            "signature_threshold": self.signature_threshold,
            "bucket_size": self.bucket_size,
            "pairs_per_issue": self.pairs_per_issue,
            "max_text_chars": self.max_text_chars,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Signature:
    exception: str
    message: str
    frames: tuple[str, ...]

    @property
    def key(self) -> str:
        text = "\n".join((self.exception, self.message, *self.frames))
        return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:20]

    def __str__(self) -> str:
        where = f" in {' > '.join(self.frames)}" if self.frames else ""
        return f"{self.exception}: {self.message}{where}"


@dataclass(frozen=True)
class Pair:
    """Issues `a` < `b` found near-duplicate: estimated Jaccard similarity of their shingles,
    and whether they share a traceback's error signature."""

    a: int
    b: int
    similarity: float
    same_signature: bool


@dataclass
class Group:
    members: list[int]
    pairs: list[Pair] = field(default_factory=list)

    @property
    def max_similarity(self) -> float:
        return max(p.similarity for p in self.pairs)

    @property
    def min_similarity(self) -> float:
        return min(p.similarity for p in self.pairs)


def normalise(text: str) -> str:
    """Lower case, with timestamps, hex addresses and hashes, paths, ranks, PIDs and other
    numbers replaced by placeholders (<ts>, <hex>, <path>, <n>) and whitespace collapsed."""
    joined = " ".join([t if t.isalpha() else _token(t) for t in text.lower().split()])
    # A date and a time are one token in ISO 8601 and two in most logs: one <ts> either way.
    return joined.replace("<ts> <ts>", "<ts>")


@functools.lru_cache(maxsize=65_536)
def _token(token: str) -> str:
    if token.isalpha():
        return token
    if token.isdigit():
        return "<n>"
    if token.isalnum() and not token[0].isdigit():  # a word with digits: fp16, w2v, rank3
        return "<hex>" if len(token) >= 8 and _HEX_DIGITS.issuperset(token) else token
    return _TOKEN.sub(_placeholder, token)


def error_signature(text: str) -> Signature | None:
    """The last exception line of the text (type and normalised message) with the function
    names of the traceback frames before it (at most the last 8), or None without one."""
    lines = text.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        if ":" in lines[at] and _EXCEPTION_WORD.search(lines[at]):
            found = _EXCEPTION.match(lines[at])
            if found:
                break
    else:
        return None
    frames = [m.group(1) for m in map(_FRAME.match, lines[:at]) if m is not None]
    message = normalise(found.group(2))[:300]
    return Signature(exception=found.group(1), message=message, frames=tuple(frames[-8:]))


def shingles(normalised: str, size: int) -> np.ndarray:
    """32-bit hashes of the word `size`-grams of a normalised text (of the whole text when it
    is shorter), distinct: CRC-32 of each word, combined in numpy (a Python hash per shingle
    took 1.5 ms an issue)."""
    words = normalised.split()
    if not words:
        return np.zeros(0, dtype=np.uint64)
    hashes = np.fromiter((zlib.crc32(w.encode()) for w in words), np.uint64, len(words))
    if len(words) <= size:
        size = len(words)
    combined = hashes[: len(words) - size + 1].copy()
    for offset in range(1, size):
        combined = (combined * np.uint64(1_000_003)) ^ hashes[
            offset : len(words) - size + 1 + offset
        ]
    return np.unique(combined & np.uint64(0xFFFFFFFF))


def issue_text(title: str, body: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """What is compared: the title and the body (the report; replies vary), cut at max_chars."""
    return f"{title}\n\n{body or ''}"[:max_chars]


class DuplicateIndex:
    """Issues added one at a time; `add` returns the new issue's pairs with earlier ones.

    The LSH index is datasketch's banding for the threshold (8 bands of 8 MinHash values at
    0.7 and 64 permutations), kept here so that a bucket holds at most Params.bucket_size
    issues, the first that fell in it, and an issue keeps its Params.pairs_per_issue most
    similar pairs. Unbounded, a pool of near-identical issues (a template filed over and over,
    a bot's reports) made every new issue a candidate of all before it, and the pass quadratic
    in time and in pairs: 20,000 such issues, 13.7 million pairs in 73 s and 2.5 GB. Bounded,
    a new issue of such a pool is compared with the first issues of each of its buckets, which
    are of the pool too, and joins its group. Where no bucket is full and no issue has more
    than that many near-duplicates before it (a pool of distinct reports), nothing changes."""

    def __init__(self, params: Params | None = None) -> None:
        self.params = params or Params()
        # datasketch's choice of bands and rows for the threshold (its index is not used: it
        # keeps every issue of a bucket).
        lsh = MinHashLSH(threshold=self.params.threshold, num_perm=self.params.num_perm)
        self._bands = [slice(start, end) for start, end in lsh.hashranges]
        self._buckets: list[dict[bytes, list[int]]] = [{} for _ in self._bands]
        self._template = MinHash(num_perm=self.params.num_perm, seed=self.params.seed, hashfunc=int)
        # One uint32 row of MinHash values per issue, in one array grown by doubling (a list of
        # small arrays cost 112 bytes of header each).
        self._rows = np.zeros((1024, self.params.num_perm), dtype=np.uint32)
        self._keys: list[int] = []
        self._by_signature: dict[str, list[int]] = {}  # signature key → row numbers
        self.signatures = 0

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: int, text: str) -> list[Pair]:
        text = text[: self.params.max_text_chars]
        minhash = self._minhash(normalise(text))
        values = minhash.hashvalues.astype(np.uint32)  # MinHash values are below 2**32
        row = len(self._keys)
        bands = [values[band].tobytes() for band in self._bands]
        candidates = dict.fromkeys(
            (
                other
                for table, band in zip(self._buckets, bands, strict=True)
                for other in table.get(band, ())
            ),
            False,
        )
        signature = error_signature(text)
        if signature is not None and signature.frames:
            self.signatures += 1
            same = self._by_signature.setdefault(signature.key, [])
            for other in same[-50:]:  # the latest 50 of a very common signature suffice
                candidates[other] = True
            same.append(row)
        pairs = []
        for other, same_signature in candidates.items():
            similarity = np.count_nonzero(self._rows[other] == values) / len(values)
            limit = self.params.signature_threshold if same_signature else self.params.threshold
            if similarity >= limit:
                a, b = sorted((self._keys[other], key))
                pairs.append(Pair(a, b, round(float(similarity), 4), same_signature))
        if len(pairs) > self.params.pairs_per_issue:
            pairs.sort(key=lambda p: (-p.similarity, p.a, p.b))
            del pairs[self.params.pairs_per_issue :]
        for table, band in zip(self._buckets, bands, strict=True):
            bucket = table.setdefault(band, [])
            if len(bucket) < self.params.bucket_size:
                bucket.append(row)
        if row == len(self._rows):
            self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
        self._rows[row] = values
        self._keys.append(key)
        return pairs

    def _minhash(self, normalised: str) -> MinHash:
        minhash = self._template.copy()
        found = shingles(normalised, self.params.shingle_words)
        if len(found):
            minhash.update_batch(found.tolist())
        return minhash


def group_pairs(pairs: Iterable[Pair]) -> list[Group]:
    """Connected components of the pairs, members sorted, largest similarity first."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    kept = list(pairs)
    for pair in kept:
        ra, rb = root(pair.a), root(pair.b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, Group] = {}
    for pair in kept:
        group = groups.setdefault(root(pair.a), Group(members=[]))
        group.pairs.append(pair)
    for group in groups.values():
        group.members = sorted({m for p in group.pairs for m in (p.a, p.b)})
        group.pairs.sort(key=lambda p: (-p.similarity, p.a, p.b))
    return sorted(groups.values(), key=lambda g: (-g.max_similarity, g.members[0]))


def find_duplicates(
    records: Iterable[tuple[int, str]], params: Params | None = None
) -> list[Group]:
    """The groups of near-duplicates among (key, text) records."""
    index = DuplicateIndex(params)
    pairs: list[Pair] = []
    for key, text in records:
        pairs += index.add(key, text)
    return group_pairs(pairs)
