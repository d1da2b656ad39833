"""Synthetic screening data: relevant issues share a vocabulary of their own."""

from __future__ import annotations

import numpy as np

HANG = [
    "hang",
    "stuck",
    "deadlock",
    "nccl",
    "timeout",
    "allreduce",
    "barrier",
    "watchdog",
    "collective",
    "rank",
]
OTHER = [
    "install",
    "docs",
    "typo",
    "readme",
    "question",
    "usage",
    "example",
    "tutorial",
    "wheel",
    "pip",
]


def vocabulary_dataset(
    n: int = 300, share: float = 0.1, seed: int = 0
) -> tuple[list[str], list[int]]:
    """`n` texts of 40 words, a `share` relevant: 6 words from HANG, the rest noise; the
    irrelevant ones take 6 from OTHER. Noise words (n0 … n499) are shared by all."""
    rng = np.random.default_rng(seed)
    noise = [f"n{i}" for i in range(500)]
    texts, labels = [], []
    for i in range(n):
        relevant = i % round(1 / share) == 0
        topic = HANG if relevant else OTHER
        words = [*rng.choice(topic, 6), *rng.choice(noise, 34)]
        texts.append(" ".join(rng.permutation(words)))
        labels.append(int(relevant))
    return texts, labels
