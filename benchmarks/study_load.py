"""Benchmark: a study under load. Annotators label through gunicorn while the owner starts an
agreement run and exports (CSV, JSON) that a real Celery worker runs; afterwards, proof that
every submitted annotation is in the database and in an export, with the labels sent.

    .venv/bin/python benchmarks/study_load.py [--annotators 50] [--seconds 120] [--think 2.0]
        [--saturation-seconds 0] [--api-share 0.2] [--workers 4] [--items 5000] [--keep]

The data, the server and the HTTP client are those of benchmarks/labeling_load.py (imported).
Requests go only to 127.0.0.1, from one thread per person, for a bounded time. See
benchmarks/README.md for what is measured and how the proof works.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import labeling_load as base  # noqa: E402 -- data, gunicorn and the keep-alive HTTP client

RESULTS = ROOT / "benchmarks" / "results" / "study_load.json"
DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_study"
QUEUE = "bench_study_load"  # its own queue: a test worker on the same Redis never takes its jobs
ROUTES = [
    "GET next item (page)",
    "GET annotate page",
    "POST submit (page)",
    "POST next item (API)",
    "POST submit (API)",
    "POST agreement start",
    "POST export start",
    "GET job status",
]
LABELING = ["GET annotate page", "POST submit (page)", "POST next item (API)", "POST submit (API)"]


# --- children with Django: setup and the database side of the proof --------------------------
def setup(items: int, annotators: int) -> dict[str, Any]:
    """labeling_load's study, its facets (codes → ids) and 500 random label sets the codebook
    accepts, which the clients label with."""
    world = base.setup(items, annotators)
    from annotator.studies.codebook import codebook_schema
    from annotator.studies.models import Study

    schema = codebook_schema(Study.objects.get(pk=world["study"]).codebook_version)
    world["facets"] = [
        {"id": f.id, "key": f.key, "codes": {c.code: c.id for c in f.categories}}
        for f in schema.facets
    ]
    world["label_sets"] = base.label_sets(schema, 500)
    world["owner"] = "bench-owner"
    return world


def database_side(study: int, out: Path) -> None:
    """Every submitted annotation of the study: assignment → annotator, item, notes, labels."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from annotator.studies.models import Annotation, AnnotationLabel

    rows: dict[int, dict[str, Any]] = {}
    submitted = Annotation.objects.filter(assignment__item__study_id=study, status="submitted")
    for assignment, who, item, notes in submitted.values_list(
        "assignment_id", "assignment__annotator__username", "assignment__item_id", "notes"
    ):
        rows[assignment] = {"annotator": who, "item": item, "notes": notes, "labels": {}}
    labels = AnnotationLabel.objects.filter(annotation__in=submitted).values_list(
        "annotation__assignment_id", "facet__key", "category__code"
    )
    for assignment, facet, code in labels:
        rows[assignment]["labels"].setdefault(facet, []).append(code)
    out.write_text(json.dumps(rows))


# --- the clients -----------------------------------------------------------------------------
class Ledger:
    """What the clients submitted and the server answered 2xx to: assignment → labels."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[int, dict[str, Any]] = {}

    def add(self, assignment: int, annotator: str, labels: dict[str, list[str]], notes: str):
        with self.lock:
            self.entries[assignment] = {"annotator": annotator, "labels": labels, "notes": notes}


def choose_labels(
    rng: random.Random, label_sets: list[dict[str, list[str]]]
) -> dict[str, list[str]]:
    """One of the setup's label sets, each of which the codebook accepts."""
    return rng.choice(label_sets)


def new_stats() -> base.Stats:
    stats = base.Stats()
    stats.times = {route: [] for route in ROUTES}
    return stats


def timed(
    stats: base.Stats,
    route: str,
    browser: base.Browser,
    method: str,
    path: str,
    *args: Any,
    **kwargs: Any,
) -> tuple[int, Any, bytes]:
    """One request, its latency counted under `route`."""
    start = time.perf_counter()
    answer = browser.request(method, path, *args, **kwargs)
    stats.add(route, time.perf_counter() - start)
    return answer


