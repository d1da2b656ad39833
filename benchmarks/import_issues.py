"""Benchmark: import GitHub REST issue arrays of 10,000 and 100,000 issues into PostgreSQL.

Each import runs in a fresh process, so its peak RSS is its own. See benchmarks/README.md.

    DATABASE_URL=postgres://root@127.0.0.1:5432/annotator_bench .venv/bin/python \
        benchmarks/import_issues.py [--sizes 10000,100000] [--seed 7] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "import_issues.json"
TARGET_RATE = 5_000  # issues/s
FLAT_RATIO = 1.25  # peak RSS at the largest size / at the smallest
REFERENCE = "Label Studio 1.23: 22.6 s for 10,000 issues (~440 issues/s)"

# Times the two steps of `manage.py import_issues` apart: the atomic import (after which every
# issue is stored, listed and readable) and the search indexing that follows its commit. The
# process wall time adds interpreter and Django start-up.
# It also counts the CPU seconds of the process and of its PostgreSQL backend (read from /proc
# when the server runs on this machine), and of the whole machine (/proc/stat), which adds the
# backend that computes the search vectors ahead (its connection closes with the import) and
# anything else running: on a shared machine wall seconds measure the load as much as the code,
# CPU seconds the work.
CHILD = """
import json, os, resource, sys, time
import django
django.setup()
from django.db import connection
from annotator.issues.search import index_pending_issues
from annotator.issues.services import import_issues
with connection.cursor() as cursor:
    cursor.execute("SELECT pg_backend_pid()")
    (backend,) = cursor.fetchone()
def machine():
    with open("/proc/stat") as stat:  # user nice system idle iowait irq softirq
        ticks = [int(n) for n in stat.readline().split()[1:8]]
    return (sum(ticks[:3]) + ticks[5] + ticks[6]) / os.sysconf("SC_CLK_TCK")
