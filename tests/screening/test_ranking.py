"""The ranking model: seeded, deterministic, random until both labels are seen, vocabulary-led
after; and the pure cores import no Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotator.screening import ranking
from annotator.screening.ranking import (
    MAX_TEXT_CHARS,
    MODELS,
    TFIDF,
    Ranker,
    double_balance,
    issue_text,
    parameters,
    random_order,
    rank,
    tfidf_features,
)

from .synthetic import vocabulary_dataset

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("model", MODELS)
def test_the_same_seed_gives_the_same_ranking(model: str) -> None:
    texts, labels = vocabulary_dataset(200)
    screened = [0, 1, 2, 3, 10, 20]
    y = [labels[i] for i in screened]
    first = rank(texts, screened, y, seed=7, model=model)
    assert first.tolist() == rank(texts, screened, y, seed=7, model=model).tolist()
    assert sorted(first.tolist()) == sorted(set(range(200)) - set(screened))


@pytest.mark.parametrize("model", MODELS)
def test_until_both_labels_are_seen_the_order_is_the_seeded_permutation(model: str) -> None:
    texts, labels = vocabulary_dataset(50)
    order = random_order(50, 3).tolist()
    assert rank(texts, [], [], seed=3, model=model).tolist() == order
    only_irrelevant = [i for i in order[:5] if labels[i] == 0]
    ranked = rank(texts, only_irrelevant, [0] * len(only_irrelevant), seed=3, model=model)
    assert ranked.tolist() == [i for i in order if i not in only_irrelevant]
    assert rank(texts, [], [], seed=4, model=model).tolist() != order


@pytest.mark.parametrize("model", ["tfidf-svm", "tfidf-logreg"])
def test_issues_sharing_the_relevant_vocabulary_come_first(model: str) -> None:
    texts, labels = vocabulary_dataset(300)
    screened = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]  # 0 and 10 are relevant
    ranked = rank(texts, screened, [labels[i] for i in screened], seed=0, model=model)
    # One in ten is relevant: random order puts ~2 in the top 20; two examples move 14 there.
    assert sum(labels[i] for i in ranked[:20].tolist()) >= 14


def test_ties_are_broken_by_the_seeded_permutation_not_by_file_order() -> None:
    texts = ["same words here"] * 30  # every score equal
    screened, y = [0, 1], [1, 0]
    ranked = rank(texts, screened, y, seed=5, model="tfidf-svm")
    assert ranked.tolist() == [i for i in random_order(30, 5).tolist() if i not in screened]


def test_a_retrain_reuses_the_features_fitted_once() -> None:
    texts, labels = vocabulary_dataset(100)
    ranker = Ranker.fit(texts)
    features = ranker.features
    ranker.rank([0, 1], [labels[0], labels[1]], seed=0)
    ranker.rank([0, 1, 2], [labels[0], labels[1], labels[2]], seed=0)
    assert ranker.features is features
    assert features is not None and features.shape[0] == 100


MIXED = [
    "NCCL timeout on RANK0: ProcessGroupNCCL.cpp:1234 watchdog_thread x y z",
    "",
    "the and of a",  # stop words and a single letter only
    "A_b __ _x ab AB Ab 1 22 333 3.14 0x7f3a_beef",
    "Ünïcode Straße naïve café é ÉÉ",  # non-ASCII: the regex path
    "日本語 テキスト error ERROR",
    "émoji 😀 ok ok ok-ok",
    'CUDA out of memory.\n```\nTraceback (most recent call last):\n  File "x.py", line 3\n```',
    "tab\tseparated\rcarriage\x00nul\x7fdel words",
]


def _sklearn(texts: list[str]) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(**TFIDF).fit_transform(texts)


@pytest.mark.parametrize("chunk_bytes", [4_000_000, 40])
def test_the_features_are_scikit_learns_tfidf(
    chunk_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small chunks: a word first met in a later chunk of texts keeps one column.
    monkeypatch.setattr(ranking, "_CHUNK_BYTES", chunk_bytes)
    texts = MIXED + vocabulary_dataset(120)[0]
    ours, theirs = tfidf_features(texts), _sklearn(texts)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    assert abs(ours - theirs).max() == 0


def test_two_words_sharing_the_first_hash_keep_their_own_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = ranking._hash

    def colliding(data, starts, ends, powers):  # type: ignore[no-untyped-def]
        found = real(data, starts, ends, powers)
        return found * 0 if powers.p == ranking._P1 else found

    monkeypatch.setattr(ranking, "_hash", colliding)
    ours, theirs = tfidf_features(MIXED), _sklearn(MIXED)
    assert ours.shape == theirs.shape and abs(ours - theirs).max() == 0


def test_texts_with_no_word_at_all_still_rank() -> None:
    ranked = rank(["", "the", "a"], [0, 1], [1, 0], seed=0)
    assert ranked.tolist() == [2]


@pytest.mark.parametrize(
    ("screened", "labels", "message"),
    [
        ([0, 1], [1], "2 screened issues but 1 labels"),
        ([0, 0], [1, 0], "an issue is screened twice"),
        ([0, 9], [1, 0], "outside 0..4"),
        ([0, 1], [1, 2], "labels must be 0"),
    ],
)
def test_bad_decisions_are_refused(screened: list[int], labels: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rank(["a b", "c d", "e f", "g h", "i j"], screened, labels, seed=0)


def test_an_unknown_model_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown model 'bert'; expected one of tfidf-svm"):
        Ranker.fit(["a"], "bert")


def test_double_balance_keeps_the_size_and_copies_the_rare_relevant_ones_up() -> None:
    y = np.array([1] * 3 + [0] * 97)
    screened = np.arange(100)
    chosen = double_balance(screened, y, np.random.default_rng(0))
    assert len(chosen) == 100
    # w1 = 2.155 * (3/97)^-0.94 ≈ 56.5, w0 = 1 - 0.211 * (1 + ln 100)^-1 ≈ 0.962:
    # k1 = 100 * 169.5 / (169.5 + 93.3) ≈ 64.5 relevant of 100.
    assert int(y[chosen].sum()) in (64, 65)
    again = double_balance(screened, y, np.random.default_rng(0))
    assert chosen.tolist() == again.tolist()


def test_double_balance_of_one_each_trains_on_both() -> None:
    chosen = double_balance(np.array([4, 9]), np.array([1, 0]), np.random.default_rng(0))
    assert sorted(chosen.tolist()) == [0, 1]


def test_issue_text_joins_title_body_and_comments_and_cuts_the_tail() -> None:
    assert issue_text("Hang", "at barrier", ["me too", ""]) == "Hang\n\nat barrier\n\nme too"
    long = issue_text("Title first", "x" * MAX_TEXT_CHARS, ["lost comment"])
    assert len(long) == MAX_TEXT_CHARS
    assert long.startswith("Title first\n\nxxx")
    assert "lost" not in long


def test_parameters_name_the_model_and_its_balance() -> None:
    assert parameters("tfidf-svm")["balance"] == "double"
    assert parameters("tfidf-logreg")["balance"] == "class_weight=balanced"
    assert parameters("random") == {"model": "random"}


PURE = ("ranking", "simulate", "corpus", "charts")


def test_the_pure_cores_import_no_django() -> None:
    modules = ", ".join(f"annotator.screening.{name}" for name in PURE)
    code = (
        f"import {modules}, sys; "
        "assert not any(m.startswith('django') for m in sys.modules), 'django loaded'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_another_process_with_other_global_random_state_ranks_the_same() -> None:
    code = (
        "import numpy, random; numpy.random.seed(12345); random.seed(9); "
        "from tests.screening.synthetic import vocabulary_dataset; "
        "from annotator.screening.ranking import rank; "
        "t, l = vocabulary_dataset(200); s = list(range(30)); "
        "print(rank(t, s, [l[i] for i in s], seed=11).tolist())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    )
    texts, labels = vocabulary_dataset(200)
    screened = list(range(30))
    here = rank(texts, screened, [labels[i] for i in screened], seed=11).tolist()
    assert done.stdout.strip() == str(here)
