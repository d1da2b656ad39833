"""Benchmark: every GET route at scale. A database with a million issues and a study of 100,000
items (three annotators each, decisions, ten rounds, an agreement run and exports), then every
GET route the URL resolver knows, requested through gunicorn as the role that uses it, with the
filters people use; p50/p95 per route and the queries each request makes.

    .venv/bin/python benchmarks/page_scale.py [--issues 1000000] [--items 100000] [--keep]
        [--requests 20] [--workers 4] [--only PATTERN]

The routes and the objects in their URLs are the permission matrix's (tests/security/matrix.py
and matrix_scene.py): its small scene (study S, annotators A and B, an adjudicator, a decided,
a released, an open and a fresh item, a proposal, an agreement run, an export, backups, …) is
built first, then S is grown to the asked size with COPY: issues in four repositories (bodies of
~2 KB from the demo threads, four comments on every tenth), nine more rounds holding the items,
a third annotator, three submitted annotations per item with labels the codebook accepts (two
of three alike on most items), the automatic decisions and item agreements the rules give
(computed by annotator.adjudication.services.rules, as a submit would), an adjudicated decision
on half the rest, then the search index, an agreement run of the whole study and exports.
`--keep` keeps the database (annotator_bench_pages) and reuses it on the next run.

Requests go only to 127.0.0.1, one at a time, a bounded number per route. The last line is
`worst p95 N ms over R routes (ROUTE)`.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench_db import drop_database, recreate_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import labeling_load as base  # noqa: E402 -- gunicorn and the keep-alive HTTP client
import study_load  # noqa: E402 -- the Celery worker

RESULTS = ROOT / "benchmarks" / "results" / "page_scale.json"
DEFAULT_URL = "postgres://root@127.0.0.1:5432/annotator_bench_pages"
TARGET_P95_MS = 300
TARGET_SEARCH_P95_MS = 200
TARGET_QUERIES = 50
ROUTE_BUDGET_S = 30  # a route's requests stop once they have taken this long together
GENERATOR = 2  # raised when the generated data changes shape: a kept database is then remade
TOPUP = 4  # raised when `topup` adds to the data: a kept database gets the addition on reuse
QUEUE = "bench_page_scale"  # its own queue: a test worker on the same Redis never takes its jobs
REPOSITORIES = [("deepspeedai", "DeepSpeed"), ("NVIDIA", "Megatron-LM"),
                ("hpcaitech", "ColossalAI"), ("pytorch", "pytorch")]  # fmt: skip
ROLES = ("owner", "adjudicator", "annotator")  # who requests: the first of these a rule admits
WORDS = [
    *[
        "nccl",
        "timeout",
        "hang",
        "deadlock",
        "oom",
        "zero3",
        "offload",
        "checkpoint",
        "resume",
        "pipeline",
        "tensor",
        "parallel",
    ],
    *[
        "allreduce",
        "gradient",
        "overflow",
        "loss",
        "nan",
        "fp16",
        "bf16",
        "optimizer",
        "sharding",
        "launcher",
    ],
    *[
        "megatron",
        "colossal",
        "rank",
        "mismatch",
        "shape",
        "cuda",
        "kernel",
        "illegal",
        "memory",
        "access",
        "segfault",
    ],
    *[
        "dataloader",
        "tokenizer",
        "moe",
        "expert",
        "activation",
        "recompute",
        "flash",
        "attention",
        "lora",
    ],
]


# --- generation (a child process with Django) ----------------------------------------------------
def copy_rows(model: Any, rows: Iterable[dict[str, Any]], chunk: int = 20_000) -> int:
    """COPY `rows` (field name → value; missing fields take their Python default) into the
    model's table, `chunk` rows per statement. Returns the number of rows."""
    from django.db import connection
    from django.db.models import DateTimeField, JSONField
    from django.utils import timezone

    now = timezone.now()
    rows = iter(rows)
    head = next(rows, None)
    if head is None:
        return 0
    # The primary key is written where the rows carry it (children refer to it), else drawn.
    fields = [f for f in model._meta.concrete_fields if not f.primary_key or f.attname in head]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    statement = (
        f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
        "FROM STDIN WITH (FORMAT csv, NULL '\\N')"
    )

    def value(field: Any, row: dict[str, Any]) -> Any:
        if field.attname in row:
            v = row[field.attname]
        elif field.name in row:
            v = row[field.name]
        elif isinstance(field, DateTimeField) and (field.auto_now or field.auto_now_add):
            v = now
        else:  # the default, "" for text; a NOT NULL column left without one fails loudly
            v = field.get_default()
        if v is None:
            return "\\N"
        if isinstance(field, JSONField):
            return json.dumps(v)
        if isinstance(v, bool):
            return "t" if v else "f"
        return v

    total = 0
    with connection.cursor() as cursor:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        count = 0
        for row in itertools.chain([head], rows):
            writer.writerow([value(f, row) for f in fields])
            count += 1
            if count == chunk:
                buffer.seek(0)
                cursor.copy_expert(statement, buffer)
                total += count
                buffer, count = io.StringIO(), 0
                writer = csv.writer(buffer)
        if count:
            buffer.seek(0)
            cursor.copy_expert(statement, buffer)
            total += count
    return total


