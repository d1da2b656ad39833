from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.issues.formats import FORMATS, ImportFormatError
from annotator.issues.services import import_issues


class Command(BaseCommand):
    help = (
        "Import GitHub issues or comments from a file (REST JSON, JSON Lines, gh --json, CSV). "
        "Prints 'created N, updated N, unchanged N, skipped N'; on bad input writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])
        parser.add_argument("--repo", default=None, help="OWNER/NAME for records that name none")

    def handle(self, *args: Any, path: Path, format: str, repo: str | None, **options: Any) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            with path.open("rb") as stream:
                counts = import_issues(
                    stream=stream, format=format, filename=path.name, repository=repo
                )
        except ImportFormatError as error:
            raise CommandError(f"{path.name}: {error}; nothing was imported") from error
        for reason in counts.skipped_reasons:
            self.stderr.write(f"skipped {reason}")
        self.stdout.write(str(counts))
