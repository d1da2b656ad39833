"""The ranking model of prioritised screening (pure: scikit-learn and numpy, no Django).

Given every issue's text and the screening decisions made so far (relevant 1 / irrelevant 0),
`rank` orders the issues not yet screened, most likely relevant first ("max" query, as in
ASReview: van de Schoot et al. 2021, https://doi.org/10.1038/s42256-020-00287-7).

Text. One text per issue (`issue_text`): the title, the body, then the comments oldest first,
joined by blank lines and cut at MAX_TEXT_CHARS characters. The title always survives the cut
(it comes first); what goes is the tail of long threads, mostly pasted logs that repeat one
error hundreds of times and would otherwise outweigh what the reporter wrote.

Features. `Ranker` fits TF-IDF on all texts, screened or not, once (as ASReview does: IDF from
the whole collection is no peek at labels) and keeps the sparse matrix, so a retrain fits the
classifier only: under half a second at 10,000 issues, 9,990 of them screened
(benchmarks/screening_ranking.py). The features are exactly scikit-learn's
`TfidfVectorizer(**TFIDF)` (`tests/screening/test_ranking.py` holds them equal), computed by
`tfidf_features`, which splits words in numpy instead of one Python step per word: scikit-learn
took 81 s at 100,000 issues of ~2 KB, nearly all of it in its per-word loop and regex.

Models (MODELS):
  tfidf-svm     default. TF-IDF + linear SVM (sklearn.svm.LinearSVC, C=SVM_C; ASReview's `svm`
                classifier is a LinearSVC too), scored by `decision_function` (no probabilities
                needed to rank), trained on the screened issues resampled by ASReview's "double
                balance" (`double_balance`, defaults of ASReview 1.x's DoubleBalance): relevant
                issues are copied up and irrelevant ones sampled down so that a few relevant
                among hundreds irrelevant still move the boundary.
  tfidf-logreg  TF-IDF + logistic regression (liblinear), class_weight="balanced" instead of
                resampling; also ranked by `decision_function`.
  random        no model: the seeded random order.

Until the decisions hold at least one relevant and one irrelevant issue no classifier can be
fitted, and every model returns the seeded random order. That order is one permutation of all
issues drawn from the seed (`random_order`), filtered to the unscreened: screening it one issue
at a time walks the same permutation, whatever has been screened in between. The same
permutation breaks ties between equal scores (issues sharing no word with anything screened),
so file order never leaks into the ranking. Same texts, decisions, model and seed: same ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

MAX_TEXT_CHARS = 10_000
DEFAULT_MODEL = "tfidf-svm"
MODELS = ("tfidf-svm", "tfidf-logreg", "random")
# scikit-learn's default. ASReview's SVM classifier uses C = 15.4: the same WSS@95 on the demo
# threads (0.485 against 0.479, 20 runs) and on tests/screening/synthetic.py, but its fit took
# 2.6 s against 0.7 s at 10,000 issues with 9,990 screened (liblinear needs 259 passes, not 34).
SVM_C = 1.0
# ASReview's DoubleBalance defaults (a, alpha, b, beta).
DOUBLE_BALANCE = {"a": 2.155, "alpha": 0.94, "b": 0.789, "beta": 1.0}
# English stop words are dropped, as ASReview 1.x's Tfidf did; sublinear tf (1 + log tf) keeps
# a word repeated down a log from counting hundreds of times.
TFIDF = {"stop_words": "english", "sublinear_tf": True, "dtype": np.float32}

IntArray = npt.NDArray[np.int64]
Ints = Sequence[int] | IntArray  # indices or 0/1 labels, as a list or an array


def issue_text(title: str, body: str = "", comments: Sequence[str] = ()) -> str:
    """Title, body and comments (oldest first) joined by blank lines, cut at MAX_TEXT_CHARS."""
    parts = [part for part in (title, body, *comments) if part]
    return "\n\n".join(parts)[:MAX_TEXT_CHARS]


def random_order(n: int, seed: int) -> IntArray:
    """The seeded permutation of range(n) behind the random order and every tie-break."""
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def parameters(model: str) -> dict[str, object]:
    """What a stored ranking records of its model (besides the seed and the inputs' hash)."""
    _check_model(model)
    if model == "random":
        return {"model": model}
    found: dict[str, object] = {
        "model": model,
        "max_text_chars": MAX_TEXT_CHARS,
        "tfidf": {"stop_words": "english", "sublinear_tf": True},
    }
    if model == "tfidf-svm":
        found |= {"classifier": "LinearSVC", "C": SVM_C, "balance": "double", **DOUBLE_BALANCE}
    else:
        found |= {"classifier": "LogisticRegression", "balance": "class_weight=balanced"}
    return found


@dataclass(frozen=True)
class Ranker:
    """One collection's features, fitted once; `rank` retrains the classifier only."""

    model: str
    size: int
    features: sparse.csr_matrix | None

    @classmethod
    def fit(cls, texts: Sequence[str], model: str = DEFAULT_MODEL) -> Ranker:
        _check_model(model)
        if model == "random" or not texts:
            return cls(model=model, size=len(texts), features=None)
        features = tfidf_features(texts)
        if features.shape[1] == 0:  # no word at all (empty texts, or only stop words)
            features = sparse.csr_matrix((len(texts), 1), dtype=np.float32)
        return cls(model=model, size=len(texts), features=features)

    def rank(self, labelled: Ints, labels: Ints, *, seed: int) -> IntArray:
        """The unscreened issues' indices, most likely relevant first (see the module
        docstring); `labels[i]` (1 relevant, 0 irrelevant) is the decision on `labelled[i]`."""
        screened, y = _decisions(labelled, labels, self.size)
        order = random_order(self.size, seed)
        mask = np.zeros(self.size, dtype=bool)
        mask[screened] = True
        if self.features is None or len(set(y.tolist())) < 2:
            return order[~mask[order]]
        scores = self._scores(screened, y, seed)
        position = np.empty(self.size, dtype=np.int64)
        position[order] = np.arange(self.size)
        unscreened = np.flatnonzero(~mask)
        # lexsort sorts by the last key first: score descending, then the permutation.
        ranked = np.lexsort((position[unscreened], -scores[unscreened]))
        return unscreened[ranked].astype(np.int64)

    def _scores(self, screened: IntArray, y: IntArray, seed: int) -> npt.NDArray[np.float64]:
        assert self.features is not None
        if self.model == "tfidf-svm":
            rng = np.random.default_rng([seed, len(screened)])
            train = double_balance(screened, y, rng)
            # liblinear shuffles with its own generator: seeded, or equal inputs could differ.
            classifier: LinearSVC | LogisticRegression = LinearSVC(C=SVM_C, random_state=seed)
            classifier.fit(self.features[screened[train]], y[train])
        else:
            classifier = LogisticRegression(
                class_weight="balanced", solver="liblinear", random_state=seed
            )
            classifier.fit(self.features[screened], y)
        # features · w + b in float32, as the features are: scikit-learn's decision_function
        # would copy the whole matrix to float64 first (1.4 s of 2 at 100,000 issues).
        weights = np.asarray(classifier.coef_, dtype=np.float32).reshape(-1)
        scores = self.features @ weights + np.float32(classifier.intercept_[0])
        return np.asarray(scores, dtype=np.float64)


def rank(
    texts: Sequence[str],
    labelled: Ints,
    labels: Ints,
    *,
    seed: int,
    model: str = DEFAULT_MODEL,
) -> IntArray:
    """`Ranker.fit(texts, model).rank(labelled, labels, seed=seed)`: for a single ranking.
    A caller that retrains (a simulation, a screening round) keeps the Ranker instead."""
    return Ranker.fit(texts, model).rank(labelled, labels, seed=seed)


def double_balance(screened: IntArray, y: IntArray, rng: np.random.Generator) -> IntArray:
    """Positions into `screened` to train on, after ASReview's double balance (ASReview 1.x,
    asreview.models.balance.DoubleBalance; https://asreview.readthedocs.io, "Balance
    strategies"). With n1 relevant and n0 irrelevant decisions, n = n1 + n0:

        w1 = a · (n1 / n0)^(-alpha)           weight of a relevant one
        w0 = 1 - (1 - b) · (1 + ln n)^(-beta)  weight of an irrelevant one
        k1 = n · w1·n1 / (w1·n1 + w0·n0), rounded at random (8.3 → 9 three times in ten),
             kept in [1, n - 2]; k0 = n - k1

    and the training set is k1 relevant (all of them repeated, the remainder drawn without
    replacement) and k0 irrelevant drawn the same way: the same size n, re-weighted.
    """
    ones, zeros = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    n1, n0 = len(ones), len(zeros)
    n = n1 + n0
    p = DOUBLE_BALANCE
    w1 = p["a"] * (n1 / n0) ** (-p["alpha"])
    w0 = 1 - (1 - p["b"]) * (1 + math.log(n)) ** (-p["beta"])
    share = n * w1 * n1 / (w1 * n1 + w0 * n0)
    k1 = math.floor(share) + int(rng.random() < share - math.floor(share))
    k1 = max(1, min(n - 2, k1)) if n > 2 else 1
    chosen = np.concatenate([_fill(ones, k1, rng), _fill(zeros, n - k1, rng)])
    return chosen.astype(np.int64)


def _fill(pool: IntArray, k: int, rng: np.random.Generator) -> IntArray:
    copies, rest = divmod(k, len(pool))
    return np.concatenate([np.tile(pool, copies), rng.choice(pool, rest, replace=False)])


def _decisions(labelled: Ints, labels: Ints, size: int) -> tuple[IntArray, IntArray]:
    screened = np.asarray(labelled, dtype=np.int64).reshape(-1)
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if len(screened) != len(y):
        raise ValueError(f"{len(screened)} screened issues but {len(y)} labels")
    if len(screened) and (screened.min() < 0 or screened.max() >= size):
        raise ValueError(f"a screened index is outside 0..{size - 1}")
    if len(np.unique(screened)) != len(screened):
        raise ValueError("an issue is screened twice")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 (irrelevant) or 1 (relevant)")
    return screened, y


def _check_model(model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; expected one of {', '.join(MODELS)}")


# --- TF-IDF --------------------------------------------------------------------------------
# scikit-learn's token_pattern: runs of two or more word characters. On ASCII text a word
# character is [A-Za-z0-9_]; `tfidf_features` finds those runs on the bytes with numpy and
# lets this regex split only texts with other characters (their words, joined by spaces, then
# go through the same byte path: every byte of a non-ASCII character counts as a word byte).
TOKEN = re.compile(r"(?u)\b\w\w+\b")
_WORD_BYTE = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789_":
    _WORD_BYTE[_c] = True
_WORD_BYTE[128:] = True
_CHUNK_BYTES = 4_000_000  # texts hashed together: bounds the work arrays (~40 bytes a byte)
# Odd multipliers of the two rolling hashes that name a word (128 bits: two words collide
# with a chance of about 2^-100 at a million distinct words).
_P1, _P2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)


def tfidf_features(texts: Sequence[str]) -> sparse.csr_matrix:
    """`TfidfVectorizer(**TFIDF).fit_transform(texts)` (same terms, same columns in the same
    sorted order, same float32 values), with no Python step per word: each chunk of texts is
    one byte array, its words are found with numpy, named by a 128-bit rolling hash and counted
    with pandas' hash table; only each chunk's distinct words go through a dict (the
    vocabulary). Memory: the matrix's own arrays (int32 columns, float32 counts) and one chunk's
    work arrays. A collection without any word gives a matrix of no columns."""
    vocabulary = _Vocabulary()
    per_text: list[npt.NDArray[np.int64]] = []
    columns: list[npt.NDArray[np.int32]] = []
    counts: list[npt.NDArray[np.float32]] = []
    powers = {_P1: _Powers(_P1), _P2: _Powers(_P2)}
    start = 0
    while start < len(texts):
        encoded: list[bytes] = []
        size = 0
        while start + len(encoded) < len(texts) and (size < _CHUNK_BYTES or not encoded):
            encoded.append(_words_as_bytes(texts[start + len(encoded)]))
            size += len(encoded[-1]) + 1
        doc, term, count = _count_chunk(encoded, vocabulary, powers)
        per_text.append(np.bincount(doc, minlength=len(encoded)))
        columns.append(term)
        counts.append(count)
        start += len(encoded)
    # Columns in the order of the words, as scikit-learn sorts its vocabulary.
    words = np.array(vocabulary.terms, dtype=object)
    kept = np.flatnonzero(~np.array(vocabulary.stop, dtype=bool))
    order = kept[np.argsort(words[kept], kind="stable")]
    column = np.full(len(words), -1, dtype=np.int32)
    column[order] = np.arange(len(order), dtype=np.int32)
    indptr = np.zeros(len(texts) + 1, dtype=np.int64)
    if per_text:
        np.cumsum(np.concatenate(per_text), out=indptr[1:])
    indices = column[np.concatenate(columns)] if columns else np.zeros(0, dtype=np.int32)
    data = np.concatenate(counts) if counts else np.zeros(0, dtype=np.float32)
    del columns, counts
    matrix = sparse.csr_matrix((data, indices, indptr), shape=(len(texts), len(order)))
    matrix.sort_indices()
    if len(order) == 0:
        return matrix
    transformer = TfidfTransformer(sublinear_tf=True)
    return sparse.csr_matrix(transformer.fit_transform(matrix), dtype=np.float32)


class _Vocabulary:
    """Every word met: its hash pair -> its number, its text, whether it is a stop word."""

    def __init__(self) -> None:
        self.index: dict[tuple[int, int], int] = {}
        self.terms: list[str] = []
        self.stop: list[bool] = []

    def number(self, key: tuple[int, int], word: bytes) -> int:
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.terms)
            self.terms.append(word.decode("utf-8"))
            self.stop.append(self.terms[-1] in ENGLISH_STOP_WORDS)
        return found


