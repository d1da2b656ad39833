"""python manage.py restore_study FILE [--name NAME] [--owner USERNAME]
[--prefer-existing-issues] [--check]

Restores a study from a backup archive, all or nothing: a corrupt, truncated, tampered,
newer-format or foreign file is refused with a message naming the member, line and field, exits
non-zero and writes nothing. `--check` only checks the archive and prints what it holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...errors import REFUSALS
from ...restore import RestoreOptions, open_archive, restore_study


class Command(BaseCommand):
    help = "Restore a study from a backup archive made by dump_study (or the study page)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the backup archive (.zip)")
        parser.add_argument("--name", default="", help="name of the restored study")
        parser.add_argument("--owner", default="", help="username to make an owner of it")
        parser.add_argument(
            "--prefer-existing-issues",
            action="store_true",
            help="keep this server's copy of issues and comments that changed since the backup",
        )
        parser.add_argument("--check", action="store_true", help="check it, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            if options["check"]:
                self.stdout.write(_contents(path))
                return
            result = restore_study(path, options=_options(options))
        except REFUSALS as error:
            raise CommandError(f"{path.name}: {error}; nothing was written") from None
        self.stdout.write(result.summary())


def _options(options: dict[str, Any]) -> RestoreOptions:
    owner = None
    if options["owner"]:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"--owner: no user {options['owner']!r}")
    return RestoreOptions(
        name=options["name"],
        owner=owner,
        prefer_existing_issues=options["prefer_existing_issues"],
    )


def _contents(path: Path) -> str:
    with open_archive(path) as reader:
        manifest = reader.manifest
        lines = [
            f"{path.name}: intact backup (format {manifest.format_version}) of study "
            f"{manifest.study.get('name')!r}, made {manifest.created_at} by annotator "
            f"{manifest.app_version}"
        ]
        lines += [f"  {t.table}: {t.rows} rows" for t in manifest.tables]
        return "\n".join(lines)
