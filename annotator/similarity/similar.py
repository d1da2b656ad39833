"""Each issue's most similar issues by TF-IDF cosine (pure: scikit-learn, scipy, numpy).

`SimilarIndex` takes the issues in batches (streamed from the database: only the term counts
are kept, as a sparse matrix, never the texts), then `neighbours` yields every issue's top
`k` others, highest cosine first.

Features: word counts hashed into 2^20 columns (HashingVectorizer: no vocabulary to hold,
English stop words dropped), sublinear tf (1 + log tf) times smooth IDF (log((1 + n) /
(1 + df)) + 1, scikit-learn's), as annotator/screening/ranking.py does. A full all-pairs
product is quadratic in the words issues share (a word in half the issues makes n²/4 products),
so each issue keeps its `keep_terms` heaviest terms and terms found in more than `max_df` of the
issues (and in more than MIN_COMMON_DF) are dropped (their IDF is the lowest anyway); the score
is the cosine of those reduced vectors (each normalised again), in [0, 1]. Terms found in one
issue only are dropped too: they cannot make two issues alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer

N_FEATURES = 2**20
MIN_COMMON_DF = 100  # a term is dropped as common only past max_df of the issues and this many


@dataclass(frozen=True)
class SimilarParams:
    k: int = 10
    keep_terms: int = 50
    max_df: float = 0.1
    min_score: float = 0.05
    # Cells (rows by issues) of the all-pairs product computed at a time: its memory stays
    # under ~50 MB however many issues there are (40 rows at 100,000 issues).
    chunk_cells: int = 4_000_000

    def as_dict(self) -> dict[str, object]:
        return {
            "method": "TF-IDF cosine (hashed terms, sublinear tf, smooth idf)",
            "k": self.k,
            "keep_terms": self.keep_terms,
            "max_df": self.max_df,
            "min_score": self.min_score,
            "n_features": N_FEATURES,
        }


class SimilarIndex:
    def __init__(self, params: SimilarParams | None = None) -> None:
        self.params = params or SimilarParams()
        self._vectorizer = HashingVectorizer(
            n_features=N_FEATURES, stop_words="english", alternate_sign=False, norm=None
        )
        self._blocks: list[sparse.csr_matrix] = []
        self._df = np.zeros(N_FEATURES, dtype=np.int64)
        self.keys: list[int] = []

    def add(self, keys: Sequence[int], texts: Sequence[str]) -> None:
        if not keys:
            return
        counts = self._vectorizer.transform(texts).tocsr()
        # Sublinear tf now (it needs no other issue), kept as float32: half the memory.
        counts.data = (1 + np.log(counts.data)).astype(np.float32)
        self._df += np.bincount(counts.indices, minlength=N_FEATURES)
        self._blocks.append(counts)
        self.keys.extend(keys)

    def neighbours(self) -> Iterator[tuple[int, list[tuple[int, float]]]]:
        """(key, [(other key, cosine), …]) for every issue, best first, at most k others
        scoring at least min_score."""
        if not self.keys:
            return
        matrix = self._weighted()
        keys = np.asarray(self.keys, dtype=np.int64)
        transposed = matrix.T.tocsr()
        rows = max(1, min(1000, self.params.chunk_cells // matrix.shape[0]))
        for start in range(0, matrix.shape[0], rows):
            scores = (matrix[start : start + rows] @ transposed).tocsr()
            for offset in range(scores.shape[0]):
                row = start + offset
                yield int(keys[row]), self._top(scores, offset, row, keys)

    def _top(
        self, scores: sparse.csr_matrix, offset: int, row: int, keys: np.ndarray
    ) -> list[tuple[int, float]]:
        begin, end = scores.indptr[offset], scores.indptr[offset + 1]
        columns, values = scores.indices[begin:end], scores.data[begin:end]
        keep = (columns != row) & (values >= self.params.min_score)
        columns, values = columns[keep], values[keep]
        k = self.params.k
        if len(values) > k:
            best = np.argpartition(-values, k)[:k]
            columns, values = columns[best], values[best]
        order = np.lexsort((keys[columns], -values))
        return [(int(keys[columns[i]]), round(float(values[i]), 4)) for i in order]

    def _weighted(self) -> sparse.csr_matrix:
        """TF-IDF, each issue reduced to its heaviest terms and normalised; block by block, each
        term-count block freed once reduced (the reduced matrix is a fraction of them)."""
        n = len(self.keys)
        idf = (np.log((1 + n) / (1 + self._df)) + 1).astype(np.float32)
        # A small pool keeps its common terms: they cost nothing there, and dropping every
        # term of more than 10% of 40 issues would leave little to compare.
        idf[(self._df < 2) | (self._df > max(MIN_COMMON_DF, self.params.max_df * n))] = 0
        reduced = []
        while self._blocks:
            counts = self._blocks.pop(0)
            counts.data *= idf[counts.indices]
            counts.eliminate_zeros()
            reduced.append(_normalised(_heaviest(counts, self.params.keep_terms)))
        return sparse.vstack(reduced, format="csr")


def _heaviest(matrix: sparse.csr_matrix, keep: int) -> sparse.csr_matrix:
    """Each row reduced to its `keep` largest values."""
    lengths = np.diff(matrix.indptr)
    if lengths.max(initial=0) <= keep:
        return matrix
    data, indices, indptr = [], [], [0]
    for row in range(matrix.shape[0]):
        begin, end = matrix.indptr[row], matrix.indptr[row + 1]
        values, columns = matrix.data[begin:end], matrix.indices[begin:end]
        if end - begin > keep:
            best = np.argpartition(-values, keep)[:keep]
            values, columns = values[best], columns[best]
        data.append(values)
        indices.append(columns)
        indptr.append(indptr[-1] + len(values))
    return sparse.csr_matrix(
        (np.concatenate(data), np.concatenate(indices), np.asarray(indptr)), shape=matrix.shape
    )


def _normalised(matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    return sparse.csr_matrix(sparse.diags(1 / norms) @ matrix, dtype=np.float32)
