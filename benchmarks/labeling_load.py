"""Benchmark: 50 annotators labeling at once against gunicorn on 127.0.0.1 (PostgreSQL).

Two phases with the same annotators: ~2 s of reading per item ("think"), then no think time at
all ("saturation"). Each loop is what the browser does: GET the annotate page, then POST the
submit (htmx), whose answer names the next item (HX-Redirect). See benchmarks/README.md.

    .venv/bin/python benchmarks/labeling_load.py [--annotators 50] [--think 2.0]
        [--think-seconds 60] [--saturation-seconds 30] [--workers 4] [--items 5000] [--keep]
        [--prioritised]

--prioritised labels a prioritised screening round instead of a main round: the items are
handed out in the order of a table of ranks (as after a retrain; studies/sql.py
top_ranked_item) and every submit wakes the screening hook (a decision count, the retrain job
queued: no worker runs it here). Compare its next-item p95 with a run without the flag.
Results go to labeling_load_prioritised.json.

Requests go only to 127.0.0.1, from a bounded pool of threads, for a bounded time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "labeling_load.json"
DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_labeling"
PASSWORD = "bench-password-1"
TARGET_P95_MS = 50
TARGET_LOOPS = 70
REFERENCE = "Label Studio 1.23 under gunicorn here: 7 loops/s, p95 ~6 s"


# --- setup (runs in a child process with Django) ----------------------------------------------
def setup(items: int, annotators: int, prioritised: bool = False) -> dict[str, Any]:
    """Codebook, `items` issues with comments (bodies from the demo threads), a k = 2 study
    with every issue selected, and the annotators. Returns what the load clients need."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    import io

    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from annotator.issues.models import Issue, IssueComment, Repository
    from annotator.studies.codebook import codebook_schema
    from annotator.studies.models import Membership
    from annotator.studies.services import create_study, select_issues
    from taxonomy_app.models import CodebookVersion

    call_command("load_codebook", publish=True, stdout=io.StringIO())
    version = CodebookVersion.objects.get(status="published")
    demo = ROOT / "annotator" / "issues" / "demo_data"
    bodies = [i["body"] or "" for i in json.loads((demo / "colossalai_issues.json").read_text())]
    notes = [c["body"] or "" for c in json.loads((demo / "colossalai_comments.json").read_text())]
    repo = Repository.objects.create(owner="hpcaitech", name="ColossalAI")
    Issue.objects.bulk_create(
        Issue(
            repository=repo,
            number=n,
            title=f"Issue {n}: NCCL timeout on {n % 8 + 1} nodes",
            body=bodies[n % len(bodies)],
            state="closed",
            content_hash=f"{n:064x}",
            comments_count=4,
        )
        for n in range(1, items + 1)
    )
    IssueComment.objects.bulk_create(
        IssueComment(
            issue=issue,
            key=f"b{issue.pk}-{j}",
            body=notes[(issue.pk + j) % len(notes)],
            author="reviewer",
            content_hash=f"{issue.pk:060x}{j:04x}",
        )
        for issue in Issue.objects.only("pk")
        for j in range(4)
    )
    owner = User.objects.create_superuser("bench-owner", password=PASSWORD)
    study = create_study(name="Load", codebook_version=version, owner=owner, overlap_k=2)
    hashed = make_password(PASSWORD)
    people = User.objects.bulk_create(
        User(username=f"bench{i:03d}", password=hashed) for i in range(annotators)
    )
    Membership.objects.bulk_create(
        Membership(study=study, user=u, role=Membership.Role.ANNOTATOR) for u in people
    )
    round = study.rounds.get()
    if prioritised:
        from annotator.screening.services import start_screening_round
        from annotator.screening.sql import write_ranks
        from annotator.studies.models import Item

        round = start_screening_round(study=study, user=owner, seed=1).round
    select_issues(study=study, round=round, filters={}, seed=1, user=owner)
    if prioritised:
        ranked = list(Item.objects.filter(round=round).values_list("pk", flat=True))
        random.Random(1).shuffle(ranked)
        write_ranks(round.pk, ranked)
        # As after a first retrain: the hook then only counts decisions between retrains.
        from annotator.screening.models import ScreeningModel

        ScreeningModel.objects.create(
            round=round, version=1, model="tfidf-svm", seed=1, training_hash="benchmark"
        )
    schema = codebook_schema(version)
    first = label_sets(schema, 1)[0]
    by_key = {f.key: f for f in schema.facets}
    labels = {
        f"facet-{by_key[key].id}": [c.id for c in by_key[key].categories if c.code in codes]
        for key, codes in first.items()
    }
    return {"study": study.pk, "users": [u.username for u in people], "labels": labels}