def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open(f"/proc/{backend}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        server = float("nan")
    return own.ru_utime + own.ru_stime, server
start, cpu0, machine0 = time.perf_counter(), cpu(), machine()
with open(sys.argv[1], "rb") as stream:
    counts = import_issues(stream=stream, format="auto", filename=os.path.basename(sys.argv[1]),
                           index_for_search=False)
imported, cpu1 = time.perf_counter(), cpu()
indexed = index_pending_issues()
done, cpu2, machine2 = time.perf_counter(), cpu(), machine()
print(json.dumps({"seconds": imported - start, "index_seconds": done - imported,
                  "indexed": indexed, "counts": str(counts),
                  "python_cpu_s": cpu2[0] - cpu0[0], "postgres_cpu_s": cpu2[1] - cpu0[1],
                  "index_postgres_cpu_s": cpu2[1] - cpu1[1], "machine_cpu_s": machine2 - machine0}))
"""

LABELS = [
    "bug",
    "enhancement",
    "question",
    "documentation",
    "training",
    "inference",
    "zero",
    "pipeline",
    "moe",
    "nccl",
]
TITLES = [
    "[BUG] {e} with ZeRO stage {z} on {n} GPUs",
    "NCCL timeout at step {s} ({e})",
    "Pipeline parallel hangs after {s} steps",
    "{e} when loading checkpoint at step {s}",
    "[REQUEST] support {e} in ZeRO-{z} offload",
    "Loss is NaN with bf16 and {n} ranks",
]
ERRORS = [
    "RuntimeError: CUDA out of memory",
    "torch.distributed.DistBackendError",
    "RuntimeError: NCCL communicator was aborted",
    "AssertionError: param not in partition",
    "ValueError: expected all tensors on the same device",
]
NOISE = [  # log lines before the failure, picked at random
    "node-{r}:{p}:{p} [{r}] NCCL INFO Channel {c:02d}/32 : {r} -> {c} via P2P/IPC/read",
    "node-{r}:{p}:{p} [{r}] NCCL INFO Connected all rings, comm 0x{h:x} nRanks {n}",
    "node-{r}:{p}:{p} [{r}] NCCL WARN Call to ibv_poll_cq failed with error 12",
    "[2024-03-0{c} 12:{c:02d}:1{c},{p}] [INFO] [logging.py:96:log_dist] [Rank 0] step={s}, "
    "skipped=0, lr=[0.000{l}], mom=[(0.9, 0.95)]",
    "[W socket.cpp:{l}] [c10d] The client socket has failed to connect to node-{r}:29500.",
    "[E ProcessGroupNCCL.cpp:{l}] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn={h}, Timeout(ms)=1800000) ran for "
    "1800{p} milliseconds before timing out.",
]
SITE = '  File "/opt/conda/lib/python3.10/site-packages/'
TRACE = [  # then the traceback, in order
    "Traceback (most recent call last):",
    SITE + 'deepspeed/runtime/engine.py", line {l}, in backward',
    "    self.optimizer.backward(loss, retain_graph=retain_graph)",
    SITE + 'deepspeed/runtime/zero/stage_1_and_2.py", line {l}, in reduce_ipg_grads',
    "    self.average_tensor(self.ipg_buffer[self.ipg_index])",
    SITE + 'torch/distributed/distributed_c10d.py", line {l}, in all_reduce',
    "    work = group.allreduce([tensor], opts)",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:{l}, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.{c}",
]
TIME = "%Y-%m-%dT%H:%M:%SZ"


def body(rng: random.Random) -> str:
    z, n, s = rng.randrange(1, 4), rng.choice((8, 16, 64, 512)), rng.randrange(10**5)
    lines = [*(rng.choice(NOISE) for _ in range(12)), *TRACE]
    log = "\n".join(
        line.format(
            l=rng.randrange(50, 3000),
            r=rng.randrange(64),
            p=rng.randrange(1000, 99999),
            c=rng.randrange(1, 9),
            h=rng.randrange(16**12),
            n=n,
            s=s,
        )
        for line in lines
    )
    text = (
        f"**Describe the bug**\nTraining a 13B GPT model with ZeRO-{z} on {n} A100s fails in "
        "the backward pass of the first accumulation step. It works on a single node and with "
        "stage 1.\n\n**To Reproduce**\n1. `deepspeed --num_nodes 4 train.py --deepspeed "
        f"ds_config.json`\n2. See the log below.\n\n```\n{log}\n```\n\n**System info**\n"
        f"- torch 2.{z}.0, CUDA 12.1, deepspeed 0.14.{s % 5}\n"
    )
    return text.replace("\n", "\r\n") if rng.random() < 0.3 else text  # as browsers post them


def issue(rng: random.Random, repo: str, number: int, start: datetime) -> dict[str, Any]:
    api, web = f"https://api.github.com/repos/{repo}", f"https://github.com/{repo}"
    is_pr = rng.random() < 0.15
    created = start + timedelta(minutes=number * 7 + rng.randrange(5))
    closed = created + timedelta(days=rng.randrange(1, 90)) if rng.random() < 0.6 else None
    login, title = f"user{rng.randrange(5000)}", rng.choice(TITLES)
    obj: dict[str, Any] = {
        "url": f"{api}/issues/{number}",
        "repository_url": api,
        "comments_url": f"{api}/issues/{number}/comments",
        "html_url": f"{web}/{'pull' if is_pr else 'issues'}/{number}",
        "id": 10**9 + number * 31 + rng.randrange(31),
        "node_id": f"I_kwDOBX{number:08d}",
        "number": number,
        "title": title.format(e=rng.choice(ERRORS), z=rng.randrange(1, 4), n=64, s=number * 10),
        "user": {
            "login": login,
            "id": rng.randrange(10**8),
            "type": "User",
            "site_admin": False,
            "url": f"https://api.github.com/users/{login}",
            "html_url": f"https://github.com/{login}",
        },
        "labels": [
            {"id": 10**6 + i, "name": name, "color": "d73a4a", "default": False}
            for i, name in enumerate(rng.sample(LABELS, rng.randrange(4)))
        ],
        "state": "closed" if closed else "open",
        "state_reason": "completed" if closed else None,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": rng.randrange(30),
        "created_at": created.strftime(TIME),
        "updated_at": (closed or created + timedelta(hours=3)).strftime(TIME),
        "closed_at": closed.strftime(TIME) if closed else None,
        "author_association": rng.choice(("NONE", "CONTRIBUTOR", "MEMBER")),
        "body": body(rng),
    }
    if is_pr:
        url = obj["html_url"]
        obj["pull_request"] = {
            "url": f"{api}/pulls/{number}",
            "html_url": url,
            "diff_url": f"{url}.diff",
            "merged_at": None,
        }
    return obj


def generate(path: Path, size: int, repo: str, seed: int) -> None:
    """Write `size` issues, newest first as the API lists them, one object at a time."""
    rng = random.Random(f"{seed}:{size}")
    start = datetime(2020, 6, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for number in range(size, 0, -1):
            out.write("\n" if number == size else ",\n")
            out.write(json.dumps(issue(rng, repo, number, start)))
        out.write("\n]\n")


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a process; return its wall seconds, its own peak RSS in MB, and its stdout."""
    start = time.perf_counter()
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as proc:
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)  # this child's rusage; RUSAGE_CHILDREN keeps a max
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(args[:3])} failed with exit code {proc.returncode}")
    return wall, usage.ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated issue counts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    options = parser.parse_args()
    load = os.getloadavg()[0]  # other work on the machine (and PostgreSQL) slows the imports
    sizes = sorted(int(size) for size in options.sizes.split(","))
    url = os.environ.get("DATABASE_URL", "postgres://root@127.0.0.1:5432/annotator_bench")
    # A 100,000-issue file (~330 MB) is over the default ANNOTATOR_IMPORT_MAX_MB of 200.
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
        "DJANGO_DEBUG": "0",
        "ANNOTATOR_IMPORT_MAX_MB": "4096",
    }
    env.pop("REDIS_URL", None)
    rows: list[dict[str, Any]] = []
    recreate_database(url)
    run_child([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env)
    with tempfile.TemporaryDirectory(prefix="annotator-bench-") as tmp:
        files = {}
        for size in sizes:
            files[size] = Path(tmp) / f"issues-{size}.json"
            started = time.perf_counter()
            generate(files[size], size, f"bench-org/repo-{size}", options.seed)
            mb = files[size].stat().st_size / 2**20
            took = time.perf_counter() - started
            print(f"generated {size:,} issues, {mb:.1f} MB in {took:.1f} s")
        runs = [(size, "import") for size in sizes] + [(sizes[0], "re-import")]
        for size, kind in runs:
            wall, rss, out = run_child([sys.executable, "-c", CHILD, str(files[size])], env)
            child = json.loads(out.strip().splitlines()[-1])
            mb = round(files[size].stat().st_size / 2**20, 1)
            rows.append(
                {
                    "run": kind,
                    "issues": size,
                    "file_mb": mb,
                    "wall_s": round(wall, 2),
                    "import_s": round(child["seconds"], 2),
                    "issues_per_s": round(size / child["seconds"]),
                    "index_s": round(child["index_seconds"], 2),
                    "indexed": child["indexed"],
                    "searchable_per_s": round(size / (child["seconds"] + child["index_seconds"])),
                    "python_cpu_s": round(child["python_cpu_s"], 2),
                    "postgres_cpu_s": round(child["postgres_cpu_s"], 2),
                    "index_postgres_cpu_s": round(child["index_postgres_cpu_s"], 2),
                    "machine_cpu_s": round(child["machine_cpu_s"], 2),
                    "peak_rss_mb": round(rss, 1),
                    "counts": child["counts"],
                }
            )
    if not options.keep:
        drop_database(url)
    report(rows, sizes, load)


def report(rows: list[dict[str, Any]], sizes: list[int], load: float) -> None:
    head = f"{'run':<10}{'issues':>9}{'file MB':>9}{'wall s':>8}{'import s':>10}"
    head += f"{'issues/s':>10}{'index s':>9}{'searchable/s':>14}{'py CPU s':>10}{'pg CPU s':>10}"
    head += f"{'all CPU s':>11}{'peak RSS MB':>13}"
    print(f"\n{head}  counts")
    for row in rows:
        print(
            f"{row['run']:<10}{row['issues']:>9,}{row['file_mb']:>9.1f}{row['wall_s']:>8.1f}"
            f"{row['import_s']:>10.1f}{row['issues_per_s']:>10,.0f}{row['index_s']:>9.1f}"
            f"{row['searchable_per_s']:>14,.0f}{row['python_cpu_s']:>10.1f}"
            f"{row['postgres_cpu_s']:>10.1f}{row['machine_cpu_s']:>11.1f}"
            f"{row['peak_rss_mb']:>13.0f}  {row['counts']}"
        )
    imports = [row for row in rows if row["run"] == "import"]
    slowest = min(row["issues_per_s"] for row in imports)
    searchable = min(row["searchable_per_s"] for row in imports)
    ratio = imports[-1]["peak_rss_mb"] / imports[0]["peak_rss_mb"]
    targets = {
        "rate": f"{'met' if searchable >= TARGET_RATE else 'MISSED'}: slowest import + search "
        f"indexing {searchable:,.0f} issues/s (target >= {TARGET_RATE:,}, searchable at the end; "
        f"import s + index s, without start-up)",
        "import": f"slowest import alone: {slowest:,.0f} issues/s",
        "cpu": "largest import + search indexing: "
        f"{imports[-1]['python_cpu_s']:.1f} s of Python CPU and "
        f"{imports[-1]['postgres_cpu_s']:.1f} s of the import connection's PostgreSQL backend "
        f"({imports[-1]['index_postgres_cpu_s']:.1f} s of it indexing after the commit), "
        f"{imports[-1]['machine_cpu_s']:.1f} s on the whole machine (the import, both of its "
        "PostgreSQL backends, and anything else running)",
        "memory": f"{'met' if ratio <= FLAT_RATIO else 'MISSED'}: peak RSS {sizes[-1]:,} / "
        f"{sizes[0]:,} = {ratio:.2f}x (flat means <= {FLAT_RATIO}x)",
        "reference": REFERENCE,
    }
    expected = f"created 0, updated 0, unchanged {sizes[0]}, skipped 0"
    targets["idempotent"] = f"{'met' if rows[-1]['counts'] == expected else 'MISSED'}: {expected}"
    targets["load"] = f"1-minute load average {load:.2f} before the run, {os.cpu_count()} CPUs"
    for name, text in targets.items():
        print(f"{name:>11}: {text}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.write_text(json.dumps({"at": stamp, "runs": rows, "targets": targets}, indent=2))
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
