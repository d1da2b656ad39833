# ruff: noqa: RUF001, RUF002, RUF003, E501 -- α and × in output; long SQL column lists.
"""An agreement run from PostgreSQL to stored result at study scale, beside the krippendorff
package on the same data.

    .venv/bin/python benchmarks/agreement_run.py [--items 100000] [--annotators 3] [--seed 0]
        [--repeat 3] [--keep]

1. Drops and creates the database named by BENCH_DATABASE_URL (default
   postgres://root@127.0.0.1:5432/annotator_bench_agreement), migrates it and loads the seed
   codebook; creates a study with --annotators annotators and a round, then inserts --items
   issues (bulk_create), items, assignments, submitted annotations and their labels (COPY) for
   4 facets: symptom (25 categories, a hierarchy), root-cause (11), stage (5) and fix-pattern
   (17, multi-choice: label sets). Each annotator copies the item's "true" label 70% of the
   time; 5% of cells are left empty; then VACUUM ANALYZE. Generation time is not the measure.
2. In a fresh process per repeat: `start_agreement_run` + `run_agreement_run` (the Celery job's
   body: two SQL reads of the labels, every coefficient with its jackknife SE, the diagnostics,
   the result written in one UPDATE). Wall seconds and the process's peak RSS (and its RSS after
   Django start-up, so the run's own share shows).
3. In another fresh process: the same root-cause table (read through the same bridge) through
   `krippendorff.alpha(level_of_measurement="nominal")`, time and peak RSS, and both α values.
Writes benchmarks/results/agreement_run.json (not committed).

    .venv/bin/python benchmarks/agreement_run.py --existing [--study NAME] [--repeat 3]

`--existing` runs step 2 on a study already in the database BENCH_DATABASE_URL names (by
default its largest; e.g. a copy of page_scale.py's `annotator_bench_small`), for the whole
study and every facet, as the worker runs it (the run row, then the Celery task's body), and
deletes the runs it made; nothing is generated or dropped. Writes
benchmarks/results/agreement_run_existing.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_agreement"
FACETS = ["symptom", "root-cause", "stage", "fix-pattern"]
TARGET_SECONDS = 2.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["generate", "run", "krippendorff", "existing"])
    parser.add_argument("--existing", action="store_true")
    parser.add_argument("--study", default="")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    if args.child:
        return _child(args)
    if args.existing:
        return _existing(args, url)
    recreate_database(url)
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "", "DJANGO_DEBUG": "0"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
    subprocess.run(
        [*manage, "load_codebook", "--publish"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    generated = _json_child("generate", args, env)
    print(
        f"generated {generated['labels']:,} labels on {args.items:,} items "
        f"in {generated['seconds']:.1f} s"
    )
    runs = [_json_child("run", args, env) for _ in range(args.repeat)]
    kripp = _json_child("krippendorff", args, env)
    report = {
        "items": args.items,
        "annotators": args.annotators,
        "facets": FACETS,
        "labels": generated["labels"],
        "runs": runs,
        "krippendorff": kripp,
    }
    _print(report)
    out = ROOT / "benchmarks" / "results" / "agreement_run.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    if not args.keep:
        drop_database(url)


def _existing(args: argparse.Namespace, url: str) -> None:
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": "", "DJANGO_DEBUG": "0"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
    runs = [_json_child("existing", args, env) for _ in range(args.repeat)]
    first = runs[0]
    print(f"\nstudy {first['study']!r}: {first['items']:,} items, {first['labels']:,} label rows")
    for i, run in enumerate(runs, 1):
        print(
            f"worker run {i} (whole study, every facet): {run['seconds']:.3f} s "
            f"(load {run['load']:.3f} s, compute {run['compute']:.3f} s; "
            f"{run['cpu_seconds']:.3f} s of this process's CPU), peak RSS "
            f"{run['peak_mib']:.0f} MiB (+{run['peak_mib'] - run['baseline_mib']:.0f})"
        )
    best = min(r["seconds"] for r in runs)
    met = "MET" if best < TARGET_SECONDS else "NOT MET"
    print(f"target < {TARGET_SECONDS} s in the worker: best {best:.3f} s {met}")
    out = ROOT / "benchmarks" / "results" / "agreement_run_existing.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"runs": runs}, indent=2))


def _json_child(kind: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--items", str(args.items)]
    command += ["--annotators", str(args.annotators), "--seed", str(args.seed)]
    command += ["--study", args.study]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _print(report: dict[str, Any]) -> None:
    print(
        f"\n{report['items']:,} items × {report['annotators']} annotators × "
        f"{len(report['facets'])} facets ({report['labels']:,} label rows)"
    )
    print(f"{'':34}{'seconds':>9}{'peak RSS MiB':>14}{'run share MiB':>15}")
    for i, run in enumerate(report["runs"], 1):
        print(
            f"{'annotator run ' + str(i) + ' (PostgreSQL→stored)':34}{run['seconds']:9.3f}"
            f"{run['peak_mib']:14.0f}{run['peak_mib'] - run['baseline_mib']:15.0f}"
            f"   load {run['load']:.3f} s, compute {run['compute']:.3f} s"
        )
    k = report["krippendorff"]
    print(
        f"{'krippendorff.alpha (1 facet)':34}{k['seconds']:9.3f}{k['peak_mib']:14.0f}"
        f"{k['peak_mib'] - k['baseline_mib']:15.0f}   + load {k['load']:.3f} s"
    )
    print(f"root-cause nominal α: annotator {k['ours']:.12f}, krippendorff {k['theirs']:.12f}")
    best = min(r["seconds"] for r in report["runs"])
    print(
        f"target < {TARGET_SECONDS} s end to end: best {best:.3f} s "
        f"{'MET' if best < TARGET_SECONDS else 'NOT MET'}"
    )


# --- children ---------------------------------------------------------------------------------
def _child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    import django

    django.setup()
    baseline = _rss_mib()
    children = {"generate": _generate, "run": _run, "krippendorff": _krippendorff}
    out = {**children, "existing": _run_existing}[args.child](args)
    out.update(peak_mib=_peak_mib(), baseline_mib=baseline)
    print(json.dumps(out))


def _run(args: argparse.Namespace) -> dict[str, Any]:
    from annotator.agreement.models import AgreementRun
    from annotator.agreement.services import run_agreement_run, start_agreement_run
    from annotator.studies.models import Study

    study = Study.objects.get(name="Agreement benchmark")
    start = time.perf_counter()
    run = start_agreement_run(study=study, facets=FACETS, enqueue=False)
    run_agreement_run(run_id=run.pk)
    seconds = time.perf_counter() - start
    run = AgreementRun.objects.get(pk=run.pk)
    assert run.status == "succeeded", run.error
    alpha = {
        f["key"]: f["coefficients"]["krippendorff_alpha"]["value"] for f in run.result["facets"]
    }
    return {
        "seconds": seconds,
        **run.inputs["seconds"],
        "alpha": alpha,
        "result_kib": len(json.dumps(run.result)) / 1024,
    }


def _run_existing(args: argparse.Namespace) -> dict[str, Any]:
    """A whole-study run of every facet as the worker runs it; the run is deleted after."""
    from django.db.models import Count

    from annotator.agreement.models import AgreementRun
    from annotator.agreement.services import start_agreement_run
    from annotator.agreement.tasks import run_agreement_task
    from annotator.studies.models import Study

    studies = Study.objects.annotate(n=Count("items"))
    study = studies.get(name=args.study) if args.study else studies.order_by("-n", "pk").first()
    start, cpu = time.perf_counter(), _cpu_seconds()
    run = start_agreement_run(study=study, enqueue=False)
    run_agreement_task(run.pk)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    run = AgreementRun.objects.get(pk=run.pk)
    assert run.status == "succeeded", run.error
    AgreementRun.objects.filter(pk=run.pk).delete()
    return {
        "study": study.name,
        "items": study.n,
        "labels": run.inputs["labels"],
        "seconds": seconds,
        "cpu_seconds": cpu,  # this process's, PostgreSQL's not included
        **run.inputs["seconds"],
        "result_kib": len(json.dumps(run.result)) / 1024,
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _krippendorff(args: argparse.Namespace) -> dict[str, Any]:
    import krippendorff
    import numpy as np

    from annotator.agreement import stats
    from annotator.agreement.labels import load_label_table
    from annotator.studies.models import Study

    study = Study.objects.select_related("codebook_version").get(name="Agreement benchmark")
    start = time.perf_counter()
    loaded = load_label_table(
        study_id=study.pk, version=study.codebook_version, facet_keys=["root-cause"]
    )
    table = loaded.facets[0].table
    load = time.perf_counter() - start
    data = np.where(table.codes >= 0, table.codes, np.nan).T  # raters × units
    start = time.perf_counter()
    theirs = krippendorff.alpha(
        reliability_data=data, level_of_measurement="nominal", value_domain=list(range(table.q))
    )
    seconds = time.perf_counter() - start
    ours = stats.krippendorff_alpha(table).value
    return {"seconds": seconds, "load": load, "ours": ours, "theirs": float(theirs)}


def _generate(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from annotator.issues.models import Issue, Repository
    from annotator.studies.models import Membership
    from annotator.studies.services import add_member, create_study
    from taxonomy_app.models import CodebookVersion
    from tests.factories import UserFactory

    start = time.perf_counter()
    version = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs", status="published")
    owner = UserFactory(username="bench-owner")
    study = create_study(
        name="Agreement benchmark", codebook_version=version, owner=owner, overlap_k=args.annotators
    )
    people = [UserFactory(username=f"bench-annotator-{i}") for i in range(args.annotators)]
    for person in people:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    round_ = study.rounds.get()
    repo = Repository.objects.create(owner="bench", name="agreement")
    for lo in range(0, args.items, 10_000):
        Issue.objects.bulk_create(
            Issue(
                repository=repo,
                number=n + 1,
                title=f"Issue {n}",
                state="open",
                content_hash=f"{n:064x}",
            )
            for n in range(lo, min(args.items, lo + 10_000))
        )
    issue_ids = list(
        Issue.objects.filter(repository=repo).order_by("number").values_list("pk", flat=True)
    )
    scene = Scene(study, round_.pk, version, issue_ids, [p.pk for p in people])
    labels = _copy_labels(connection, args, scene)
    return {"seconds": time.perf_counter() - start, "labels": labels}


@dataclass(frozen=True)
class Scene:
    """What the labels are written for: the study, its round, its codebook version, the issues
    (ids, by number) and the annotators (user ids)."""

    study: Any
    round_id: int
    version: Any
    issue_ids: list[int]
    people: list[int]


def _copy_labels(connection: Any, args: argparse.Namespace, scene: Scene) -> int:
    import numpy as np

    from annotator.studies.models import Annotation, AnnotationLabel, Assignment, Item

    study, version, people = scene.study, scene.version, scene.people
    rng = np.random.default_rng(args.seed)
    n, k = args.items, len(people)
    now = "2025-01-01 00:00:00+00"
    items = (
        f"{i + 1}\t{study.pk}\t{scene.round_id}\t{scene.issue_ids[i]}\t{i}\t{k}\t{k}\t{k}\t\\N\n"
        for i in range(n)
    )
    _copy(
        connection,
        Item,
        "id,study_id,round_id,issue_id,position,quota,active_count,submitted_count,released_at",
        items,
    )
    assignments = (
        f"{a + 1}\t{a // k + 1}\t{people[a % k]}\tsubmitted\t\t{now}\t{now}\t{now}\n"
        for a in range(n * k)
    )
    _copy(
        connection,
        Assignment,
        "id,item_id,annotator_id,status,skip_reason,assigned_at,touched_at,finished_at",
        assignments,
    )
    annotations = (
        f"{a + 1}\t{a + 1}\t{version.pk}\tsubmitted\t30\t\t[]\t{now}\t{now}\t{now}\n"
        for a in range(n * k)
    )
    _copy(
        connection,
        Annotation,
        "id,assignment_id,codebook_version_id,status,seconds_spent,notes,unsure,created_at,updated_at,submitted_at",
        annotations,
    )
    rows = io.StringIO()
    total = 0
    for facet in version.facets.filter(key__in=FACETS):
        ids = np.array(list(facet.categories.filter(archived=False).values_list("pk", flat=True)))
        annotation, category = _facet_labels(rng, ids, n, k, multi=facet.kind == "multi")
        columns = [annotation, np.full(len(annotation), facet.pk), category]
        np.savetxt(rows, np.column_stack(columns), fmt="%d", delimiter="\t")
        total += len(annotation)
    rows.seek(0)
    with connection.cursor() as cursor:
        cursor.copy_expert(
            f"COPY {AnnotationLabel._meta.db_table} (annotation_id, facet_id, category_id) FROM STDIN",
            rows,
        )
        for model in (Item, Assignment, Annotation):
            table = model._meta.db_table
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
            )
        # As autovacuum would have by then: hint bits set, statistics fresh (a first read of
        # freshly COPYed rows otherwise writes every page back).
        cursor.execute("VACUUM ANALYZE")
    return total


def _facet_labels(rng: Any, ids: Any, n: int, k: int, *, multi: bool) -> tuple[Any, Any]:
    """(annotation id, category id) rows: each annotator copies the truth 70% of the time."""
    import numpy as np

    q = len(ids)
    truth = rng.integers(0, q, n)
    chosen = np.where(rng.random((n, k)) < 0.7, truth[:, None], rng.integers(0, q, (n, k)))
    annotation = np.arange(1, n * k + 1).reshape(n, k)
    keep = rng.random((n, k)) >= 0.05
    rows_a, rows_c = [annotation[keep]], [ids[chosen[keep]]]
    if multi:  # a second label on ~30% of cells, a third on ~10% (distinct from the first)
        for share, shift in ((0.3, 1), (0.1, 2)):
            extra = keep & (rng.random((n, k)) < share)
            rows_a.append(annotation[extra])
            rows_c.append(ids[(chosen[extra] + shift) % q])
    return np.concatenate(rows_a), np.concatenate(rows_c)


def _copy(connection: Any, model: Any, columns: str, lines: Any) -> None:
    buffer = io.StringIO("".join(lines))
    with connection.cursor() as cursor:
        cursor.copy_expert(f"COPY {model._meta.db_table} ({columns}) FROM STDIN", buffer)


# --- database and memory ----------------------------------------------------------------------
def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
