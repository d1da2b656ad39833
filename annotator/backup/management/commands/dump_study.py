"""python manage.py dump_study STUDY --out FILE

Writes the study's backup archive in this process (no worker needed) through the same service
as the page's "Download backup". FILE appears only once complete (written under a temporary
name beside it, then renamed), so a stopped dump never leaves a half archive under its name.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.studies.models import Study

from ...dump import dump_study


class Command(BaseCommand):
    help = "Write a study's complete backup archive (zip of JSON Lines with a manifest)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="study id or exact name")
        parser.add_argument("--out", required=True, help="the archive to write (.zip)")

    def handle(self, *args: Any, **options: Any) -> None:
        study = find_study(options["study"])
        out = Path(options["out"])
        if not out.parent.is_dir():
            raise CommandError(f"--out: the folder {out.parent} does not exist")
        handle, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent)
        try:
            with open(handle, "wb") as stream:
                manifest = dump_study(study=study, target=stream)
            os.replace(name, out)
        finally:
            Path(name).unlink(missing_ok=True)
        rows = sum(t["rows"] for t in manifest["tables"])
        self.stdout.write(
            f"wrote {out}: study {study.name!r}, {rows} rows in {len(manifest['tables'])} "
            f"tables, {out.stat().st_size} bytes"
        )


def find_study(value: str) -> Study:
    found = Study.objects.filter(pk=int(value)) if value.isdigit() else Study.objects.none()
    study = found.first() or Study.objects.filter(name=value).order_by("pk").first()
    if study is None:
        raise CommandError(f"no study with id or name {value!r}")
    if not value.isdigit() and Study.objects.filter(name=value).count() > 1:
        raise CommandError(f"several studies are named {value!r}: give the id")
    return study