def label_sets(schema: Any, count: int, seed: int = 1) -> list[dict[str, list[str]]]:
    """`count` random label sets (facet key → codes) that the codebook accepts on submit, its
    required facets and label rules included. Each is drawn until the codebook takes it: leaves
    only; a third of the time the first facet (screening) alone, otherwise a multi-choice facet
    0 to 2 codes and any other one code (mostly). Drawn in the setup child, which has Django."""
    rng = random.Random(seed)
    found: list[dict[str, list[str]]] = []
    for _ in range(count * 2000):
        if len(found) == count:
            return found
        chosen: dict[int, list[Any]] = {}
        facets = schema.facets[:1] if rng.random() < 1 / 3 else schema.facets
        for facet in facets:
            groups = {c.parent_id for c in facet.categories}
            leaves = [c for c in facet.categories if c.id not in groups]
            if facet.is_multi:
                chosen[facet.id] = rng.sample(leaves, rng.randint(0, 2))
            elif facet.required or rng.random() < 0.7:
                chosen[facet.id] = [rng.choice(leaves)]
        ids = {facet: [c.id for c in cs] for facet, cs in chosen.items() if cs}
        _, errors = schema.validate_labels(ids, require=True)
        if not errors:
            keys = {f.id: f.key for f in schema.facets}
            found.append({keys[f]: sorted(c.code for c in cs) for f, cs in chosen.items() if cs})
    raise RuntimeError(f"the codebook took {len(found)} of {count} random label sets")