def next_ids(model: Any, count: int) -> range:
    """`count` primary keys after the table's largest, and the table's identity moved past them."""
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")
        start = cursor.fetchone()[0] + 1
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)",
            [model._meta.db_table, start + count],
        )
    return range(start, start + count)


def migrate() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def generate(issues: int, items: int) -> dict[str, Any]:
    """The scene, grown. Returns the ids the route walk needs and how long each part took."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    timings: dict[str, float] = {}

    def step(name: str, start: float) -> None:
        timings[name] = round(time.perf_counter() - start, 1)
        print(f"  {name}: {timings[name]} s", flush=True)

    start = time.perf_counter()
    from tests.security.matrix_scene import build_scene

    scene = build_scene()
    people = _passwords(scene)
    step("scene", start)
    grown = _grow(scene, issues, items, step)
    return {"ids": scene.ids, "users": people, "timings": timings, **grown}


def topup(done: int, world: dict[str, Any]) -> dict[str, Any]:
    """What the data gained after its first shape, applied to a new database and to a kept one
    alike, each part once (`done`: the parts a kept database has). Returns how long each took.

    1. The time each annotation was submitted (a real submit sets it; the drift page and the
       time to resolution read it), one every 25 s in id order from 2 March 2026, which spreads
       the study over about three months.
    2. The scene's screening round filled as weeks of screening would (benchmarks/
       screening_scale.py): 100,000 candidates (at most one per issue), a twentieth of them
       screened, a retrained ranking. The adjudicated decisions' reason is one the codebook
       offers ("ambiguous-report").
    3. An agreement run of the study's last round, which stores the round's drift (the drift
       page shows the stored figures; the run at generation had no submission times to order
       the items by).
    4. A rule of the study's version that label sets can break (the scene's one cannot, so the
       rule-breaks page checked nothing): a symptom requires a fix. The page checks it on
       every submitted annotation."""
    migrate()
    from django.db import connection, transaction

    from annotator.adjudication.models import Decision
    from annotator.studies.models import Annotation

    timings: dict[str, float] = {}

    def step(name: str, start: float) -> None:
        timings[name] = round(time.perf_counter() - start, 1)
        print(f"  {name}: {timings[name]} s", flush=True)

    if done < 1:
        start = time.perf_counter()
        table = connection.ops.quote_name(Annotation._meta.db_table)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET submitted_at = timestamptz '2026-03-02 09:00+00'"
                " + id * interval '25 seconds' WHERE submitted_at IS NULL AND status = %s",
                [Annotation.Status.SUBMITTED],
            )
            cursor.execute(f"ANALYZE {table}")
        step("submission times", start)
    if done < 2:
        from screening_scale import populate_screening

        start = time.perf_counter()
        Decision.objects.filter(reason="ambiguous-guideline").update(
            reason=Decision.Reason.AMBIGUOUS_REPORT
        )
        candidates = min(100_000, world["size"]["issues"])
        populate_screening(
            world["ids"]["study"], candidates, candidates // 20, seed=1,
            number=world["ids"]["screening_round_number"],
        )  # fmt: skip
        step(f"screening round of {candidates:,} candidates", start)
    if done < 3:
        from annotator.agreement.services import run_agreement_run, start_agreement_run
        from annotator.studies.models import Study

        start = time.perf_counter()
        study = Study.objects.get(pk=world["ids"]["study"])
        last = study.rounds.order_by("-number").first()
        run = start_agreement_run(study=study, round=last, enqueue=False)
        run_agreement_run(run_id=run.pk)
        step("agreement run (last round)", start)
    if done < 4:
        from annotator.studies.models import Study
        from taxonomy_app.models import LabelRule

        start = time.perf_counter()
        version = Study.objects.get(pk=world["ids"]["study"]).codebook_version
        symptom = version.facets.get(key="symptom")
        LabelRule.objects.create(
            version=version,
            kind=LabelRule.Kind.REQUIRES,
            facet=version.facets.get(key="fix"),
            when_facet=symptom,
            when_categories=list(symptom.categories.values_list("code", flat=True)[:3]),
        )
        step("a rule label sets can break", start)
    return {"topup": TOPUP, "topup_timings": {**world.get("topup_timings", {}), **timings}}


def clear_jobs() -> dict[str, int]:
    """Fail the jobs the generated data left queued or running, before the worker starts (it
    would send the queued ones): the scene queues a near-duplicate pass that no worker ran, and
    a pass over every generated issue would take the worker's core for minutes of the walk. A
    job a page starts during the walk runs. Returns how many jobs of each kind were failed."""
    migrate()
    from django.utils import timezone

    from annotator.jobs import Job, job_models

    active = [Job.Status.QUEUED, Job.Status.RUNNING]
    error = "not run: the page benchmark does not run the jobs its generated data left waiting"
    failed = {
        model.__name__: model.objects.filter(status__in=active).update(
            status=Job.Status.FAILED, error=error, finished_at=timezone.now()
        )
        for model in job_models()
    }
    return {name: n for name, n in failed.items() if n}


def _passwords(scene: Any) -> dict[str, str]:
    from django.contrib.auth.hashers import make_password

    people = {}
    for role in (*ROLES, "peer", "staff"):
        user = scene.users[role]
        type(user).objects.filter(pk=user.pk).update(password=make_password(base.PASSWORD))
        people[role] = user.username
    return people


def _grow(scene: Any, issues: int, items: int, step: Any) -> dict[str, Any]:
    from django.db import connection, transaction

    from annotator.issues.models import Issue, IssueComment, Repository
    from annotator.studies.models import Item, Study

    study = Study.objects.get(pk=scene.ids["study"])
    with transaction.atomic():
        # The rows are made consistent by construction; checking each foreign key of millions
        # of copied rows at COMMIT (Django's constraints are deferred) took longer than the copy.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
        start = time.perf_counter()
        repos = [Repository.objects.get_or_create(owner=o, name=n)[0] for o, n in REPOSITORIES]
        issue_ids = next_ids(Issue, issues)
        copy_rows(Issue, _issues(issue_ids, repos))
        step(f"{issues:,} issues", start)
        start = time.perf_counter()
        with_comments = issue_ids[::10]
        comment_ids = next_ids(IssueComment, 4 * len(with_comments))
        copy_rows(IssueComment, _comments(with_comments, comment_ids))
        step(f"{len(comment_ids):,} comments", start)
        start = time.perf_counter()
        item_issues = issue_ids[:items]
        summary = _study(study, scene, item_issues, repos)
        step(f"{items:,} items with annotations and decisions", start)
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    from annotator.issues.search import index_pending_issues

    index_pending_issues()
    step("search index", start)
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    step("vacuum analyze", start)
    summary.update(_jobs(study, scene, step))
    summary["item_count"] = Item.objects.filter(study=study).count()
    return summary


def _issues(ids: range, repos: list[Any]) -> Iterator[dict[str, Any]]:
    from datetime import UTC, datetime, timedelta

    demo = ROOT / "annotator" / "issues" / "demo_data" / "colossalai_issues.json"
    bodies = [i["body"] or "" for i in json.loads(demo.read_text()) if len(i["body"] or "") > 800]
    bodies = [(b * (1 + 2000 // len(b)))[:2000] for b in bodies]
    rng = random.Random(7)
    first = datetime(2019, 1, 1, tzinfo=UTC)
    numbers = [max([0, *(i.number for i in r.issues.all())]) for r in repos]
    for n, pk in enumerate(ids):
        r = n % len(repos)
        numbers[r] += 1
        words = " ".join(rng.choices(WORDS, k=6))
        created = first + timedelta(minutes=3 * n)
        closed = n % 3 != 0
        yield {
            "id": pk,
            "repository_id": repos[r].pk,
            "number": numbers[r],
            "github_id": 10_000_000 + pk,
            "title": f"[BUG] {words}",
            "body": f"{words}\n\n{bodies[n % len(bodies)]}",
            "state": "closed" if closed else "open",
            "state_reason": "completed" if closed else "",
            "labels": [["bug"], ["bug", "training"], ["question"], []][n % 4],
            "author": f"user{n % 5000}",
            "created_at": created,
            "updated_at": created + timedelta(days=2),
            "closed_at": created + timedelta(days=5) if closed else None,
            "is_pull_request": n % 7 == 0,
            "html_url": f"https://github.com/{repos[r].owner}/{repos[r].name}/issues/{numbers[r]}",
            "comments_count": 4 if n % 10 == 0 else 0,
            "content_hash": f"{pk:064x}",
            "search_vector": None,
        }


def _comments(issues: Iterable[int], ids: range) -> Iterator[dict[str, Any]]:
    demo = ROOT / "annotator" / "issues" / "demo_data" / "colossalai_comments.json"
    notes = [(c["body"] or "")[:600] for c in json.loads(demo.read_text())]
    pk = iter(ids)
    for issue in issues:
        for j in range(4):
            yield {
                "id": next(pk),
                "issue_id": issue,
                "key": f"c{issue}-{j}",
                "github_id": issue * 10 + j,
                "author": f"user{(issue + j) % 5000}",
                "body": notes[(issue + j) % len(notes)],
                "content_hash": f"{issue:060x}{j:04x}",
            }


def _study(study: Any, scene: Any, issue_ids: range, repos: list[Any]) -> dict[str, Any]:
    """Nine more rounds with the items, a third annotator, three annotations per item, the
    decisions and item agreements the rules give, an adjudicated decision on half the rest."""
    from django.contrib.auth import get_user_model

    from annotator.adjudication.models import Decision, DecisionLabel, ItemAgreement
    from annotator.adjudication.services import rules
    from annotator.studies.codebook import codebook_schema
    from annotator.studies.models import (
        Annotation,
        AnnotationLabel,
        Assignment,
        Item,
        Membership,
        Round,
    )
    from annotator.studies.services import add_member

    third = get_user_model().objects.create_user("annotator-c", password=base.PASSWORD)
    add_member(study=study, user=third, role=Membership.Role.ANNOTATOR)
    raters = [scene.users["annotator"].pk, scene.users["peer"].pk, third.pk]
    first = study.rounds.order_by("-number").first().number
    rounds = [
        Round.objects.create(study=study, number=first + n, kind=Round.Kind.MAIN)
        for n in range(1, 10)
    ]
    schema = codebook_schema(study.codebook_version)
    label_sets = [
        {f.id: frozenset(c.id for c in f.categories if c.code in codes.get(f.key, ()))
         for f in schema.facets}
        for codes in base.label_sets(schema, 200)
    ]  # fmt: skip
    facets = [f.id for f in schema.facets]
    rng = random.Random(11)
    n = len(issue_ids)
    item_ids, assignment_ids = next_ids(Item, n), next_ids(Assignment, 3 * n)
    annotation_ids = next_ids(Annotation, 3 * n)
    chosen: list[list[dict[int, frozenset[int]]]] = []
    for _ in range(n):
        truth = rng.choice(label_sets)
        chosen.append([truth if rng.random() < 0.8 else rng.choice(label_sets) for _ in raters])
    copy_rows(Item, (
        {"id": pk, "study_id": study.pk, "round_id": rounds[i % 9].pk, "issue_id": issue_ids[i],
         "position": i, "quota": 3, "active_count": 3, "submitted_count": 3}
        for i, pk in enumerate(item_ids)
    ))  # fmt: skip
    copy_rows(Assignment, (
        {"id": assignment_ids[3 * i + j], "item_id": pk, "annotator_id": raters[j],
         "status": Assignment.Status.SUBMITTED}
        for i, pk in enumerate(item_ids) for j in range(3)
    ))  # fmt: skip
    copy_rows(Annotation, (
        {"id": annotation_ids[3 * i + j], "assignment_id": assignment_ids[3 * i + j],
         "codebook_version_id": study.codebook_version_id, "status": Annotation.Status.SUBMITTED,
         "seconds_spent": 20 + (i * 7 + j) % 200, "submitted_at": None}
        for i in range(n) for j in range(3)
    ))  # fmt: skip
    copy_rows(AnnotationLabel, (
        {"annotation_id": annotation_ids[3 * i + j], "facet_id": f, "category_id": c}
        for i in range(n) for j in range(3) for f, cs in chosen[i][j].items() for c in sorted(cs)
    ))  # fmt: skip
    outcomes = [rules.decide(chosen[i], facets, majority=True) for i in range(n)]
    agreement_ids = next_ids(ItemAgreement, n)
    copy_rows(ItemAgreement, (
        {"id": agreement_ids[i], "item_id": item_ids[i], "value": max(0.0, min(1.0, o.agreement))}
        for i, o in enumerate(outcomes)
    ))  # fmt: skip
    copy_rows(ItemAgreement.disagreeing_facets.through, (
        {"itemagreement_id": agreement_ids[i], "facet_id": f}
        for i, o in enumerate(outcomes) for f in o.disagreeing
    ))  # fmt: skip
    adjudicator = scene.users["adjudicator"].pk
    decided = [
        (i, o.source or "adjudicated", o.labels or chosen[i][0])
        for i, o in enumerate(outcomes)
        if o.source or i % 2 == 0
    ]
    decision_ids = next_ids(Decision, len(decided))
    copy_rows(Decision, (
        {"id": decision_ids[d], "item_id": item_ids[i], "source": source,
         "reason": "" if source != "adjudicated" else "ambiguous-report",
         "decided_by_id": adjudicator if source == "adjudicated" else None}
        for d, (i, source, _) in enumerate(decided)
    ))  # fmt: skip
    copy_rows(DecisionLabel, (
        {"decision_id": decision_ids[d], "facet_id": f, "category_id": c}
        for d, (_, _, labels) in enumerate(decided) for f, cs in labels.items() for c in sorted(cs)
    ))  # fmt: skip
    queue = n - len(decided)
    return {
        "round_ids": [r.pk for r in rounds],
        "repository_ids": [r.pk for r in repos],
        "decided": len(decided),
        "queue": queue,
    }


def _jobs(study: Any, scene: Any, step: Any) -> dict[str, Any]:
    """Agreement runs of the whole study and of its last round, and the final dataset as CSV
    and XLSX, timed."""
    from annotator.agreement.services import run_agreement_run, start_agreement_run
    from annotator.exports.services import run_export_job, start_export_job

    owner = scene.users["owner"]
    start = time.perf_counter()
    run = start_agreement_run(study=study, round=None, user=owner, enqueue=False)
    run_agreement_run(run_id=run.pk)
    step("agreement run (whole study)", start)
    out = {"agreement_run": run.pk}
    # The last round's own run: the per-annotator diagnostics page shows what it stored.
    start = time.perf_counter()
    last = study.rounds.order_by("-number").first()
    run = start_agreement_run(study=study, round=last, user=owner, enqueue=False)
    run_agreement_run(run_id=run.pk)
    step("agreement run (last round)", start)
    for fmt in ("csv", "xlsx"):
        start = time.perf_counter()
        job = start_export_job(study=study, format=fmt, user=owner)
        run_export_job(job_id=job.pk)
        step(f"export {fmt}", start)
        out[f"export_{fmt}"] = job.pk
    return out


# --- the routes (a child process with Django) ----------------------------------------------------
def routes(world: dict[str, Any]) -> list[dict[str, str]]:
    """Every GET route of the matrix with the role that requests it and its URL; the list pages
    once more with each filter people use."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from django.urls import resolve, reverse

    from annotator.adjudication.models import Decision
    from annotator.api_pagination import EstimatedPagination
    from annotator.studies.models import Annotation
    from tests.security.matrix import cases, url_of
    from tests.security.matrix_scene import Scene
    from tests.security.test_permission_matrix import ROUTES, VARIANTS

    scene = Scene(users={}, ids=world["ids"])
    out = []
    for case in cases(ROUTES, VARIANTS):
        if case.spec is None or "GET" not in case.spec.methods or "#" in case.key:
            continue
        role = next((r for r in ROLES if r in case.spec.rule_for("GET").roles), None)
        if role is None or case.name.startswith("admin:") or "<path:" in case.name:
            continue
        try:
            url = url_of(case, scene)
        except Exception as error:  # a route the scene cannot fill: reported, never hidden
            print(f"  skipped {case.key}: {error}", flush=True)
            continue
        out.append({"route": case.key, "role": role, "url": url})
    study, rnd = world["ids"]["study"], world["round_ids"][0]
    facet = world["ids"]["facet"]
    issues = reverse("issues:list")
    queue = reverse("adjudication:queue", args=[study])
    decided = reverse("adjudication:items", args=[study])
    analysis = reverse("exports:analysis", args=[study])
    decisions = reverse("api-decision-list", args=[study])
    annotations = reverse("api-annotation-list", args=[study])
    filters = {
        "issues:list ?q": f"{issues}?q=nccl+timeout",
        "issues:list ?q (rare)": f"{issues}?q=segfault+lora+moe",
        "issues:list ?repository": f"{issues}?repository={world['repository_ids'][1]}",
        "issues:list ?state": f"{issues}?state=open",
        "issues:list ?since&until": f"{issues}?since=2020-01-01&until=2020-06-30",
        "issues:list ?label": f"{issues}?label=training",
        "issues:list ?page=2000": f"{issues}?page=2000",
        "api-issue-list ?q": "/api/issues/?q=deadlock+rank",
        "api-issue-list ?page=500": "/api/issues/?page=500",
        "adjudication:queue ?facet&round": f"{queue}?facet={facet}&round={rnd}",
        "adjudication:queue ?page=50": f"{queue}?page=50",
        "adjudication:items ?page=100": f"{decided}?page=100",
        "exports:analysis ?round": f"{analysis}?round={rnd}",
    }
    # The deep pages again as the `next` link of the page before gives them: read on from its
    # last row.
    size = EstimatedPagination.page_size
    for name, url, rows, page in (
        ("api-decision-list", decisions, Decision.objects.filter(item__study=study), 1000),
        (
            "api-annotation-list",
            annotations,
            Annotation.objects.filter(assignment__item__study=study),
            3000,
        ),
    ):
        filters[f"{name} ?page={page}"] = f"{url}?page={page}"
        keyset = resolve(url).func.view_class.keyset
        in_order = rows.order_by(*keyset).values_list(*keyset)
        if before := list(in_order[(page - 1) * size - 1 : (page - 1) * size]):
            after = ".".join(str(value) for value in before[0])
            filters[f"{name} ?page={page} (next)"] = f"{url}?page={page}&after={after}"
    out += [{"route": k, "role": "owner", "url": v} for k, v in filters.items()]
    return out


