"""Throughput and memory of the export writers (annotator/exports/writers.py), no database.

    .venv/bin/python benchmarks/export_writers.py [--sizes 10000,100000] [--formats csv,parquet]

For each size, N labelled items, each labelled by 2 annotators on 4 facets (screening, stage,
symptom as two levels, fix pattern multi-valued with 1-2 codes), are written as a full export:
the final dataset (N rows) and the long table (one row per label: ~9.5 N rows) in one format.
Rows come from a generator of dicts, as `QuerySet.values().iterator()` yields them, so memory
must not grow with N. Each (format, size) runs in a fresh process; `none` consumes the rows
without writing, to show what the generator alone costs. Reported per run: items/s (N / wall
seconds of both writes, after imports), rows/s, file MB, and the process's peak RSS (from
os.wait4; pyarrow's libraries alone account for ~160 MB of it). Writes
benchmarks/results/export_writers.json (not committed).

Target: >= 10,000 items/s with flat memory. Label Studio 1.23 took 30.5 s for a JSON export of
10,000 tasks with 2 annotations each (~330 tasks/s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotator.exports import writers  # noqa: E402
from annotator.exports.columns import (  # noqa: E402
    LONG_TABLE_COLUMNS,
    FacetSpec,
    final_dataset_columns,
)

FACETS = [
    FacetSpec("screening", "Screening"),
    FacetSpec("stage", "Stage"),
    FacetSpec("symptom", "Symptom", levels=2),
    FacetSpec("fix-pattern", "Fix pattern", kind="multi"),
]
STAGES = ["build-import", "communication-setup", "data-model-preparation", "training-evaluation"]
LEAVES = ["setup-failure", "hang-timeout", "out-of-memory", "low-efficiency", "tensor-mismatch"]
FIXES = ["fix-dependency-version", "fix-communication-configuration", "fix-network-setting"]
T0 = datetime(2024, 5, 1, tzinfo=UTC)


def item(i: int) -> dict[str, Any]:
    leaf = LEAVES[i % len(LEAVES)]
    return {
        "item_id": i,
        "round": 1 + i % 4,
        "repository": "deepspeedai/DeepSpeed",
        "number": 1000 + i,
        "url": f"https://github.com/deepspeedai/DeepSpeed/issues/{1000 + i}",
        "title": f"ZeRO-3 training hangs at step {i} on 2 nodes with NCCL 2.18",
        "screening": "relevant",
        "stage": STAGES[i % 4],
        "symptom_l1": "unexpected-performance" if leaf == "low-efficiency" else "program-failure",
        "symptom_l2": leaf,
        "fix_pattern": FIXES[: 1 + i % 2],
        "decision_source": "unanimous" if i % 3 else "adjudicated",
        "decided_at": T0 + timedelta(seconds=i),
    }


def final_rows(n: int) -> Iterator[dict[str, Any]]:
    return (item(i) for i in range(n))


def long_rows(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        final = item(i)
        common = {k: final[k] for k in ("item_id", "round", "repository", "number", "url")}
        labels = [
            ("screening", final["screening"], final["screening"]),
            ("stage", final["stage"], final["stage"]),
            ("symptom", final["symptom_l2"], final["symptom_l1"]),
        ] + [("fix-pattern", code, code) for code in final["fix_pattern"]]
        for annotator in ("alice", "bob"):
            for facet, category, top in labels:
                yield {
                    **common,
                    "facet": facet,
                    "annotator": annotator,
                    "category": category,
                    "category_l1": top,
                    "codebook_version": 1,
                    "submitted_at": final["decided_at"],
                    "seconds_spent": 30 + i % 200,
                }


def child(fmt: str, n: int, folder: Path) -> dict[str, Any]:
    final_columns = final_dataset_columns(FACETS)
    if fmt == "parquet":
        # One-off imports (~1.1 s: pyarrow, and pandas, which pa.array loads on first use) are
        # not throughput.
        import pyarrow as pa
        import pyarrow.parquet

        pa.array([1], type=pa.int64())
    start = time.perf_counter()
    if fmt == "none":
        rows = sum(1 for _ in final_rows(n)) + sum(1 for _ in long_rows(n))
        size = 0
    else:
        write = getattr(writers, f"write_{fmt}")
        rows = 0
        size = 0
        for name, columns, source in (
            ("final", final_columns, final_rows(n)),
            ("long", LONG_TABLE_COLUMNS, long_rows(n)),
        ):
            path = folder / f"{name}.{fmt}"
            with path.open("wb") as out:
                rows += write(source, columns, out)
            size += path.stat().st_size
    seconds = time.perf_counter() - start
    return {"format": fmt, "items": n, "rows": rows, "seconds": seconds, "bytes": size}


def run(fmt: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [sys.executable, __file__, "--child", fmt, "--items", str(n), "--folder", folder],
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        output = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        if status != 0:
            raise SystemExit(f"{fmt} at {n} failed")
    result: dict[str, Any] = json.loads(output)
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--formats", default="none,csv,jsonl,parquet")
    parser.add_argument("--child")
    parser.add_argument("--items", type=int)
    parser.add_argument("--folder")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.items, Path(args.folder))))
        return
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    header = f"{'format':8} {'items':>8} {'rows':>9} {'s':>7} {'items/s':>9} {'rows/s':>9} {'MB':>7} {'RSS MB':>7}"  # noqa: E501
    print(header)
    results = []
    for fmt in args.formats.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            r = run(fmt, n)
            results.append(r)
            print(
                f"{fmt:8} {n:8,} {r['rows']:9,} {r['seconds']:7.2f} {n / r['seconds']:9,.0f} "
                f"{r['rows'] / r['seconds']:9,.0f} {r['bytes'] / 2**20:7.1f} "
                f"{r['peak_rss_mb']:7.1f}"
            )
    print("target: >= 10,000 items/s, peak RSS flat across sizes; Label Studio 1.23: ~330 tasks/s")
    out = ROOT / "benchmarks" / "results" / "export_writers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
