"""The ranking model of prioritised screening (pure: scikit-learn and numpy, no Django).

Given every issue's text and the screening decisions made so far (relevant 1 / irrelevant 0),
`rank` orders the issues not yet screened, most likely relevant first ("max" query, as in
ASReview: van de Schoot et al. 2021, https://doi.org/10.1038/s42256-020-00287-7).

Text. One text per issue (`issue_text`): the title, the body, then the comments oldest first,
joined by blank lines and cut at MAX_TEXT_CHARS characters. The title always survives the cut
(it comes first); what goes is the tail of long threads, mostly pasted logs that repeat one
error hundreds of times and would otherwise outweigh what the reporter wrote.

Features. `Ranker` fits one TfidfVectorizer on all texts, screened or not, once (as ASReview
does: IDF from the whole collection is no peek at labels) and keeps the sparse matrix, so a
retrain fits the classifier only: under half a second at 10,000 issues, 9,990 of them screened
(benchmarks/screening_ranking.py).

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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
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
        vectorizer = TfidfVectorizer(**TFIDF)
        try:
            features = vectorizer.fit_transform(texts).tocsr()
        except ValueError:  # no word at all (empty texts, or only stop words)
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
        return np.asarray(classifier.decision_function(self.features), dtype=np.float64)


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
