"""`manage.py link_rater STUDY RATER USERNAME`: staff give an imported rater's labels to the
person they belong to, once that person agrees."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.exports.prior import PriorImportError, link_rater
from annotator.studies.models import Study


class Command(BaseCommand):
    help = (
        "Move the labels of a study's imported rater (e.g. s12-rater-ann-b) to an existing "
        "account, which becomes an annotator of the study; the rater leaves it. Run it only "
        "with that person's consent. All or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", type=int, help="study id")
        parser.add_argument("rater", help="the rater's name, as the import listed it")
        parser.add_argument("username", help="the person's account")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"field 'study': no study {options['study']}")
        try:
            moved = link_rater(study=study, rater=options["rater"], username=options["username"])
        except PriorImportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"Linked {options['rater']} to {options['username']} in study {study.pk}: "
            f"{moved} assignments moved."
        )