class Person:
    """One annotator's loop through the pages (the browser's requests) or the REST API."""

    def __init__(self, browser: base.Browser, name: str, world: dict[str, Any], api: bool):
        self.browser, self.name, self.world, self.api = browser, name, world, api
        self.study = world["study"]
        self.rng = random.Random(name)
        self.count = 0

    def run(self, think: float, until: float, stats: base.Stats, ledger: Ledger) -> None:
        time.sleep(self.rng.uniform(0, think))  # readers start at random offsets
        while time.monotonic() < until:
            try:
                if not self.label_until(think, until, stats, ledger):
                    return  # nothing left to label
            except Exception as error:  # counted and reported, never hidden; then resume
                with stats.lock:
                    stats.errors.append(f"{self.name}: {error!r}"[:200])
                time.sleep(1)

    def label_until(self, think: float, until: float, stats: base.Stats, ledger: Ledger) -> bool:
        assignment = self.next_item(stats)
        while assignment is not None and time.monotonic() < until:
            self.read(assignment, stats)
            time.sleep(think * self.rng.uniform(0.75, 1.25))
            labels = choose_labels(self.rng, self.world["label_sets"])
            self.count += 1
            notes = f"{self.name} loop {self.count}"
            following = self.submit(assignment, labels, notes, stats)
            ledger.add(assignment, self.name, labels, notes)  # the server answered 2xx
            with stats.lock:
                stats.loops += 1
            assignment = self.next_item(stats) if self.api else following
        return assignment is not None

    def next_item(self, stats: base.Stats) -> int | None:
        if self.api:
            path = f"/api/studies/{self.study}/next-item/"
            status, _, body = timed(
                stats, "POST next item (API)", self.browser, "POST", path, json_body={}
            )
            expect(status in (200, 204), f"POST {path}: {status}")
            return json.loads(body)["id"] if status == 200 else None
        path = f"/studies/{self.study}/annotate/"
        status, headers, _ = timed(stats, "GET next item (page)", self.browser, "GET", path)
        expect(status in (200, 302), f"GET {path}: {status}")
        return assignment_in(headers.get("Location", ""))

    def read(self, assignment: int, stats: base.Stats) -> None:
        if self.api:
            return  # a script has the item from next-item already
        path = f"/studies/assignments/{assignment}/"
        status, _, page = timed(stats, "GET annotate page", self.browser, "GET", path)
        expect(status == 200 and b"annotate-form" in page, f"GET {path}: {status}")

    def submit(
        self, assignment: int, labels: dict[str, list[str]], notes: str, stats: base.Stats
    ) -> int | None:
        if self.api:
            path = f"/api/assignments/{assignment}/submit/"
            payload = {"labels": labels, "notes": notes, "seconds_spent": 2}
            status, _, _ = timed(
                stats, "POST submit (API)", self.browser, "POST", path, json_body=payload
            )
            expect(status == 200, f"POST {path}: {status}")
            return None  # a script asks for its next item itself
        path = f"/studies/assignments/{assignment}/submit/"
        codes = {f["key"]: f for f in self.world["facets"]}
        form: dict[str, Any] = {"seconds": "2", "notes": notes}
        for key, chosen in labels.items():
            form[f"facet-{codes[key]['id']}"] = [codes[key]["codes"][c] for c in chosen]
        status, headers, _ = timed(
            stats, "POST submit (page)", self.browser, "POST", path, form, {"HX-Request": "true"}
        )
        expect(status == 200 and headers.get("HX-Redirect"), f"POST {path}: {status}")
        return assignment_in(headers["HX-Redirect"])


def assignment_in(path: str) -> int | None:
    """The assignment id of `/studies/assignments/<id>/`, None for the "all done" page."""
    parts = path.rstrip("/").split("/")
    return int(parts[-1]) if "assignments" in parts else None


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise RuntimeError(message)


# --- the owner: jobs started during the run, polled until done --------------------------------
@dataclass(frozen=True)
class JobStart:
    """A job the owner starts through the API: the start's path and body, the path of the
    job's status (`{id}` filled in) and the route the start is counted under."""

    path: str
    payload: dict[str, Any]
    status_path: str
    route: str


