"""python manage.py compute_agreement STUDY [--round N] [--json]

Computes agreement in this process (no worker needed) through the same run and service as the
page and the API, and stores it. `--json` prints exactly the stored result.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.studies.models import Round, Study

from ...models import AgreementRun
from ...services import run_agreement_run, start_agreement_run


class Command(BaseCommand):
    help = "Compute inter-rater agreement for a study (or one round) and store it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="study id or exact name")
        parser.add_argument("--round", type=int, help="round number (default: every round)")
        parser.add_argument("--facet", action="append", default=[], help="facet key (repeat)")
        parser.add_argument("--json", action="store_true", help="print the stored result")

    def handle(self, *args: Any, **options: Any) -> None:
        study = _study(options["study"])
        round = _round(study, options["round"]) if options["round"] is not None else None
        run = start_agreement_run(
            study=study,
            round=round,
            facets=options["facet"],
            trigger=AgreementRun.Trigger.COMMAND,
            enqueue=False,
        )
        # A failure is recorded on the run row (and re-raised for Celery's log); say it plainly.
        with contextlib.suppress(Exception):
            run_agreement_run(run_id=run.pk)
        run.refresh_from_db()
        if run.status != AgreementRun.Status.SUCCEEDED:
            raise CommandError(f"agreement run {run.pk} failed: {run.error}")
        if options["json"]:
            self.stdout.write(json.dumps(run.result, indent=2, sort_keys=True))
            return
        self.stdout.write(_summary(run))


def _study(value: str) -> Study:
    found = Study.objects.filter(pk=int(value)) if value.isdigit() else Study.objects.none()
    study = found.first() or Study.objects.filter(name=value).order_by("pk").first()
    if study is None:
        raise CommandError(f"no study with id or name {value!r}")
    if Study.objects.filter(name=value).count() > 1 and not value.isdigit():
        raise CommandError(f"several studies are named {value!r}: give the id")
    return study


def _round(study: Study, number: int) -> Round:
    round = Round.objects.filter(study=study, number=number).first()
    if round is None:
        raise CommandError(f"study {study.pk} has no round {number}")
    return round


def _summary(run: AgreementRun) -> str:
    assert run.result is not None
    lines = [f"agreement run {run.pk} ({run.scope}), stored"]
    for facet in run.result["facets"]:
        head = facet["coefficients"][facet["headline"]]
        value = "undefined" if head["value"] is None else f"{head['value']:.4f}"
        if head["value"] is not None and head["ci"]:
            value += f" (95% CI {head['ci'][0]:.4f} to {head['ci'][1]:.4f})"
        design = facet["design"]
        lines.append(
            f"{facet['key']}: α = {value} · units {design['units']}, "  # noqa: RUF001
            f"pairable {design['pairable_units']}, raters {design['raters']}"
        )
    return "\n".join(lines)
