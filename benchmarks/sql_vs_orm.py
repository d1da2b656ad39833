"""Each hand-written statement of the labeling loop beside the ORM query it replaces.

    .venv/bin/python benchmarks/sql_vs_orm.py [--calls 2000] [--items 2000]

Creates `annotator_bench_sql` (dropped at the end), migrates, builds a k = 2 study on the seed
codebook with `--items` items and two annotators a few items in, then calls each read of
annotator/studies/sql.py and annotator/adjudication/sql.py and its ORM twin (the functions the
twin tests compare, tests/studies/test_sql.py and tests/adjudication/test_sql.py) `--calls`
times each, alternating, inside one transaction, and prints the median microseconds per call
and the difference. It says which statements the ORM could take back: a statement stays
hand-written where the ORM costs more than `--keep-above` µs a call more (default 100 µs, ~0.5%
of the ~22 ms of CPU one label loop costs the app and PostgreSQL; the loop runs each statement
at most once or twice). Writes `benchmarks/results/sql_vs_orm.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://root@127.0.0.1:5432/annotator_bench_sql")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--keep-above", type=float, default=100.0)
    args = parser.parse_args()
    from bench_db import drop_database, recreate_database

    recreate_database(URL)
    try:
        results = run(args)
    finally:
        drop_database(URL)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "sql_vs_orm.json").write_text(json.dumps(results, indent=2))


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    os.environ["DATABASE_URL"] = URL
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    call_command("migrate", verbosity=0)
    with transaction.atomic():
        pairs = build(args.items)
        rows = [measure(name, ours, orm, args.calls) for name, ours, orm in pairs]
        transaction.set_rollback(True)
    print(f"{'statement':32} {'sql µs':>8} {'orm µs':>8} {'orm - sql':>10}  verdict")
    for row in rows:
        row["verdict"] = "keep SQL" if row["orm_minus_sql_us"] > args.keep_above else "ORM will do"
        print(
            f"{row['statement']:32} {row['sql_us']:8.0f} {row['orm_us']:8.0f}"
            f" {row['orm_minus_sql_us']:10.0f}  {row['verdict']}"
        )
    return rows


Pair = tuple[str, Callable[[], Any], Callable[[], Any]]


def build(items: int) -> list[Pair]:
    import io

    from django.core.management import call_command

    from annotator.adjudication import sql as adjudication_sql
    from annotator.studies import sql
    from annotator.studies.services import next_assignment, save_draft, submit_annotation
    from taxonomy_app.models import CodebookVersion
    from tests.adjudication import test_sql as adjudication_twins
    from tests.factories import IssueCommentFactory
    from tests.studies import test_sql as twins
    from tests.studies.factories import make_world

    call_command("load_codebook", publish=True, stdout=io.StringIO())
    version = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")
    world = make_world(items=items, version=version)
    a, b = world.annotators
    labels = world.labels(screening="relevant")
    for user in (a, b):
        for _ in range(3):
            done = next_assignment(study=world.study, annotator=user)
            submit_annotation(assignment=done, user=user, labels=labels)
    assignment = next_assignment(study=world.study, annotator=a)
    annotation = save_draft(assignment=assignment, user=a, labels=labels)
    for _ in range(4):
        IssueCommentFactory(issue=assignment.item.issue)
    complete = done.item_id
    s, u, r, p = world.study.pk, a.pk, world.round.pk, assignment.pk
    return [
        (
            "own_assignment (page)",
            lambda: sql.own_assignment(p, u, page=True),
            lambda: twins.orm_own_assignment(p, u, page=True),
        ),
        (
            "own_assignment (write)",
            lambda: sql.own_assignment(p, u, page=False),
            lambda: twins.orm_own_assignment(p, u, page=False),
        ),
        (
            "issue_comments",
            lambda: sql.issue_comments(assignment.item.issue_id),
            lambda: twins.orm_issue_comments(assignment.item.issue_id),
        ),
        (
            "annotation_labels",
            lambda: sql.annotation_labels(annotation.pk),
            lambda: twins.orm_annotation_labels(annotation.pk),
        ),
        (
            "annotator_round_counts",
            lambda: sql.annotator_round_counts(r, u),
            lambda: twins.orm_annotator_round_counts(r, u),
        ),
        (
            "lock_annotator",
            lambda: sql.lock_annotator(s, u),
            lambda: twins.orm_lock_annotator(s, u),
        ),
        (
            "open_assignment",
            lambda: sql.open_assignment(s, u),
            lambda: twins.orm_open_assignment(s, u),
        ),
        ("free_item", lambda: sql.free_item(s, b.pk), lambda: twins.orm_free_item(s, b.pk)),
        (
            "lock_assignment_row",
            lambda: sql.lock_assignment_row(p),
            lambda: twins.orm_lock_assignment_row(p),
        ),
        (
            "lock_item",
            lambda: adjudication_sql.lock_item(complete),
            lambda: adjudication_twins.orm_lock_item(complete),
        ),
        (
            "submitted_label_sets",
            lambda: adjudication_sql.submitted_label_sets(complete),
            lambda: adjudication_twins.orm_submitted_label_sets(complete),
        ),
    ]


def measure(
    name: str, ours: Callable[[], Any], orm: Callable[[], Any], calls: int
) -> dict[str, Any]:
    assert ours() == orm(), name  # the twin tests compare them field by field
    sql_times, orm_times = [], []
    for _ in range(calls):
        sql_times.append(_time(ours))
        orm_times.append(_time(orm))
    sql_us, orm_us = statistics.median(sql_times) * 1e6, statistics.median(orm_times) * 1e6
    return {
        "statement": name,
        "sql_us": sql_us,
        "orm_us": orm_us,
        "orm_minus_sql_us": orm_us - sql_us,
    }


def _time(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