def agreement_run(study: int) -> JobStart:
    path = f"/api/studies/{study}/agreement-runs/"
    return JobStart(path, {}, "/api/agreement-runs/{id}/", "POST agreement start")


def export_job(study: int, fmt: str, table: str) -> JobStart:
    path, payload = f"/api/studies/{study}/exports/", {"format": fmt, "table": table}
    return JobStart(path, payload, "/api/exports/{id}/", "POST export start")


def run_job(owner: base.Browser, start: JobStart, stats: base.Stats) -> dict[str, Any]:
    """Start a job through the API, poll it every 0.5 s; its durations as the client saw them
    and as the job row recorded them."""
    began, payload = time.monotonic(), start.payload
    status, _, body = timed(stats, start.route, owner, "POST", start.path, json_body=payload)
    expect(status == 202, f"POST {start.path}: {status} {body[:200]!r}")
    job = json.loads(body)
    while job["status"] not in ("succeeded", "failed") and time.monotonic() - began < 600:
        time.sleep(0.5)
        path = start.status_path.format(id=job["id"])
        code, _, body = timed(stats, "GET job status", owner, "GET", path)
        expect(code == 200, f"GET job {job['id']}: {code}")
        job = json.loads(body)
    expect(job["status"] == "succeeded", f"job {job['id']} {job['status']}: {job.get('error')}")
    return {
        "id": job["id"],
        "payload": payload,
        "seen_s": round(time.monotonic() - began, 2),
        "worker_s": seconds_between(job["started_at"], job["finished_at"]),
        "queued_s": seconds_between(job["created_at"], job["started_at"]),
        "rows": job.get("rows_written"),
    }


def seconds_between(start: str | None, end: str | None) -> float | None:
    from datetime import datetime

    if not start or not end:
        return None
    return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)


def owner_during_load(
    owner: base.Browser, study: int, seconds: float, stats: base.Stats, jobs: list[dict[str, Any]]
) -> None:
    """A quarter into the run an agreement run, at half an export to CSV, then to JSON."""
    try:
        time.sleep(seconds * 0.25)
        jobs.append({"job": "agreement", **run_job(owner, agreement_run(study), stats)})
        time.sleep(max(0.0, seconds * 0.25 - jobs[-1]["seen_s"]))
        for fmt in ("csv", "json"):
            jobs.append({"job": f"export {fmt}", **export(owner, study, fmt, "final", stats)})
    except Exception as error:
        with stats.lock:
            stats.errors.append(f"owner: {error!r}"[:200])


def export(owner: base.Browser, study: int, fmt: str, table: str, stats: base.Stats):
    return run_job(owner, export_job(study, fmt, table), stats)


def download(owner: base.Browser, job: int) -> bytes:
    status, _, body = owner.request("GET", f"/api/exports/{job}/download/")
    expect(status == 200, f"download of export {job}: {status}")
    return body


def long_table(fmt: str, data: bytes) -> dict[tuple[int, str], dict[str, list[str]]]:
    """(item, annotator) → {facet: sorted codes} from a long-table export."""
    text = data.decode("utf-8")
    rows = json.loads(text) if fmt == "json" else csv.DictReader(io.StringIO(text, newline=""))
    out: dict[tuple[int, str], dict[str, list[str]]] = {}
    for row in rows:
        labels = out.setdefault((int(row["item_id"]), row["annotator"]), {})
        labels.setdefault(row["facet"], []).append(row["category"])
    return {key: {f: sorted(c) for f, c in labels.items()} for key, labels in out.items()}


