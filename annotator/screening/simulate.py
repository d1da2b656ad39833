"""Replaying known labels: how much screening a ranking model would have saved (pure: numpy
and the ranking model, no Django).

`simulate` takes the issues' texts and their known relevant (1) / irrelevant (0) labels and,
for each run r = 0 … runs-1 with seed s = seed + r:

1. screens in prioritised order (`screening_order`). Until at least one relevant and one
   irrelevant issue have been screened there is nothing to train on: issues come one at a time
   in the seeded random order (`ranking.random_order(n, s)`), the "random prior". With
   `prior="one-each"` the first two are instead one relevant and one irrelevant issue drawn with
   the seed, as ASReview's simulations start (its `--n_prior_included 1 --n_prior_excluded 1`).
   From then on the model is retrained after every `every` decisions (default 10) and the next
   `every` issues are its top-ranked. Once every relevant issue has been found, the rest are
   appended in the last ranking's order without retraining: no metric can change after that.
2. screens the same issues in the seeded random order alone, with the same seed (the random
   baseline behind `random_wss@95`, `random_wss@100` and the random recall curve).

Metrics of one screening order (`metrics`), all counting every screened issue, the prior
included (ASReview's insights leave the prior out by default; here the prior is screening the
team really does):

recall curve  found(k): relevant issues among the first k screened, k = 0 … N.
WSS@r         Work Saved over Sampling at recall r (Cohen, Hersh, Peterson and Yen 2006,
              "Reducing workload in systematic review preparation using automated citation
              classification", JAMIA 13(2):206-219, https://doi.org/10.1197/jamia.M1929):
                  WSS@r = (TN + FN) / N - (1 - r)
              at the first k where found(k) ≥ ⌈r·R⌉ (R relevant issues in all). TN + FN are the
              issues not yet screened there, so WSS@r = (N - k) / N - (1 - r). A perfect
              ranking has k = ⌈r·R⌉; random order has WSS near 0 on average.
ERF@x         Extra Relevant records Found after screening a fraction x (ASReview Insights,
              https://github.com/asreview/asreview-insights, "Extra relevant found": the share
              of relevant records found over what random screening finds, assuming relevant
              records spread evenly), computed as asreview-insights' `erf` does:
                  k = ⌊x·N⌋ (the last point at or before x),
                  ERF@x = (found(k) - round(R·(k - 1)/(N - 1))) / R,
              the random line running from 0 at the first record to R at the last, rounded as
              numpy rounds (half to even); ERF@x = 0 when k = 0.
ATD           Average Time to Discovery (Ferdinands et al. 2023, "Performance of active learning
              models for screening prioritization in systematic reviews", Systematic Reviews
              12:100, https://doi.org/10.1186/s13643-023-02257-7; ASReview Insights' `atd`):
              each relevant issue's time to discovery TD is the fraction of all issues screened
              when it is found (its 1-based position / N); ATD is the mean of TD over the
              relevant issues. asreview-insights prints the mean position itself: that is
              `atd_records` here (ATD · N).

`simulate` averages each metric over the runs (and the recall curves point by point) and keeps
every run's values.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .ranking import DEFAULT_MODEL, IntArray, Ints, Ranker, parameters, random_order

PRIORS = ("random", "one-each")
DEFAULT_EVERY = 10


# --- metrics of one order ---------------------------------------------------------------------
def recall_curve(found_in_order: Ints) -> IntArray:
    """found(k) for k = 0 … N: relevant among the first k screened (the 0/1 labels in order)."""
    labels = np.asarray(found_in_order, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(labels)]).astype(np.int64)


def screened_to_recall(found_in_order: Ints, recall: float) -> int:
    """The first k with found(k) ≥ ⌈recall·R⌉ (0 when nothing needs finding)."""
    curve = recall_curve(found_in_order)
    needed = math.ceil(recall * int(curve[-1]) - 1e-9)
    return int(np.searchsorted(curve, needed, side="left"))


def wss(found_in_order: Ints, recall: float) -> float:
    """WSS@recall = (N - k) / N - (1 - recall), k = screened_to_recall (Cohen et al. 2006)."""
    n = len(found_in_order)
    k = screened_to_recall(found_in_order, recall)
    return (n - k) / n - (1 - recall)


def erf(found_in_order: Ints, fraction: float = 0.10) -> float:
    """ERF@fraction as asreview-insights computes it (see the module docstring)."""
    n = len(found_in_order)
    curve = recall_curve(found_in_order)
    relevant = int(curve[-1])
    k = math.floor(fraction * n + 1e-9)
    if k == 0 or relevant == 0:
        return 0.0
    by_random = float(np.round(relevant * (k - 1) / (n - 1))) if n > 1 else 0.0
    return (int(curve[k]) - by_random) / relevant


def atd(found_in_order: Ints) -> float:
    """Mean over relevant issues of (1-based position when found) / N (Ferdinands et al.)."""
    labels = np.asarray(found_in_order, dtype=np.int64)
    positions = np.flatnonzero(labels == 1) + 1
    return float(positions.mean() / len(labels)) if len(positions) else 0.0


def metrics(found_in_order: Ints) -> dict[str, float]:
    """Every metric of one screening order, keyed as the command's JSON names them."""
    mean_td = atd(found_in_order)
    return {
        "wss@95": wss(found_in_order, 0.95),
        "wss@100": wss(found_in_order, 1.0),
        "erf@10": erf(found_in_order, 0.10),
        "atd": mean_td,
        "atd_records": mean_td * len(found_in_order),
        "screened_to_95": float(screened_to_recall(found_in_order, 0.95)),
        "screened_to_100": float(screened_to_recall(found_in_order, 1.0)),
    }


