"""python manage.py run_machine_rater STUDY --rater NAME [--round N] [--sample K] [--seed S]
[--base-url URL] [--model MODEL]: run a machine rater in this process and print
"labeled N, invalid N, failed N"."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.machine.models import MachineRater
from annotator.machine.services import MachineError, declare_rater, run_machine_run, start_run
from annotator.studies.models import Study


class Command(BaseCommand):
    help = "Label a round of a study with a declared machine rater (any OpenAI-compatible server)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", type=int, help="the study's id")
        parser.add_argument("--rater", required=True, help="the rater's name")
        parser.add_argument("--round", type=int, help="round number (default: the last)")
        parser.add_argument("--sample", type=int, help="a seeded sample of K items (default: all)")
        parser.add_argument("--seed", type=int, help="the sample's seed")
        parser.add_argument("--base-url", default=None, help="declare/redeclare: the server")
        parser.add_argument("--model", default=None, help="declare/redeclare: the model")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        rater = MachineRater.objects.filter(study=study, name=options["rater"]).first()
        try:
            if options["model"] or options["base_url"] is not None:
                rater = declare_rater(
                    study=study,
                    name=options["rater"],
                    model=options["model"] or (rater.model if rater else ""),
                    base_url=options["base_url"] or (rater.base_url if rater else ""),
                    parameters=rater.parameters if rater else None,
                    samples=rater.samples if rater else 1,
                )
            if rater is None:
                raise CommandError(
                    f"study {study.pk} has no machine rater {options['rater']!r}; declare it "
                    "with --model (and --base-url, or LLM_BASE_URL)"
                )
            rounds = study.rounds.order_by("-number")
            round = (
                rounds.filter(number=options["round"]).first()
                if options["round"]
                else rounds.first()
            )
            if round is None:
                raise CommandError(f"study {study.pk} has no round {options['round']}")
            run = start_run(
                rater=rater,
                round=round,
                sample_size=options["sample"],
                seed=options["seed"],
                enqueue=False,
            )
        except MachineError as error:
            raise CommandError(str(error)) from error
        run = run_machine_run(run_id=run.pk)
        counts = run.counts
        line = (
            f"labeled {counts.get('labeled', 0)}, invalid {counts.get('invalid', 0)}, "
            f"failed {counts.get('failed', 0)}"
        )
        if counts.get("skipped"):
            line += f" (answered before: {counts['skipped']})"
        if run.status != run.Status.SUCCEEDED:
            raise CommandError(f"{line}; the run stopped: {run.error}")
        self.stdout.write(line)