def _words_as_bytes(text: str) -> bytes:
    """The lower-cased text as bytes in which the words are the runs of word bytes."""
    lowered = text.lower()
    if not lowered.isascii():
        lowered = " ".join(TOKEN.findall(lowered))
    return lowered.encode("utf-8")


def _count_chunk(
    encoded: list[bytes], vocabulary: _Vocabulary, powers: dict[np.uint64, _Powers]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """(text in the chunk, word number, count) of every distinct word of each text but the
    stop words, ordered by text; new words are added to `vocabulary`."""
    joined = b" ".join(encoded)
    data = np.frombuffer(joined, dtype=np.uint8)
    word = np.concatenate(([False], _WORD_BYTE[data], [False]))
    edges = np.diff(word.astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    long = ends - starts >= 2
    starts, ends = starts[long], ends[long]
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32)
    first = np.cumsum([0] + [len(e) + 1 for e in encoded[:-1]])
    doc = np.searchsorted(first, starts, side="right") - 1
    h1, h2 = (_hash(data, starts, ends, powers[p]) for p in (_P1, _P2))
    # Distinct words by the first hash (pandas' hash table); the second must then agree within
    # each group, else two words share the first (never seen; then the pairs are sorted).
    inverse, distinct = pd.factorize(h1)
    at = np.empty(len(distinct), dtype=np.int64)
    at[inverse] = np.arange(len(inverse))  # where one occurrence of each is (any will do)
    if not np.array_equal(h2[at][inverse], h2):
        pairs = np.stack([h1, h2], axis=1)
        _, at, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    code = np.empty(len(at), dtype=np.int64)
    uniques = zip(
        h1[at].tolist(), h2[at].tolist(), starts[at].tolist(), ends[at].tolist(), strict=True
    )
    for i, (a, b, start, end) in enumerate(uniques):
        code[i] = vocabulary.number((a, b), joined[start:end])
    term = code[inverse]
    wanted = ~np.array(vocabulary.stop, dtype=bool)[term]
    doc, term = doc[wanted], term[wanted]
    # (text, word) pairs counted with the hash table too; they come out in order of first
    # appearance, so by text (the words are in text order).
    width = len(vocabulary.terms) + 1
    pair, keys = pd.factorize(doc.astype(np.int64) * width + term)
    count = np.bincount(pair, minlength=len(keys)).astype(np.float32)
    return keys // width, (keys % width).astype(np.int32), count


class _Powers:
    """p^i and p^-i modulo 2^64 for i up to the longest chunk so far (grown when needed)."""

    def __init__(self, p: np.uint64) -> None:
        self.p = p
        self.inverse = _inverse(p)
        self.up = np.ones(1, dtype=np.uint64)
        self.down = np.ones(1, dtype=np.uint64)

    def get(self, n: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        if len(self.up) < n:
            size = n + n // 8  # chunks are about equal: the next fits too
            with np.errstate(over="ignore"):
                self.up = np.ones(size, dtype=np.uint64)
                self.up[1:] = np.cumprod(np.full(size - 1, self.p, dtype=np.uint64))
                self.down = np.ones(size, dtype=np.uint64)
                self.down[1:] = np.cumprod(np.full(size - 1, self.inverse, dtype=np.uint64))
        return self.up[:n], self.down[:n]


def _hash(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    powers: _Powers,
) -> npt.NDArray[np.uint64]:
    """Per word [start, end): sum of byte·p^(i - start) mod 2^64, mixed with its length."""
    up, down = powers.get(len(data) + 1)
    with np.errstate(over="ignore"):
        prefix = np.zeros(len(data) + 1, dtype=np.uint64)
        np.cumsum(data * up[:-1], out=prefix[1:])
        value = (prefix[ends] - prefix[starts]) * down[starts]
        return value ^ (ends - starts).astype(np.uint64) * np.uint64(0xFF51AFD7ED558CCD)


def _inverse(p: np.uint64) -> np.uint64:
    """p's inverse modulo 2^64 (p odd), by Newton's iteration."""
    x, q = int(p), int(p)
    for _ in range(6):
        x = x * (2 - q * x) % 2**64
    assert x * q % 2**64 == 1
    return np.uint64(x)
