"""python manage.py simulate_screening --issues FILE [--issues FILE …] --labels CSV
    [--model NAME] [--seed S] [--runs R] [--every N] [--prior random|one-each] [--repo OWNER/NAME]
    [--json] [--chart PATH.svg|PATH.png]

Replays known screening labels (annotator/screening/simulate.py) and reports how much work
prioritised screening would have saved. Reads the issue files as `import_issues` does (any of
its formats; an issues file and a comments file may both be given) and writes nothing to the
database. Bad input exits non-zero with one line naming the file, the line or record and the
field.

`--json` prints one object: `model`, `parameters`, `seed`, `runs`, `every`, `prior`,
`n_issues`, `n_relevant`, `n_unlabelled` (issues of the files the CSV does not label, left out),
`inputs_sha256`, the means over runs `wss@95`, `wss@100`, `erf@10`, `atd`, `atd_records`,
`random_wss@95`, `random_wss@100`, `random_erf@10`, `random_atd`, then `recall_curve` and
`random_recall_curve` as lists of [screened, found] pairs for screened = 0 … n_issues (found is
the mean over runs of the relevant issues among the first `screened`), and `per_run`, each run's
values with its seed.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.issues.models import KNOWN_RENAMES

from ...charts import recall_chart, recall_png, recall_svg
from ...corpus import InputError, read_issues, read_labels
from ...ranking import DEFAULT_MODEL, MODELS
from ...simulate import DEFAULT_EVERY, PRIORS, Simulation, simulate

MEANS = ("wss@95", "wss@100", "erf@10", "atd", "atd_records")
CHART_SUFFIXES = (".svg", ".png")


class Command(BaseCommand):
    help = (
        "Simulate prioritised screening on issues with known labels (CSV: repository,number,"
        "relevant) and print WSS@95, WSS@100, ERF@10 and ATD beside random order."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--issues",
            type=Path,
            action="append",
            required=True,
            help="issues (or comments) file in any import format; repeatable",
        )
        parser.add_argument(
            "--labels",
            type=Path,
            required=True,
            help="CSV with header repository,number,relevant (1 or 0)",
        )
        parser.add_argument("--model", default=DEFAULT_MODEL, choices=MODELS)
        parser.add_argument("--seed", type=int, default=0, help="seed of the first run")
        parser.add_argument("--runs", type=int, default=1, help="runs, seeds seed, seed+1, …")
        parser.add_argument(
            "--every", type=int, default=DEFAULT_EVERY, help="retrain after every N decisions"
        )
        parser.add_argument("--prior", default="random", choices=PRIORS)
        parser.add_argument("--repo", default=None, help="OWNER/NAME for records naming none")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--chart", type=Path, help="write the recall curve (.svg or .png)")

    def handle(self, *args: Any, **options: Any) -> None:
        _check_options(options)
        texts, labels, unlabelled = _inputs(options["issues"], options["labels"], options["repo"])
        try:
            result = simulate(
                texts,
                labels,
                model=options["model"],
                seed=options["seed"],
                runs=options["runs"],
                every=options["every"],
                prior=options["prior"],
            )
        except ValueError as error:
            raise CommandError(
                f"{options['labels'].name}: {error}; nothing was simulated"
            ) from None
        if options["chart"]:
            _write_chart(options["chart"], result)
        if options["json"]:
            self.stdout.write(json.dumps(as_json(result, unlabelled)))
        else:
            self.stdout.write(_table(result, unlabelled))


def _check_options(options: dict[str, Any]) -> None:
    for name in ("runs", "every"):
        if options[name] < 1:
            raise CommandError(f"--{name} must be at least 1, got {options[name]}")
    if options["seed"] < 0:
        raise CommandError(f"--seed must be 0 or more, got {options['seed']}")
    chart = options["chart"]
    if chart is not None and chart.suffix.lower() not in CHART_SUFFIXES:
        raise CommandError(f"--chart {chart}: the file name must end in .svg or .png")
    for path in [*options["issues"], options["labels"]]:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")


def _inputs(issues: list[Path], labels: Path, repo: str | None) -> tuple[list[str], list[int], int]:
    limits = {
        "max_bytes": settings.IMPORT_MAX_BYTES,
        "max_depth": settings.IMPORT_MAX_DEPTH,
        "max_records": settings.IMPORT_MAX_RECORDS,
        "max_string": settings.IMPORT_MAX_STRING,
    }
    try:
        with ExitStack() as files:
            sources = [(path.name, files.enter_context(path.open("rb"))) for path in issues]
            corpus = read_issues(
                sources, renames=KNOWN_RENAMES, default_repository=repo, limits=limits
            )
        with labels.open("rb") as stream:
            found = read_labels(stream, corpus, filename=labels.name, renames=KNOWN_RENAMES)
    except InputError as error:
        raise CommandError(f"{error}; nothing was simulated") from None
    texts = [corpus.texts[i] for i in found.indices]
    return texts, found.labels, found.unlabelled


def as_json(result: Simulation, unlabelled: int) -> dict[str, Any]:
    """The object `--json` prints (the module docstring lists its keys)."""
    means = {key: result.mean(key) for key in MEANS}
    baseline = {f"random_{key}": result.mean(f"random_{key}") for key in MEANS[:4]}
    return {
        "model": result.model,
        "parameters": result.parameters(),
        "seed": result.seed,
        "runs": len(result.runs),
        "every": result.every,
        "prior": result.prior,
        "n_issues": result.n_issues,
        "n_relevant": result.n_relevant,
        "n_unlabelled": unlabelled,
        "inputs_sha256": result.inputs_sha256,
        **means,
        **baseline,
        "recall_curve": _pairs(result, baseline=False),
        "random_recall_curve": _pairs(result, baseline=True),
        "per_run": [{"seed": run.seed, **run.summary()} for run in result.runs],
    }


def _pairs(result: Simulation, *, baseline: bool) -> list[list[float]]:
    curve = result.curve(baseline=baseline)
    return [[k, round(float(found), 6)] for k, found in enumerate(curve)]


def _table(result: Simulation, unlabelled: int) -> str:
    rows = [
        ("issues", f"{result.n_issues:,}"),
        ("relevant", f"{result.n_relevant:,}"),
        ("WSS@95", f"{result.mean('wss@95'):.3f}"),
        ("WSS@100", f"{result.mean('wss@100'):.3f}"),
        ("ERF@10", f"{result.mean('erf@10'):.3f}"),
        ("ATD", f"{result.mean('atd'):.3f}"),
        ("random WSS@95", f"{result.mean('random_wss@95'):.3f}"),
    ]
    runs = len(result.runs)
    head = (
        f"{result.model}, seed {result.seed}, {runs} run{'s' if runs > 1 else ''} "
        f"(mean), retrain every {result.every}, prior {result.prior}"
    )
    lines = [head, *(f"  {name:<14} {value:>8}" for name, value in rows)]
    if unlabelled:
        lines.append(f"({unlabelled:,} issues of the files have no label and were left out)")
    return "\n".join(lines)


def _write_chart(path: Path, result: Simulation) -> None:
    runs = len(result.runs)
    mean = "mean of " + (f"{runs} runs" if runs > 1 else "1 run")
    chart = recall_chart(
        [
            (f"prioritised ({result.model})", result.curve().tolist()),
            ("random order", result.curve(baseline=True).tolist()),
        ],
        relevant=result.n_relevant,
        title=f"Recall: {result.n_relevant:,} relevant of {result.n_issues:,} issues ({mean})",
        summary=(
            f"Recall curve of {result.n_issues:,} issues, {result.n_relevant:,} relevant: "
            f"prioritised screening ({result.model}) reaches 95% recall after "
            f"{result.mean('screened_to_95'):,.0f} issues (WSS@95 {result.mean('wss@95'):.3f}), "
            f"random order after {result.mean('random_screened_to_95'):,.0f} "
            f"(WSS@95 {result.mean('random_wss@95'):.3f})."
        ),
    )
    data = recall_png(chart) if path.suffix.lower() == ".png" else recall_svg(chart)
    try:
        path.write_bytes(data)
    except OSError as error:
        raise CommandError(f"--chart {path}: {error.strerror or error}") from None
