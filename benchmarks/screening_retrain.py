"""The retrain job of a prioritised screening round, through PostgreSQL, at study scale.

    .venv/bin/python benchmarks/screening_retrain.py [--issues 10000,100000] [--screened 1000]
        [--relevant 0.05] [--keep]

For each size: --issues synthetic issues of ~2 KB (benchmarks/screening_ranking.py's corpus) in
a fresh database, a screening round of a k = 2 study holding all of them, --screened of them
screened by one screener (annotations and labels written in bulk), then two retrains as the
worker runs them (`annotator.screening.retrain.retrain`): the first fits the round's TF-IDF
features and keeps them (MEDIA_ROOT/screening/), the second loads them. Each is timed whole —
reading the round's decisions, features, training and ranking every unscreened item, writing
the table of ranks in one statement, the model record — and by part. Targets (issue 19): a
retrain under 5 s at 10,000 issues and under 60 s at 100,000; ranking 100,000 items under 2 s.
Writes benchmarks/results/screening_retrain.json (not committed); the last line is
`retrain at N issues: first X s (features fitted), then Y s (features kept); ranking Z s`.
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
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "screening_retrain.json"
DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_screening"
TARGETS = {10_000: 5.0, 100_000: 60.0}
RANK_TARGET = 2.0


def run_size(issues: int, screened: int, relevant: float) -> dict[str, Any]:
    """In a child process with Django on the fresh database: build, then retrain twice."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from screening_ranking import make_issues

    from annotator.screening.retrain import retrain

    tick = time.perf_counter()
    round_id = build(issues, screened, relevant, make_issues)
    built = time.perf_counter() - tick
    runs = []
    for _ in range(2):
        tick = time.perf_counter()
        model = retrain(round_id)
        runs.append(
            {
                "wall_seconds": round(time.perf_counter() - tick, 3),
                "seconds": model.seconds,
                **model.metrics,
                "vocabulary": model.vocabulary_size,
                "ranked": model.n_ranked,
            }
        )
    latency = next_item_latency(round_id)
    return {
        "issues": issues,
        "screened": screened,
        "setup_seconds": round(built, 1),
        "runs": runs,
        "next_item_ms": latency,
    }


def next_item_latency(round_id: int, calls: int = 300) -> dict[str, dict[str, float]]:
    """next_assignment's time (ms, p50 and p95 of `calls`, each rolled back) for the second
    screener in the ranked round, then with its ranks removed (the seeded random order)."""
    import statistics

    from django.contrib.auth.models import User
    from django.db import transaction

    from annotator.studies.models import Round, ScreeningRank
    from annotator.studies.services import next_assignment

    round = Round.objects.select_related("study").get(pk=round_id)
    other = User.objects.create_user("bench-screener-2")
    from annotator.studies.models import Membership

    Membership.objects.create(study=round.study, user=other, role=Membership.Role.ANNOTATOR)
    out = {}
    for name in ("prioritised", "random"):
        if name == "random":
            ScreeningRank.objects.filter(round=round).delete()
        times = []
        for _ in range(calls):
            with transaction.atomic():
                tick = time.perf_counter()
                next_assignment(study=round.study, annotator=other)
                times.append((time.perf_counter() - tick) * 1000)
                transaction.set_rollback(True)
        times.sort()
        out[name] = {
            "p50": round_ms(statistics.median(times)),
            "p95": round_ms(times[int(0.95 * len(times)) - 1]),
        }
    return out


def round_ms(value: float) -> float:
    return float(f"{value:.3f}")


