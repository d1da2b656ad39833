"""One retrain of the screening ranking model at study scale (annotator/screening/ranking.py).

    .venv/bin/python benchmarks/screening_ranking.py [--issues 10000] [--relevant 0.05]
        [--screened 500,5000,9990] [--model tfidf-svm] [--seed 0] [--repeat 3]

Builds --issues synthetic issues of ~2 KB each (a title, a bug report around a fenced log of
NCCL / traceback lines, a comment; words drawn from a Zipf-shaped vocabulary of 20,000, the
relevant share drawing part of their words from a 200-word vocabulary of their own), fits the
TF-IDF features once (`Ranker.fit`, timed on its own), then times `Ranker.rank` — the retrain:
fit the classifier on the screened issues, score every issue, order the unscreened — with
--screened issues labelled, best of --repeat. Target: a retrain in seconds (under 2 s) at
10,000 issues, so a screening round can retrain after every few decisions. No database.
Writes benchmarks/results/screening_ranking.json (not committed); the last line is
`retrain at N issues: worst X s (M screened, MODEL)`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from annotator.screening.ranking import MODELS, Ranker, issue_text

TARGET_SECONDS = 2.0
WORDS = 300  # with the log, ~2 KB an issue
LOG_LINES = [
    "[rank{r}]:[E ProcessGroupNCCL.cpp:{n}] NCCL watchdog thread terminated with exception",
    "RuntimeError: CUDA out of memory. Tried to allocate {n} MiB (GPU {r}; 79.15 GiB total)",
    'File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line {n}',
    "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -{r}) local_rank: {r}",
    "INFO colossalai - ProcessGroup - rank {r} world size {n} backend nccl initialised",
]


def make_issues(count: int, relevant_share: float, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, 20_001)
    words = rng.choice(len(weights), (count, WORDS), p=weights / weights.sum())
    labels = (rng.random(count) < relevant_share).astype(np.int64)
    texts = []
    for row, label in zip(words, labels, strict=True):
        names = [f"w{i}" for i in row]
        if label:  # a quarter of a relevant issue's words come from its topic
            names[::4] = [f"t{i}" for i in rng.integers(200, size=len(names[::4]))]
        log = "\n".join(
            LOG_LINES[i % len(LOG_LINES)].format(r=rng.integers(8), n=rng.integers(9999))
            for i in range(8)
        )
        body = " ".join(names[10:220]) + "\n```\n" + log + "\n```\n"
        texts.append(issue_text(" ".join(names[:10]), body, [" ".join(names[220:])]))
    return texts, labels


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def screened_set(labels: np.ndarray, size: int, seed: int) -> np.ndarray:
    """`size` issues, at least one of each label, as a screening round would have them."""
    rng = np.random.default_rng(seed)
    first = [int(np.flatnonzero(labels == 1)[0]), int(np.flatnonzero(labels == 0)[0])]
    rest = rng.permutation(np.setdiff1d(np.arange(len(labels)), first))[: size - 2]
    return np.concatenate([first, rest]).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument("--relevant", type=float, default=0.05)
    parser.add_argument("--screened", default="500,5000,9990")
    parser.add_argument("--model", default="tfidf-svm", choices=MODELS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    texts, labels = make_issues(args.issues, args.relevant, args.seed)
    mean_kb = sum(len(t.encode()) for t in texts) / len(texts) / 1024
    print(
        f"{args.issues:,} synthetic issues, {mean_kb:.1f} KB each on average, "
        f"{int(labels.sum()):,} relevant; model {args.model}; best of {args.repeat}"
    )
    start = time.perf_counter()
    ranker = Ranker.fit(texts, args.model)
    fit_seconds = time.perf_counter() - start
    shape = ranker.features.shape if ranker.features is not None else (len(texts), 0)
    print(f"{'features (TF-IDF, once)':<34} {fit_seconds:8.3f} s  {shape[1]:,} terms")
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.screened.split(",")):
        size = min(size, args.issues - 1)
        screened = screened_set(labels, size, args.seed)
        y = labels[screened]
        seconds = best(lambda s=screened, y=y: ranker.rank(s, y, seed=args.seed), args.repeat)
        rows.append({"screened": size, "seconds": seconds})
        print(f"{f'retrain, {size:,} screened':<34} {seconds:8.3f} s")
    worst = max(rows, key=lambda row: row["seconds"])
    out = Path(__file__).parent / "results" / "screening_ranking.json"
    out.parent.mkdir(exist_ok=True)
    record = {"args": vars(args), "features_seconds": fit_seconds, "terms": shape[1], "rows": rows}
    out.write_text(json.dumps(record, indent=2))
    verdict = "ok" if worst["seconds"] < TARGET_SECONDS else f"over the {TARGET_SECONDS:g} s target"
    print(
        f"retrain at {args.issues:,} issues: worst {worst['seconds']:.3f} s "
        f"({worst['screened']:,} screened, {args.model}) — {verdict}"
    )
    if worst["seconds"] >= TARGET_SECONDS:
        sys.exit(1)


if __name__ == "__main__":
    main()
