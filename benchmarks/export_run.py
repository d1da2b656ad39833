"""Benchmark: export labelled items from PostgreSQL through the export service to CSV, JSONL
and Parquet (and the long table to CSV): items per second and peak memory.

    .venv/bin/python benchmarks/export_run.py [--items 100000] [--small 10000] [--keep]

1. Drops and creates the database named by BENCH_DATABASE_URL (default
   postgres://root@127.0.0.1:5432/annotator_bench_export), migrates it, loads the seed
   codebook and generates two studies (--small and --items issues, 2 annotators, 4 facets:
   symptom, root-cause, stage, fix-pattern) with the generator of benchmarks/agreement_run.py
   (bulk_create + COPY), then a decision per item (source unanimous; the first annotator's
   labels) with INSERT … SELECT. Generation time is not the measure.
   Each size gets a fresh database (the generator numbers rows from 1).
2. Per study, format and table, in a fresh process: `export_dataset` into a file, wall seconds
   and the process's peak RSS beside its RSS after Django start-up. Memory is flat when the
   peak over baseline at --items is about that at --small.
Writes benchmarks/results/export_run.json (not committed).

    .venv/bin/python benchmarks/export_run.py --existing [--study NAME] [--small-round N]
        [--cases csv:final,xlsx:final,...]

`--existing` measures a study already in the database BENCH_DATABASE_URL names (e.g. a copy of
page_scale.py's `annotator_bench_small`: 100,000 items, 3 annotators each), nothing generated or
dropped (the database is migrated first). Every format, the final dataset and the long table
(XLSX, Label Studio and the two zips have one shape each), runs as the worker runs it: an
ExportJob row, then the Celery task's body (`export_dataset_task`: the progress counts, the
export into a partial file, the file stored), each in a fresh process, wall seconds and peak
RSS over the process's start-up. The same cases run on one round of the study (--small-round,
by default its last: ~10,000 items) to check that memory is flat: the run fails when the whole
study's peak over start-up exceeds the round's by more than FLAT_MIB.
Writes benchmarks/results/export_run_existing.json (not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import agreement_run as generator  # noqa: E402 -- the benchmark's data generator

DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_export"
CASES = [("csv", "final"), ("jsonl", "final"), ("parquet", "final"), ("csv", "long")]
# --existing: every format, both tables where the format has them.
ALL_CASES = [
    *((fmt, table) for fmt in ("csv", "json", "jsonl", "parquet") for table in ("final", "long")),
    ("xlsx", "final"),
    ("labelstudio", "final"),
    ("huggingface", "final"),
    ("replication", "final"),
]
FLAT_MIB = 64.0  # the whole study's peak over start-up may exceed one round's by this much
TARGET = 10_000  # items/s
REFERENCE = "Label Studio 1.23: 30.5 s for a JSON export of 10,000 items (~330 items/s)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["generate", "export", "job", "describe"])
    parser.add_argument("--study", default="")
    parser.add_argument("--format", default="csv")
    parser.add_argument("--table", default="final")
    parser.add_argument("--existing", action="store_true")
    parser.add_argument("--small-round", type=int, default=0)
    parser.add_argument("--round", type=int, default=0)
    parser.add_argument("--cases", default="")
    args = parser.parse_args()
    if args.child:
        return _child(args)
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "", "DJANGO_DEBUG": "0"}
    if args.existing:
        return _existing(args, env)
    rows = []
    for size in (args.small, args.items):
        _fresh_database(url, env)  # the generator numbers rows from 1: one study per database
        made = _json_child(["--child", "generate", "--items", str(size)], env)
        print(f"generated {size:,} items, {made['labels']:,} labels in {made['seconds']:.1f} s")
        for fmt, table in CASES:
            export = ["--child", "export", "--study", f"Export benchmark {size}"]
            out = _json_child([*export, "--format", fmt, "--table", table], env)
            out.update(items=size, format=fmt, table=table, items_per_s=size / out["seconds"])
            rows.append(out)
            print(
                f"{size:>7,} items  {fmt:>7} {table:>5}: {out['seconds']:6.2f} s  "
                f"{out['items_per_s']:>9,.0f} items/s  {out['rows']:>9,} rows  "
                f"{out['mib']:6.1f} MiB file  peak {out['peak_mib']:6.1f} MiB "
                f"(+{out['peak_mib'] - out['baseline_mib']:5.1f} over start-up)"
            )
    _verdict(rows, args)
    result = ROOT / "benchmarks" / "results" / "export_run.json"
    result.parent.mkdir(exist_ok=True)
    result.write_text(json.dumps({"reference": REFERENCE, "runs": rows}, indent=2))
    if not args.keep:
        drop_database(url)


def _fresh_database(url: str, env: dict[str, str]) -> None:
    recreate_database(url)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
    subprocess.run(
        [*manage, "load_codebook", "--publish"], env=env, check=True, stdout=subprocess.DEVNULL
    )


def _verdict(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    big = [r for r in rows if r["items"] == args.items and r["table"] == "final"]
    slowest = min(r["items_per_s"] for r in big)
    print(
        f"slowest final-dataset export at {args.items:,} items: {slowest:,.0f} items/s "
        f"(target {TARGET:,}; {REFERENCE})"
    )
    for fmt, table in CASES:
        small, large = (
            next(r for r in rows if (r["items"], r["format"], r["table"]) == (n, fmt, table))
            for n in (args.small, args.items)
        )
        grow = (large["peak_mib"] - large["baseline_mib"]) - (
            small["peak_mib"] - small["baseline_mib"]
        )
        print(f"memory {fmt} {table}: +{grow:.1f} MiB from {args.small:,} to {args.items:,} items")


def _existing(args: argparse.Namespace, env: dict[str, str]) -> None:
    """Every case on the whole study and on one round of it, as the worker runs it."""
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
    study = _json_child(["--child", "describe", "--study", args.study], env)
    small = args.small_round or study["last_round"]
    cases = [tuple(c.split(":")) for c in args.cases.split(",")] if args.cases else ALL_CASES
    media = tempfile.mkdtemp(prefix="export-run-media-")
    env = {**env, "DJANGO_MEDIA_ROOT": media}
    print(f"study {study['name']!r}: {study['items']:,} items; round {small} for the small size")
    rows = []
    for fmt, table in cases:
        for round_number in (small, 0):
            command = ["--child", "job", "--study", study["name"], "--format", fmt]
            command += ["--table", table, "--round", str(round_number)]
            out = _json_child(command, env)
            out.update(format=fmt, table=table, round=round_number or None)
            rows.append(out)
            scope = f"round {round_number}" if round_number else "whole study"
            print(
                f"{fmt:>11} {table:>5} {scope:>11}: {out['items']:>7,} items "
                f"{out['rows']:>9,} rows {out['seconds']:8.2f} s "
                f"{out['items'] / out['seconds']:>8,.0f} items/s {out['mib']:7.1f} MiB file "
                f"peak {out['peak_mib']:6.1f} MiB (+{out['peak_mib'] - out['baseline_mib']:6.1f})",
                flush=True,
            )
    failed = _flat_verdict(rows, cases, small)
    result = ROOT / "benchmarks" / "results" / "export_run_existing.json"
    result.parent.mkdir(exist_ok=True)
    result.write_text(json.dumps({"study": study, "small_round": small, "runs": rows}, indent=2))
    if failed:
        raise SystemExit(f"memory not flat: {', '.join(failed)}")


def _flat_verdict(rows: list[dict[str, Any]], cases: list[Any], small: int) -> list[str]:
    failed = []
    for fmt, table in cases:
        part, whole = (
            next(r for r in rows if (r["format"], r["table"], r["round"]) == (fmt, table, n))
            for n in (small, None)
        )
        grow = (whole["peak_mib"] - whole["baseline_mib"]) - (
            part["peak_mib"] - part["baseline_mib"]
        )
        flat = grow <= FLAT_MIB
        print(
            f"memory {fmt} {table}: {grow:+.1f} MiB from {part['items']:,} to "
            f"{whole['items']:,} items ({'flat' if flat else 'NOT FLAT'}, limit {FLAT_MIB:.0f})"
        )
        if not flat:
            failed.append(f"{fmt} {table}")
    return failed


def _json_child(extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, *extra], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(extra)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _child(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    import django

    django.setup()
    baseline = generator._rss_mib()
    children = {"generate": _generate, "export": _export, "job": _job, "describe": _describe}
    out = children[args.child](args)
    out.update(peak_mib=generator._peak_mib(), baseline_mib=baseline)
    print(json.dumps(out))


# Every item of the study decided unanimously, with the first annotator's labels. Parameters:
# the study's id; the annotator's and the study's.
DECISIONS = """
    INSERT INTO adjudication_decision (item_id, source, reason, comment, version,
                                       created_at, updated_at)
    SELECT id, 'unanimous', '', '', 1, now(), now() FROM studies_item WHERE study_id = %s