def query_counts(world: dict[str, Any], walk: list[dict[str, str]]) -> dict[str, int]:
    """Queries per request of each route, through Django's test client (one request each)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()
    users = get_user_model().objects.in_bulk(field_name="username")
    clients = {}
    for role, name in world["users"].items():
        clients[role] = Client()
        clients[role].force_login(users[name])
    counts = {}
    for entry in walk:
        with CaptureQueriesContext(connection) as queries:
            clients[entry["role"]].get(entry["url"])
        counts[entry["route"]] = len(queries)
    return counts


# --- orchestration -----------------------------------------------------------------------------
def child(env: dict[str, str], code: str, timeout: float = 7200) -> Any:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=timeout,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = out.stdout.strip().splitlines()
    for line in lines[:-1]:
        print(line, flush=True)
    return json.loads(lines[-1])


def walk(port: int, users: dict[str, str], entries: list[dict[str, str]], repeat: int) -> list:
    """Each route `repeat` times, one request at a time; a route whose requests add up past
    ROUTE_BUDGET_S stops early (its figures say how many were sent), and one that does not
    answer within the client's 30 s is recorded as such."""
    browsers = {}
    for role in ROLES:
        browsers[role] = base.Browser(port)
        browsers[role].log_in(users[role])
    rows = []
    for entry in entries:
        browser, times, statuses = browsers[entry["role"]], [], set()
        for _ in range(repeat):
            start = time.perf_counter()
            try:
                status, _, _ = browser.request("GET", entry["url"])
            except OSError:
                status = "timeout"
            times.append(1000 * (time.perf_counter() - start))
            statuses.add(status)
            if sum(times) > 1000 * ROUTE_BUDGET_S:
                break
        ms = sorted(times)
        rows.append({
            **entry,
            "statuses": sorted(statuses, key=str),
            "requests": len(ms),
            "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(ms[max(0, -(-95 * len(ms) // 100) - 1)], 1),
        })  # fmt: skip
        print(f"  {entry['route']}: p95 {rows[-1]['p95_ms']} ms", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=20, help="requests per route")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--port", type=int, default=8767)
    parser.add_argument("--only", default="", help="a regular expression over route names")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the database")
    parser.add_argument("--generate-only", action="store_true", help="make the database, stop")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    data = ROOT / "var" / "bench-pages"
    env = {
        **os.environ, "DATABASE_URL": url, "DJANGO_DEBUG": "0",
        "PYTHONPATH": f"{ROOT}:{ROOT / 'benchmarks'}",
        "DJANGO_SECRET_KEY": "bench-" + "x" * 50, "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ANNOTATOR_DATA_DIR": str(data), "DATABASE_CONN_MAX_AGE": "600", "LOG_LEVEL": "WARNING",
    }  # fmt: skip
    env.pop("REDIS_URL", None)  # jobs of the generation run in-process
    # The production shape (docker-compose.yml): gunicorn keeps sessions and caches in Redis.
    served = {
        **env, "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/1"),
        "CELERY_QUEUE": QUEUE,
    }  # fmt: skip
    name = url.rsplit("/", 1)[-1]  # one description of the generated data per database
    world_file = ROOT / "benchmarks" / "results" / f"page_scale_world.{name}.json"
    world_file.parent.mkdir(parents=True, exist_ok=True)
    size = {"issues": args.issues, "items": args.items, "generator": GENERATOR}
    reuse = args.keep and world_file.exists() and json.loads(world_file.read_text())["size"] == size
    if not reuse:
        print(
            f"Generating {args.issues:,} issues and a study of {args.items:,} items …", flush=True
        )
        recreate_database(url)
        start = time.perf_counter()
        make = f"p.generate({args.issues}, {args.items})"
        world = child(env, f"import page_scale as p, json; print(json.dumps({make}))")
        world["size"], world["generated_s"] = size, round(time.perf_counter() - start, 1)
        world_file.write_text(json.dumps(world))
    else:
        world = json.loads(world_file.read_text())
        print(f"Reusing the database of {args.issues:,} issues ({world_file.name})", flush=True)
        # The code may have moved on since the data was made: its new migrations apply first.
        child(env, "import page_scale as p; p.migrate(); print('{}')")
    if world.get("topup", 0) < TOPUP:
        code = f"w = json.load(open({str(world_file)!r})); done = w.get('topup', 0); "
        code += "print(json.dumps(p.topup(done, w)))"
        world.update(child(env, f"import page_scale as p, json; {code}"))
        world_file.write_text(json.dumps(world))
    if args.generate_only:
        return
    code = f"import page_scale as p, json; w = json.load(open({str(world_file)!r})); "
    entries = child(env, code + "print(json.dumps(p.routes(w)))")
    if args.only:
        entries = [e for e in entries if re.search(args.only, e["route"])]
    # The production shape has a worker beside the server: jobs a page starts run there.
    data.mkdir(parents=True, exist_ok=True)
    cleared = child(served, "import page_scale as p, json; print(json.dumps(p.clear_jobs()))")
    print(f"Jobs left waiting by the generated data, failed: {cleared or 'none'}", flush=True)
    worker = study_load.start_worker(served, data / "worker.log", QUEUE)
    server = base.start_gunicorn(served, args.port, args.workers)
    try:
        rows = walk(args.port, world["users"], entries, args.requests)
    finally:
        server.terminate()
        worker.terminate()
        for process in (server, worker):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a request or job still running
                process.kill()
                process.wait()
    entries_file = world_file.with_name(f"page_scale_entries.{name}.json")
    entries_file.write_text(json.dumps(entries))
    code += f"e = json.load(open({str(entries_file)!r})); "
    counts = child(env, code + "print(json.dumps(p.query_counts(w, e)))")
    for row in rows:
        row["queries"] = counts.get(row["route"])
    report(args, world, rows)
    if not args.keep:
        drop_database(url)


def report(args: argparse.Namespace, world: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    rows.sort(key=lambda r: -r["p95_ms"])
    print(f"\n{'route':58} {'role':11} {'status':9} {'p50 ms':>8} {'p95 ms':>8} {'queries':>7}")
    for r in rows:
        target = TARGET_SEARCH_P95_MS if "?q" in r["route"] else TARGET_P95_MS
        over = " OVER" if r["p95_ms"] > target or (r["queries"] or 0) > TARGET_QUERIES else ""
        status = "/".join(str(s) for s in r["statuses"])
        print(f"{r['route'][:58]:58} {r['role']:11} {status:9} {r['p50_ms']:8.1f} "
              f"{r['p95_ms']:8.1f} {r['queries'] or 0:7}{over}")  # fmt: skip
    RESULTS.write_text(json.dumps({"args": vars(args), "world": world, "routes": rows}, indent=1))
    worst = rows[0]
    print(f"\ngenerated in {world.get('generated_s')} s: {world.get('timings')}")
    print(f"worst p95 {worst['p95_ms']:.0f} ms over {len(rows)} routes ({worst['route']})")


if __name__ == "__main__":
    main()
