"""Time and memory to refuse deeply nested files, no database.

    .venv/bin/python benchmarks/hostile_files.py [--size 200000]

Each case is a file of `--size` bytes (default 200 KB) that only nests: 200,000 "[" as an issues
file (a JSON array, read element by element by the standard library's decoder), one JSONL line of
nested objects, a YAML and a JSON codebook (taxonomy_app/formats.py), and an API body
(annotator.json_depth.check_depth, what annotator/api_parsers.py runs). Each is parsed in a fresh
process that must be refused with the limit in the message; reported per case: the seconds
from the first byte read to the refusal, and the process's peak RSS (from os.wait4), beside the
same process's peak with nothing parsed (the interpreter and its imports). Writes
benchmarks/results/hostile_files.json (not committed).

Target: each refused in under a second with peak RSS under 100 MB. Before the scan, ijson took
2.5 GB for 62 KB of "[" and 10.7 GB in a minute for 200 KB (its prefixes grow with the depth).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = ("none", "issues-array", "issues-jsonl", "codebook-yaml", "codebook-json", "api-body")


def hostile(case: str, size: int) -> bytes:
    if case == "issues-jsonl":
        return b"{" + b'"a":{' * ((size - 1) // 5) + b"\n"
    if case == "codebook-json":
        return b'{"facets": ' + b"[" * size
    return b"[" * size


def refuse(case: str, data: bytes) -> str:
    """The refusal's message; raises if the file was accepted."""
    from annotator.issues.formats import ImportFormatError, iter_records
    from annotator.json_depth import TooDeep, check_depth
    from taxonomy_app.formats import CodebookFormatError, load_document

    try:
        if case.startswith("issues"):
            list(iter_records(io.BytesIO(data)))
        elif case.startswith("codebook"):
            load_document(data)
        else:
            check_depth(data, 64)
    except (ImportFormatError, CodebookFormatError, TooDeep) as error:
        return str(error)
    raise AssertionError(f"{case}: accepted")


def run_one(case: str, size: int) -> None:
    data = hostile(case, size)
    import annotator.issues.formats  # noqa: F401  imports counted in the baseline too
    import taxonomy_app.formats  # noqa: F401

    started = time.perf_counter()
    message = "" if case == "none" else refuse(case, data)
    print(json.dumps({"seconds": time.perf_counter() - started, "message": message}))


def measure(case: str, size: int) -> dict[str, object]:
    command = [sys.executable, __file__, "--one", case, "--size", str(size)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=ROOT)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    assert status == 0, f"{case} failed"
    result = json.loads(out)
    return {"case": case, **result, "peak_rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--one")
    args = parser.parse_args()
    if args.one:
        return run_one(args.one, args.size)
    results = [measure(case, args.size) for case in CASES]
    print(f"{'case':<15} {'seconds':>8} {'peak RSS MB':>12}  message")
    for row in results:
        case, seconds, peak = row["case"], row["seconds"], row["peak_rss_mb"]
        print(f"{case:<15} {seconds:>8.4f} {peak:>12.1f}  {row['message']}")
    out = ROOT / "benchmarks" / "results" / "hostile_files.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"size": args.size, "results": results}, indent=2) + "\n")
    slow = [r["case"] for r in results if r["seconds"] >= 1 or r["peak_rss_mb"] >= 100]
    if slow:
        raise SystemExit(f"over the target (1 s, 100 MB): {', '.join(slow)}")


if __name__ == "__main__":
    main()