# --- replaying --------------------------------------------------------------------------------
def screening_order(
    ranker: Ranker,
    labels: Ints,
    *,
    seed: int,
    every: int = DEFAULT_EVERY,
    prior: str = "random",
) -> IntArray:
    """The order in which prioritised screening with `ranker` meets every issue, its decisions
    taken from `labels` (see the module docstring)."""
    y = np.asarray(labels, dtype=np.int64)
    screened = _prior(y, seed) if prior == "one-each" else []
    relevant, found = int(y.sum()), int(y[screened].sum()) if screened else 0
    while len(screened) < len(y):
        ranking = ranker.rank(screened, y[screened].tolist(), seed=seed)
        if found == relevant:
            screened.extend(ranking.tolist())
            break
        trained = len(set(y[screened].tolist())) == 2
        batch = ranking[: every if trained else 1].tolist()
        screened.extend(batch)
        found += int(y[batch].sum())
    return np.asarray(screened, dtype=np.int64)


def _prior(y: IntArray, seed: int) -> list[int]:
    rng = np.random.default_rng([seed, 1])
    return [int(rng.choice(np.flatnonzero(y == label))) for label in (1, 0)]


@dataclass(frozen=True)
class Run:
    """One run: the relevant (1) / irrelevant (0) labels in the order each way screened them."""

    seed: int
    found: IntArray
    random_found: IntArray

    def summary(self) -> dict[str, float]:
        """This run's values: the prioritised metrics, then `random_` + each random one."""
        ours, baseline = metrics(self.found.tolist()), metrics(self.random_found.tolist())
        return ours | {f"random_{key}": value for key, value in baseline.items()}


@dataclass(frozen=True)
class Simulation:
    model: str
    seed: int
    every: int
    prior: str
    n_issues: int
    n_relevant: int
    inputs_sha256: str
    runs: list[Run] = field(repr=False)

    def mean(self, key: str) -> float:
        """The mean over runs of one metric (`wss@95`, or `random_wss@95` for the baseline)."""
        return float(np.mean([run.summary()[key] for run in self.runs]))

    def curve(self, *, baseline: bool = False) -> npt.NDArray[np.float64]:
        """found(k), k = 0 … N, averaged over runs, of the prioritised or the random order."""
        curves = [recall_curve(run.random_found if baseline else run.found) for run in self.runs]
        return np.asarray(np.mean(curves, axis=0), dtype=np.float64)

    def parameters(self) -> dict[str, object]:
        return parameters(self.model) | {"every": self.every, "prior": self.prior}


def simulate(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    model: str = DEFAULT_MODEL,
    seed: int = 0,
    runs: int = 1,
    every: int = DEFAULT_EVERY,
    prior: str = "random",
) -> Simulation:
    """Replay `labels` (1 relevant, 0 irrelevant; one per text) `runs` times, seeds `seed`,
    `seed` + 1, …, prioritised and in random order (see the module docstring)."""
    y = _checked(texts, labels, runs=runs, every=every, prior=prior, seed=seed)
    ranker = Ranker.fit(texts, model)
    done = []
    for run_seed in range(seed, seed + runs):
        order = screening_order(ranker, y, seed=run_seed, every=every, prior=prior)
        baseline = random_order(len(y), run_seed)
        done.append(Run(seed=run_seed, found=y[order], random_found=y[baseline]))
    return Simulation(
        model=model,
        seed=seed,
        every=every,
        prior=prior,
        n_issues=len(y),
        n_relevant=int(y.sum()),
        inputs_sha256=inputs_hash(texts, y.tolist()),
        runs=done,
    )


def inputs_hash(texts: Sequence[str], labels: Sequence[int]) -> str:
    """SHA-256 over the texts and labels in order: what a stored result was computed from."""
    digest = hashlib.sha256()
    for text, label in zip(texts, labels, strict=True):
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(f"{len(encoded)}:{label}:".encode())
        digest.update(encoded)
    return digest.hexdigest()


def _checked(
    texts: Sequence[str], labels: Sequence[int], *, runs: int, every: int, prior: str, seed: int
) -> IntArray:
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if len(y) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(y)} labels")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 (irrelevant) or 1 (relevant)")
    if not (y == 1).any() or not (y == 0).any():
        raise ValueError("the labels need at least one relevant and one irrelevant issue")
    if runs < 1 or every < 1 or seed < 0:
        raise ValueError("runs and every must be at least 1 and the seed at least 0")
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; expected one of {', '.join(PRIORS)}")
    return y