# --- the run ---------------------------------------------------------------------------------
def run_phase(
    people: list[Person], owner: base.Browser | None, think: float, seconds: float, ledger: Ledger
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stats = new_stats()
    jobs: list[dict[str, Any]] = []
    start = time.monotonic()
    until = start + seconds
    threads = [threading.Thread(target=p.run, args=(think, until, stats, ledger)) for p in people]
    work = (owner, people[0].study, seconds, stats, jobs)
    jobs_thread = threading.Thread(target=owner_during_load, args=work) if owner else None
    for thread in [*threads, *([jobs_thread] if jobs_thread else [])]:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    elapsed = time.monotonic() - start  # the annotators' time: loops/s does not wait for jobs
    if jobs_thread:
        jobs_thread.join(timeout=600)
    summary = base.summarize(stats, elapsed, think)
    return {k: v for k, v in summary.items() if not (isinstance(v, dict) and not v["n"])}, jobs


def start_worker(env: dict[str, str], log: Path, queue: str = QUEUE) -> subprocess.Popen[bytes]:
    """A Celery worker (solo pool) on a benchmark's queue; waits until it says it is ready."""
    handle = log.open("wb")
    celery = [str(ROOT / ".venv" / "bin" / "celery"), "-A", "annotator", "worker", "--pool=solo"]
    quiet = ["--without-heartbeat", "--without-gossip", "--without-mingle"]
    worker = subprocess.Popen(
        [*celery, "-Q", queue, "--loglevel=INFO", *quiet],
        cwd=ROOT,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and worker.poll() is None:
        if b" ready." in log.read_bytes():
            return worker
        time.sleep(0.3)
    worker.kill()
    sys.exit("the celery worker did not start:\n" + log.read_text()[-2000:])


def prove(ledger: Ledger, database: dict[str, Any], exports: dict[str, Any]) -> dict[str, Any]:
    """Every ledger entry in the database (same annotator, labels, notes) and in each export
    made after the load (same labels under its item and annotator)."""
    missing, wrong = [], []
    absent: dict[str, list[int]] = {fmt: [] for fmt in exports}
    for assignment, sent in ledger.entries.items():
        stored = database.get(str(assignment))
        labels = {f: sorted(c) for f, c in stored["labels"].items()} if stored else None
        sent_row = (sent["annotator"], sent["labels"], sent["notes"])
        if stored is None:
            missing.append(assignment)
        elif (stored["annotator"], labels, stored["notes"]) != sent_row:
            wrong.append(assignment)
        for fmt, table in exports.items():
            if stored is None or table.get((stored["item"], sent["annotator"]), {}) != labels:
                absent[fmt].append(assignment)
    return {
        "submitted_2xx": len(ledger.entries),
        "in_database": len(database),
        "missing_in_database": len(missing),
        "labels_differ": len(wrong),
        "not_confirmed_by_a_2xx": len(set(map(int, database)) - set(ledger.entries)),
        **{f"missing_in_{fmt}_export": len(a) for fmt, a in absent.items()},
        "samples": {
            "missing": missing[:5],
            "wrong": wrong[:5],
            **{fmt: a[:5] for fmt, a in absent.items()},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=120, help="the run with think time")
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--saturation-seconds", type=float, default=0, help="then no think time")
    parser.add_argument("--api-share", type=float, default=0.2, help="share labeling by API")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--port", type=int, default=8767)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--child", choices=["setup", "database"], help=argparse.SUPPRESS)
    parser.add_argument("--study", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "setup":
        print(json.dumps(setup(args.items, args.annotators)))
        return
    if args.child == "database":
        return database_side(args.study, Path(args.out))
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    with tempfile.TemporaryDirectory(prefix="study-load-") as scratch:
        results = measure(args, url, Path(scratch))
    proven = report(args, results)
    if not args.keep:
        drop_database(url)
    if not proven:
        sys.exit(1)  # a lost or altered annotation fails `make bench`; slow figures do not


def measure(args: argparse.Namespace, url: str, scratch: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_DEBUG": "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        "CELERY_QUEUE": QUEUE,
        "DJANGO_MEDIA_ROOT": str(scratch),
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7"),
    }
    recreate_database(url)
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    sizes = ["--items", str(args.items), "--annotators", str(args.annotators)]
    made = subprocess.run(
        [python, __file__, "--child", "setup", *sizes],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    world = json.loads(made.stdout.strip().splitlines()[-1])
    worker = start_worker(env, scratch / "worker.log")
    server = base.start_gunicorn(env, args.port, args.workers)
    try:
        return load_and_prove(args, world, env, scratch)
    finally:
        server.terminate()
        worker.terminate()
        server.wait(timeout=30)
        worker.wait(timeout=30)


def load_and_prove(
    args: argparse.Namespace, world: dict[str, Any], env: dict[str, str], scratch: Path
) -> dict[str, Any]:
    api_count = round(args.annotators * args.api_share)
    people = []
    for index, name in enumerate(world["users"]):
        browser = base.Browser(args.port)
        browser.log_in(name)
        people.append(Person(browser, name, world, api=index < api_count))
    owner = base.Browser(args.port)
    owner.log_in(world["owner"])
    ledger = Ledger()
    load = os.getloadavg()[0]
    results: dict[str, Any] = {"load_before": load, "api_annotators": api_count}
    results["think"], results["jobs"] = run_phase(people, owner, args.think, args.seconds, ledger)
    if args.saturation_seconds > 0:
        results["saturation"], _ = run_phase(people, None, 0.0, args.saturation_seconds, ledger)
    after = {f: export(owner, world["study"], f, "long", new_stats()) for f in ("csv", "json")}
    results["jobs"] += [{"job": f"after: long {fmt}", **job} for fmt, job in after.items()]
    tables = {fmt: long_table(fmt, download(owner, job["id"])) for fmt, job in after.items()}
    out = scratch / "database.json"
    child = ["--child", "database", "--study", str(world["study"]), "--out", str(out)]
    subprocess.run([sys.executable, __file__, *child], cwd=ROOT, env=env, check=True)
    results["proof"] = prove(ledger, json.loads(out.read_text()), tables)
    return results


def report(args: argparse.Namespace, results: dict[str, Any]) -> bool:
    """Print and store the figures; True when the proof found nothing missing or different."""
    hidden = {"child", "study", "out", "keep", "port"}
    results["config"] = {k: v for k, v in vars(args).items() if k not in hidden}
    results["config"]["cores"] = os.cpu_count()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(
        f"{args.annotators} annotators ({results['api_annotators']} by API), gunicorn "
        f"{args.workers} sync workers + 1 Celery worker, {os.cpu_count()} cores, load average "
        f"before {results['load_before']:.2f}"
    )
    print(f"{'phase':<11}{'route':<23}{'n':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    phases = [phase for phase in ("think", "saturation") if phase in results]
    for phase in phases:
        for route, op in ((r, results[phase][r]) for r in ROUTES if r in results[phase]):
            print(
                f"{phase:<11}{route:<23}{op['n']:>7}{op['p50_ms']!s:>9}"
                f"{op['p95_ms']!s:>9}{op['max_ms']!s:>9}"
            )
        row = results[phase]
        print(
            f"{phase:<11}loops/s {row['loops_per_s']}, loops {row['loops']}, "
            f"errors {row['errors']} {row['error_samples']}"
        )
    for job in results["jobs"]:
        print(
            f"job {job['job']:<16} client {job['seen_s']} s, worker {job['worker_s']} s, "
            f"queued {job['queued_s']} s, rows {job['rows']}"
        )
    print_targets(results, phases)
    proof = results["proof"]
    print("proof: " + ", ".join(f"{k} {v}" for k, v in proof.items() if k != "samples"))
    lost = sum(v for k, v in proof.items() if k.startswith("missing") or k == "labels_differ")
    print(
        "every submitted annotation is in the database and both exports: "
        + ("yes" if lost == 0 else f"NO, see {RESULTS}")
    )
    return lost == 0


def print_targets(results: dict[str, Any], phases: list[str]) -> None:
    """The design's targets for labeling: next item and submit under 50 ms p95 with think
    time, no errors, and at least 70 loops/s at saturation."""
    think = results["think"]
    p95 = max(think[r]["p95_ms"] for r in LABELING if r in think)
    errors = sum(results[phase]["errors"] for phase in phases)
    line = (
        f"targets: labeling p95 < {base.TARGET_P95_MS} ms with think time: {p95} ms "
        f"{'ok' if p95 < base.TARGET_P95_MS else 'MISSED'}; errors {errors} "
        f"{'ok' if errors == 0 else 'MISSED'}"
    )
    if "saturation" in results:
        loops = results["saturation"]["loops_per_s"]
        line += f"; ≥ {base.TARGET_LOOPS} loops/s at saturation: {loops} "
        line += "ok" if loops >= base.TARGET_LOOPS else "MISSED"
    print(line)


if __name__ == "__main__":
    main()