# --- HTTP client ------------------------------------------------------------------------------
class Browser:
    """One annotator's keep-alive connection with its cookies (stdlib only, low overhead)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(
        self,
        method: str,
        path: str,
        form: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
    ) -> tuple[int, Any, bytes]:
        """One request on the keep-alive connection: a form, or a JSON body (the REST API,
        benchmarks/study_load.py), sent with the session's CSRF token."""
        sent = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None or json_body is not None:
            body = urlencode(form, doseq=True) if form is not None else json.dumps(json_body)
            sent["Content-Type"] = (
                "application/x-www-form-urlencoded" if form is not None else "application/json"
            )
            sent["X-CSRFToken"] = self.cookies.get("csrftoken", "")
        sent.update(headers or {})
        try:
            self.conn.request(method, path, body=body, headers=sent)
            response = self.conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            raise
        for cookie in response.headers.get_all("Set-Cookie") or []:
            name, _, value = cookie.split(";", 1)[0].partition("=")
            self.cookies[name] = value
        return response.status, response.headers, data

    def log_in(self, username: str) -> None:
        _, _, page = self.request("GET", "/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, "no CSRF token on the login page"
        status, _, _ = self.request(
            "POST",
            "/login/",
            {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        )
        assert status == 302, f"login of {username} answered {status}"


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = {"GET annotate page": [], "POST submit": []}
        self.errors: list[str] = []
        self.loops = 0

    def add(self, name: str, seconds: float) -> None:
        with self.lock:
            self.times[name].append(seconds)


def annotator(
    browser: Browser, study: int, labels: dict[str, Any], think: float, until: float, stats: Stats
) -> None:
    # Readers do not move in step: each waits a random share of one think time before starting,
    # and each read lasts think * U(0.75, 1.25) (mean `think`), so requests do not come in waves.
    rng = random.Random(id(browser))
    time.sleep(rng.uniform(0, think))
    try:
        status, headers, _ = browser.request("GET", f"/studies/{study}/annotate/")
        path = headers.get("Location", "")
        while time.monotonic() < until and "/assignments/" in path:
            start = time.perf_counter()
            status, _, page = browser.request("GET", path)
            stats.add("GET annotate page", time.perf_counter() - start)
            if status != 200 or b"annotate-form" not in page:
                raise RuntimeError(f"GET {path}: {status}")
            time.sleep(think * rng.uniform(0.75, 1.25))
            start = time.perf_counter()
            status, headers, _ = browser.request(
                "POST", path + "submit/", {**labels, "seconds": "2"}, {"HX-Request": "true"}
            )
            stats.add("POST submit", time.perf_counter() - start)
            if status != 200 or not headers.get("HX-Redirect"):
                raise RuntimeError(f"POST {path}submit/: {status}")
            path = headers["HX-Redirect"]
            with stats.lock:
                stats.loops += 1
    except Exception as error:  # counted and reported, never hidden
        with stats.lock:
            stats.errors.append(repr(error)[:200])


def cpu_ticks() -> tuple[int, int, int] | None:
    """(all, idle, stolen) CPU ticks of the machine so far, from /proc/stat (Linux); None
    elsewhere. Idle time at saturation means waiting (locks, disk), not computing; on a virtual
    machine the hypervisor may run other guests on "our" cores, and the stolen share says how
    much of a phase's figures is the neighbours, not the app."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields[:8]), fields[3] + fields[4], fields[7]


def cpu_shares(before: tuple[int, int, int] | None) -> dict[str, float | None]:
    after = cpu_ticks()
    if before is None or after is None or after[0] == before[0]:
        return {"cpu_idle_percent": None, "cpu_stolen_percent": None}
    total = after[0] - before[0]
    return {
        "cpu_idle_percent": round(100 * (after[1] - before[1]) / total, 1),
        "cpu_stolen_percent": round(100 * (after[2] - before[2]) / total, 1),
    }


def process_cpu() -> dict[str, float]:
    """CPU seconds used so far by the app server (gunicorn), PostgreSQL and this load generator
    (Linux /proc; empty elsewhere). Differences over a phase, per loop, say where a loop's CPU
    goes. Backends are persistent (DATABASE_CONN_MAX_AGE), so none exits mid-phase."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {"app": 0.0, "postgres": 0.0, "load generator": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        if int(entry.name) == os.getpid():
            used["load generator"] += seconds
        elif b"gunicorn" in cmdline:
            used["app"] += seconds
        elif comm == "postgres":
            used["postgres"] += seconds
    return used


def run_phase(
    browsers: list[Browser], study: int, labels: dict[str, Any], think: float, seconds: float
) -> dict[str, Any]:
    stats = Stats()
    ticks, used = cpu_ticks(), process_cpu()
    start = time.monotonic()
    until = start + seconds
    threads = [
        threading.Thread(target=annotator, args=(b, study, labels, think, until, stats))
        for b in browsers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 60)
    elapsed = time.monotonic() - start
    after = process_cpu()
    per_loop = {
        name: round(1000 * (after[name] - used[name]) / stats.loops, 1) if stats.loops else None
        for name in used
    }
    return {**summarize(stats, elapsed, think), **cpu_shares(ticks), "cpu_ms_per_loop": per_loop}


def summarize(stats: Stats, elapsed: float, think: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "think_s": think,
        "seconds": round(elapsed, 1),
        "loops": stats.loops,
        "loops_per_s": round(stats.loops / elapsed, 1),
        "errors": len(stats.errors),
        "error_samples": stats.errors[:3],
    }
    for name, times in stats.times.items():
        ms = sorted(t * 1000 for t in times)
        out[name] = {
            "n": len(ms),
            "p50_ms": round(statistics.median(ms), 1) if ms else None,
            # nearest rank: never below the median, even for the few samples of a job's routes
            "p95_ms": round(ms[max(0, -(-95 * len(ms) // 100) - 1)], 1) if ms else None,
            "max_ms": round(ms[-1], 1) if ms else None,
        }
    return out


# --- orchestration ----------------------------------------------------------------------------


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    gunicorn = [str(ROOT / ".venv" / "bin" / "gunicorn"), "annotator.wsgi"]
    options = ["-b", f"127.0.0.1:{port}", "-w", str(workers), "--backlog", "256", "--preload"]
    server = subprocess.Popen([*gunicorn, *options, "--log-level", "warning"], cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/login/")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    sys.exit("gunicorn did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--think", type=float, default=2.0)
    parser.add_argument("--think-seconds", type=float, default=60)
    parser.add_argument("--saturation-seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--prioritised", action="store_true", help="a prioritised screening round")
    parser.add_argument("--setup-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup_only:
        print(json.dumps(setup(args.items, args.annotators, args.prioritised)))
        return
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_DEBUG": "0",
        "DATABASE_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
    }
    # The production shape (docker-compose.yml): sessions are cached in Redis.
    env["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
    recreate_database(url)
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    sizes = ["--items", str(args.items), "--annotators", str(args.annotators)]
    sizes += ["--prioritised"] if args.prioritised else []
    made = subprocess.run(
        [python, __file__, "--setup-only", *sizes],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    world = json.loads(made.stdout.strip().splitlines()[-1])
    server = start_gunicorn(env, args.port, args.workers)
    try:
        browsers = [Browser(args.port) for _ in world["users"]]
        for browser, username in zip(browsers, world["users"], strict=True):
            browser.log_in(username)
        load = os.getloadavg()[0]
        think = run_phase(browsers, world["study"], world["labels"], args.think, args.think_seconds)
        saturation = run_phase(
            browsers, world["study"], world["labels"], 0.0, args.saturation_seconds
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    report(args, {"think": think, "saturation": saturation, "load_before": load})
    if not args.keep:
        drop_database(url)


def report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    results["config"] = {
        "annotators": args.annotators,
        "workers": args.workers,
        "cores": os.cpu_count(),
        "items": args.items,
        "prioritised": args.prioritised,
    }
    out = RESULTS.with_name("labeling_load_prioritised.json") if args.prioritised else RESULTS
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(
        f"{args.annotators} annotators, gunicorn {args.workers} sync workers, "
        f"{os.cpu_count()} cores, load average before {results['load_before']:.2f}"
    )
    print(
        f"{'phase':<12}{'operation':<20}{'n':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
        f"{'errors':>8}{'loops/s':>9}"
    )
    for phase in ("think", "saturation"):
        row = results[phase]
        for name in ("GET annotate page", "POST submit"):
            op = row[name]
            print(
                f"{phase:<12}{name:<20}{op['n']:>7}{op['p50_ms']!s:>9}{op['p95_ms']!s:>9}"
                f"{op['max_ms']!s:>9}{row['errors']:>8}{row['loops_per_s']:>9}"
            )
    think, sat = results["think"], results["saturation"]
    p95 = max(think["GET annotate page"]["p95_ms"] or 0, think["POST submit"]["p95_ms"] or 0)
    print(
        f"targets: p95 < {TARGET_P95_MS} ms with think time: {p95} ms "
        f"{'ok' if p95 < TARGET_P95_MS else 'MISSED'}; no errors: "
        f"{'ok' if not think['errors'] and not sat['errors'] else 'MISSED'}; "
        f"≥ {TARGET_LOOPS} loops/s at saturation: {sat['loops_per_s']} "
        f"{'ok' if sat['loops_per_s'] >= TARGET_LOOPS else 'MISSED'}"
    )
    if think["cpu_idle_percent"] is not None:
        print(
            f"CPU idle: think {think['cpu_idle_percent']}%, saturation "
            f"{sat['cpu_idle_percent']}%; stolen by the hypervisor (other guests): "
            f"think {think['cpu_stolen_percent']}%, "
            f"saturation {sat['cpu_stolen_percent']}%"
        )
    for phase in ("think", "saturation"):
        shares = ", ".join(f"{k} {v}" for k, v in results[phase]["cpu_ms_per_loop"].items())
        print(f"CPU ms per loop ({phase}): {shares}")
    print(f"reference: {REFERENCE}")


if __name__ == "__main__":
    main()