"""
DECISION_LABELS = """
    INSERT INTO adjudication_decisionlabel (decision_id, facet_id, category_id)
    SELECT d.id, l.facet_id, l.category_id
    FROM studies_annotationlabel l
    JOIN studies_annotation n ON n.id = l.annotation_id
    JOIN studies_assignment a ON a.id = n.assignment_id
    JOIN adjudication_decision d ON d.item_id = a.item_id
    WHERE a.annotator_id = %s AND d.item_id IN
          (SELECT id FROM studies_item WHERE study_id = %s)
"""


def _generate(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from annotator.issues.models import Repository
    from annotator.studies.models import Study

    made = generator._generate(argparse.Namespace(items=args.items, annotators=2, seed=args.seed))
    study = Study.objects.get(name="Agreement benchmark")
    Study.objects.filter(pk=study.pk).update(name=f"Export benchmark {args.items}")
    Repository.objects.filter(owner="bench", name="agreement").update(name=f"export-{args.items}")
    first = study.memberships.filter(role="annotator").order_by("user__username").first()
    with connection.cursor() as cursor:
        cursor.execute(DECISIONS, [study.pk])
        cursor.execute(DECISION_LABELS, [first.user_id, study.pk])
        cursor.execute("ANALYZE")
    return made


def _export(args: argparse.Namespace) -> dict[str, Any]:
    from annotator.exports.services import export_dataset
    from annotator.studies.models import Study

    study = Study.objects.select_related("codebook_version__codebook").get(name=args.study)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"export.{args.format}"
        start = time.perf_counter()
        with path.open("wb") as out:
            result = export_dataset(study=study, format=args.format, out=out, table=args.table)
        seconds = time.perf_counter() - start
        size = path.stat().st_size
    return {"seconds": seconds, "rows": result.rows, "mib": size / 2**20}


def _the_study(name: str) -> Any:
    from django.db.models import Count

    from annotator.studies.models import Study

    studies = Study.objects.select_related("codebook_version__codebook")
    if name:
        return studies.get(name=name)
    return studies.annotate(n=Count("items")).order_by("-n", "pk").first()


def _describe(args: argparse.Namespace) -> dict[str, Any]:
    study = _the_study(args.study)
    last = study.rounds.filter(items__isnull=False).order_by("-number").first()
    return {"name": study.name, "items": study.items.count(), "last_round": last.number}


def _job(args: argparse.Namespace) -> dict[str, Any]:
    """One export as the worker runs it: the job row, then the Celery task's body."""
    from django.core.files.storage import default_storage

    from annotator.exports.models import ExportJob
    from annotator.exports.rows import filtered_items
    from annotator.exports.tasks import export_dataset_task

    study = _the_study(args.study)
    filters = {"round": args.round} if args.round else {}
    items = filtered_items(study, filters)
    job = ExportJob.objects.create(
        study=study, format=args.format, table=args.table, filters=filters
    )
    start = time.perf_counter()
    export_dataset_task(job.pk)
    seconds = time.perf_counter() - start
    job.refresh_from_db()
    assert job.status == ExportJob.Status.SUCCEEDED, job.error
    default_storage.delete(job.file.name)
    ExportJob.objects.filter(pk=job.pk).delete()
    return {
        "seconds": seconds,
        "items": items.count(),
        "rows": job.rows_written,
        "mib": job.size_bytes / 2**20,
    }


if __name__ == "__main__":
    main()