def build(issues: int, screened: int, relevant: float, make_issues: Any) -> int:
    import io

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db.models import F

    from annotator.issues.models import Issue, Repository
    from annotator.screening.services import start_screening_round
    from annotator.studies.models import (
        Annotation,
        AnnotationLabel,
        Assignment,
        Item,
        Membership,
    )
    from annotator.studies.services import create_study, select_issues
    from taxonomy_app.models import Category, CodebookVersion

    call_command("load_codebook", publish=True, stdout=io.StringIO())
    version = CodebookVersion.objects.get(status="published")
    texts, labels = make_issues(issues, relevant, 0)
    repo = Repository.objects.create(owner="hpcaitech", name="ColossalAI")
    Issue.objects.bulk_create(
        (
            Issue(
                repository=repo,
                number=n,
                title=" ".join(text.split()[:10]),
                body=text,
                state="closed",
                content_hash=f"{n:064x}",
            )
            for n, text in enumerate(texts, start=1)
        ),
        batch_size=2000,
    )
    owner = User.objects.create_user("bench-owner")
    screener = User.objects.create_user("bench-screener")
    study = create_study(name="Screening", codebook_version=version, owner=owner, overlap_k=2)
    Membership.objects.create(study=study, user=screener, role=Membership.Role.ANNOTATOR)
    round = start_screening_round(study=study, user=owner, seed=1).round
    select_issues(study=study, round=round, filters={}, seed=1, user=owner)
    relevant_category = Category.objects.get(
        facet__version=version, facet__key="screening", code="relevant"
    )
    other = Category.objects.get(facet__version=version, facet__key="screening", code="not-a-bug")
    items = list(
        Item.objects.filter(round=round)
        .order_by("position")[:screened]
        .values_list("pk", "issue__number")
    )
    assignments = Assignment.objects.bulk_create(
        Assignment(item_id=pk, annotator=screener, status="submitted") for pk, _ in items
    )
    annotations = Annotation.objects.bulk_create(
        Annotation(assignment=a, codebook_version=version, status="submitted") for a in assignments
    )
    AnnotationLabel.objects.bulk_create(
        AnnotationLabel(
            annotation=n,
            facet_id=relevant_category.facet_id,
            category=relevant_category if labels[number - 1] else other,
        )
        for n, (_, number) in zip(annotations, items, strict=True)
    )
    Item.objects.filter(pk__in=[pk for pk, _ in items]).update(
        active_count=F("active_count") + 1, submitted_count=F("submitted_count") + 1
    )
    return int(round.pk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issues", default="10000,100000")
    parser.add_argument("--screened", type=int, default=1000)
    parser.add_argument("--relevant", type=float, default=0.05)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        print(json.dumps(run_size(args.child, args.screened, args.relevant)))
        return
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    results = []
    for size in (int(n) for n in args.issues.split(",")):
        results.append(one_size(url, size, args))
    report(results)


def one_size(url: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    media = tempfile.mkdtemp(prefix="screening-bench-")
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_MEDIA_ROOT": media, "LOG_LEVEL": "WARNING"}
    env.pop("REDIS_URL", None)
    recreate_database(url)
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    child = [python, __file__, "--child", str(size), "--screened", str(args.screened)]
    child += ["--relevant", str(args.relevant)]
    made = subprocess.run(child, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    if not args.keep:
        drop_database(url)
    subprocess.run(["rm", "-rf", media], check=False)
    return dict(json.loads(made.stdout.strip().splitlines()[-1]))


def report(results: list[dict[str, Any]]) -> None:
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for r in results:
        first, second = r["runs"]
        target = TARGETS.get(r["issues"])
        # The first retrain (features fitted) is the one the target speaks of.
        verdict = "" if target is None else (" ok" if first["wall_seconds"] < target else " SLOW")
        print(
            f"{r['issues']:>7} issues, {r['screened']} screened: first retrain "
            f"{first['wall_seconds']} s (features {first['features_seconds']} s; CPU "
            f"{first.get('cpu_seconds')} s), then {second['wall_seconds']} s (features kept: "
            f"{second['features_seconds']} s, train and rank {second['train_rank_seconds']} s; "
            f"CPU {second.get('cpu_seconds')} s){verdict}"
        )
        lat = r["next_item_ms"]
        print(
            f"{r['issues']:>7} issues: next item p50/p95 prioritised "
            f"{lat['prioritised']['p50']}/{lat['prioritised']['p95']} ms, random "
            f"{lat['random']['p50']}/{lat['random']['p95']} ms"
        )
    last = results[-1]
    first, second = last["runs"]
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print(
        f"retrain at {last['issues']} issues: first {first['wall_seconds']} s (features fitted), "
        f"then {second['wall_seconds']} s (features kept); ranking "
        f"{second['train_rank_seconds']} s"
    )


if __name__ == "__main__":
    main()
