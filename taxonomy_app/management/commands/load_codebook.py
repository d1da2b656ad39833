from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from taxonomy_app.errors import CodebookError
from taxonomy_app.formats import CodebookFormatError
from taxonomy_app.models import Codebook
from taxonomy_app.services import import_codebook, read_codebook, specs_equal

SEED = Path(__file__).resolve().parents[2] / "seed" / "distributed_dl_bugs.yaml"


class Command(BaseCommand):
    help = (
        "Load a codebook from a JSON, YAML or REFI-QDA (.qdc) file (default: the seed "
        "'Distributed deep-learning bugs' codebook). A file whose content equals the codebook's "
        "latest version changes nothing; on bad input it exits non-zero naming the element and "
        "field, and writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", type=Path, default=SEED)
        parser.add_argument("--format", default="auto", choices=["auto", "json", "yaml", "qdc"])
        parser.add_argument(
            "--publish", action="store_true", help="publish the version (default: a draft)"
        )
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="do nothing when a codebook with the file's slug exists (used by seed_demo)",
        )
        parser.add_argument(
            "--new-version",
            action="store_true",
            help="when the codebook exists and differs, add the file as its next version",
        )

    def handle(self, *args: Any, path: Path, format: str, **options: Any) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        data = path.read_bytes()
        try:
            self._load(
                data,
                format,
                name=path.stem,
                publish=options["publish"],
                new=options["new_version"],
                if_missing=options["if_missing"],
            )
        except (CodebookFormatError, CodebookError) as error:
            raise CommandError(f"{path.name}: {error}; nothing was imported") from error

    def _load(
        self, data: bytes, fmt: str, *, name: str, publish: bool, new: bool, if_missing: bool
    ) -> None:
        spec = read_codebook(data, fmt, name=name)  # name: of a .qdc from another tool
        codebook = Codebook.objects.filter(slug=spec.slug).first()
        latest = codebook.versions.first() if codebook else None
        name = codebook.name if codebook else name  # as import_codebook names it
        if codebook and if_missing:
            self.stdout.write(
                f"{codebook}: exists already (latest v{latest.number if latest else 0})"
            )
            return
        if codebook and latest and specs_equal(latest, data, fmt, name=name):
            self.stdout.write(f"{codebook}: unchanged (v{latest.number} {latest.status})")
            return
        if codebook and not new:
            raise CodebookError(
                f"the codebook {spec.slug!r} exists and differs from the file; "
                "pass --new-version to add the file as its next version"
            )
        version = import_codebook(data=data, fmt=fmt, codebook=codebook, publish=publish, name=name)
        self.stdout.write(
            self.style.SUCCESS(f"{version.codebook}: loaded v{version.number} ({version.status})")
        )
