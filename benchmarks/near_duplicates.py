"""Benchmark: the near-duplicate pass over the whole pool, and the similar-issues lookup.

    .venv/bin/python benchmarks/near_duplicates.py [--issues 100000] [--small 20000] [--keep]

1. Drops and creates the database named by BENCH_DATABASE_URL (default
   postgres://root@127.0.0.1:5432/annotator_bench_near_duplicates) and migrates it, then
   writes --small and later --issues synthetic issues (generation is not the measure): a
   title and a ~2 KB report of words drawn from a Zipf-shaped vocabulary of 20,000 made-up
   words around a log with a traceback (one of 40 exception types and 300 messages, frames
   from 60 functions) carrying its own user's paths, ranks, PIDs, timestamps and addresses;
   2% of the issues are a planted near-duplicate of an earlier one (the same report with
   other paths, timestamps, ranks and whitespace).
2. In a fresh process per size: `run_duplicate_pass` over every issue (the job the page and
   the API start), wall seconds and peak RSS beside the RSS after Django start-up. The index
   (MinHash values, LSH buckets, the sparse term counts) grows with the corpus; nothing else
   should. Also the planted pairs found (recall).
3. In a fresh process: the similar-issues lookup `GET /api/issues/<id>/similar/` for random
   issues as an owner (Django's test client, so everything but the socket: URL, auth, the
   service, serialization), --lookups of them, p50 and p95.
Writes benchmarks/results/near_duplicates.json (not committed); the last line is
`pass at N issues: X s (target 120 s); similar-issue lookup p95 Y ms (target 100 ms)`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_near_duplicates"
PASS_TARGET_S = 120
LOOKUP_TARGET_MS = 100
PLANTED_SHARE = 0.02
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "te",
    "vi",
    "do",
    "pa",
    "ge",
    "ho",
    "ju",
    "be",
    "fi",
    "ar",
    "en",
    "is",
    "on",
    "ul",
    "tor",
    "mar",
    "kel",
    "dan",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--lookups", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["generate", "pass", "lookup"])
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "", "DJANGO_DEBUG": "0"}
    recreate_database(url)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"],
        env=env,
        check=True,
    )
    runs: list[dict[str, Any]] = []
    have = 0
    for size in (args.small, args.issues):
        made = _json_child(
            ["--child", "generate", "--issues", str(size), "--start", str(have)], env
        )
        have = size
        print(f"generated {size:,} issues ({made['planted']:,} planted duplicates)")
        out = _json_child(["--child", "pass"], env)
        out["size"] = size
        runs.append(out)
        print(
            f"pass over {size:>7,} issues: {out['seconds']:6.1f} s  groups {out['groups']:,}  "
            f"planted pairs found {out['planted_found']:,}/{out['planted']:,}  "
            f"peak {out['peak_mib']:.0f} MiB (+{out['peak_mib'] - out['baseline_mib']:.0f} "
            f"over start-up; MinHash rows and term counts ~{out['index_mib']:.0f} MiB, LSH "
            "buckets not counted)"
        )
    lookup = _json_child(["--child", "lookup", "--lookups", str(args.lookups)], env)
    print(
        f"similar-issue lookup at {args.issues:,} issues: p50 {lookup['p50_ms']:.1f} ms, "
        f"p95 {lookup['p95_ms']:.1f} ms over {args.lookups} requests "
        f"({lookup['mean_listed']:.1f} similar issues listed on average)"
    )
    small, large = runs
    grow = (large["peak_mib"] - large["baseline_mib"]) - (small["peak_mib"] - small["baseline_mib"])
    print(
        f"memory: +{grow:.0f} MiB from {args.small:,} to {args.issues:,} issues, of which "
        f"MinHash rows and term counts +{large['index_mib'] - small['index_mib']:.0f} MiB"
    )
    result = ROOT / "benchmarks" / "results" / "near_duplicates.json"
    result.parent.mkdir(exist_ok=True)
    result.write_text(json.dumps({"passes": runs, "lookup": lookup}, indent=2))
    if not args.keep:
        drop_database(url)
    print(
        f"pass at {args.issues:,} issues: {large['seconds']:.1f} s (target {PASS_TARGET_S} s); "
        f"similar-issue lookup p95 {lookup['p95_ms']:.1f} ms (target {LOOKUP_TARGET_MS} ms)"
    )


def _json_child(extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, *extra], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(extra)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _mib(kib: int) -> float:
    return kib / 1024


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _child(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    import django

    django.setup()
    baseline = _rss_mib()
    out = {"generate": _generate, "pass": _pass, "lookup": _lookup}[args.child](args)
    out.update(
        peak_mib=_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss), baseline_mib=baseline
    )
    print(json.dumps(out))


# --- the corpus -----------------------------------------------------------------------------
def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < 20_000:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.words = _vocabulary(rng)
        self.weights = [1 / (i + 1) for i in range(len(self.words))]
        self.exceptions = [f"{rng.choice(self.words).title()}Error" for _ in range(40)]
        self.messages = [" ".join(rng.choices(self.words[:3000], k=8)) for _ in range(300)]
        self.functions = [rng.choice(self.words) for _ in range(60)]

    def report(self, rng: random.Random) -> tuple[str, str]:
        words = rng.choices(self.words, weights=self.weights, k=300)
        title = " ".join(words[:8])
        frames = rng.sample(self.functions, 4)
        exception, message = rng.choice(self.exceptions), rng.choice(self.messages)
        log = "\n".join(
            [
                "{ts} INFO [rank{rank}] pid={pid} started on {host}",
                "Traceback (most recent call last):",
                *[
                    f'  File "{{home}}/pkg/{f}.py", line {rng.randint(10, 2000)}, in {f}'
                    for f in frames
                ],
                f"{exception}: {message} at {{addr}}",
            ]
        )
        body = f"{' '.join(words[8:150])}\n\n```\n{log}\n```\n\n{' '.join(words[150:])}"
        return title, body

    @staticmethod
    def fill(body: str, rng: random.Random) -> str:
        user = "".join(rng.choices("abcdefgh", k=6))
        return body.format(
            ts=f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
            rank=rng.randint(0, 63),
            pid=rng.randint(100, 99999),
            host=f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:29500",
            home=f"/home/{user}/venv/lib/python3.{rng.randint(8, 12)}/site-packages",
            addr=hex(rng.getrandbits(40)),
        )


def _generate(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from annotator.issues.models import Issue, Repository

    corpus = Corpus(args.seed)
    rng = random.Random(args.seed + args.start)
    repositories = [
        Repository.objects.get_or_create(owner="bench", name=name)[0]
        for name in ("DeepSpeed", "Megatron-LM", "ColossalAI")
    ]
    templates: list[tuple[str, str]] = []
    planted = 0
    batch: list[Issue] = []
    for n in range(args.start, args.issues):
        if templates and rng.random() < PLANTED_SHARE:
            title, body = rng.choice(templates)
            body = body.replace(" ", "  ").replace("\n", "\n \n")
            planted += 1
        else:
            title, body = corpus.report(rng)
            if len(templates) < 5000:
                templates.append((title, body))
        batch.append(
            Issue(
                repository=repositories[n % 3],
                number=n + 1,
                title=title,
                body=Corpus.fill(body, rng),
                state="open",
                content_hash=f"{n:064x}",
            )
        )
        if len(batch) == 5000:
            Issue.objects.bulk_create(batch)
            batch = []
    Issue.objects.bulk_create(batch)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"planted": planted}


def _planted_pairs() -> set[tuple[int, int]]:
    """Issues with the same title (the planted copies keep their original's): the pairs."""
    from django.db.models import Count

    from annotator.issues.models import Issue

    titles = Issue.objects.values("title").annotate(n=Count("pk")).filter(n__gt=1)
    pairs = set()
    for title in titles.values_list("title", flat=True):
        ids = sorted(Issue.objects.filter(title=title).values_list("pk", flat=True))
        pairs |= {(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]}
    return pairs


def _pass(args: argparse.Namespace) -> dict[str, Any]:
    from annotator.similarity.duplicates import Params
    from annotator.similarity.models import DuplicatePair
    from annotator.similarity.services import run_duplicate_pass, start_duplicate_pass

    job = start_duplicate_pass(enqueue=False)
    started = time.perf_counter()
    job = run_duplicate_pass(pass_id=job.pk)
    seconds = time.perf_counter() - started
    if job.status != "succeeded":
        raise SystemExit(f"the pass failed: {job.error}")
    planted = _planted_pairs()
    found = set(DuplicatePair.objects.values_list("issue_a_id", "issue_b_id"))
    issues = job.counts["issues"]
    # MinHash rows (uint32) and, roughly, the term counts (float32 + int32 per term, ~150 terms)
    index_mib = issues * (Params().num_perm * 4 + 150 * 8) / 2**20
    return {
        "seconds": seconds,
        "counts": job.counts,
        "groups": job.counts["groups"],
        "planted": len(planted),
        "planted_found": len(planted & found),
        "index_mib": index_mib,
    }


def _lookup(args: argparse.Namespace) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.issues.models import Issue

    user, _ = get_user_model().objects.get_or_create(username="bench-owner", is_staff=True)
    client = Client(SERVER_NAME="localhost")
    client.force_login(user)
    ids = list(Issue.objects.values_list("pk", flat=True))
    rng = random.Random(args.seed)
    times = []
    listed = 0
    for _ in range(20):  # warm up
        client.get(f"/api/issues/{rng.choice(ids)}/similar/")
    for _ in range(args.lookups):
        url = f"/api/issues/{rng.choice(ids)}/similar/"
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code} {response.content[:200]!r}")
        listed += len(response.json())
    times.sort()
    return {
        "p50_ms": times[len(times) // 2],
        "p95_ms": times[int(len(times) * 0.95) - 1],
        "lookups": len(times),
        "mean_listed": listed / len(times),
    }


if __name__ == "__main__":
    main()
