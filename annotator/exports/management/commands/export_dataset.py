"""`manage.py export_dataset STUDY --format csv|json|jsonl|parquet|xlsx|labelstudio|huggingface|
replication --out PATH [--pseudonymise] [--license ID]`."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.exports.huggingface import LICENSES
from annotator.exports.models import PACKAGES, ExportJob
from annotator.exports.rows import ExportFilterError
from annotator.exports.services import export_dataset
from annotator.studies.models import Study


class Command(BaseCommand):
    help = (
        "Export a study's final dataset (or long table) to a file, and its dataset card beside "
        "it as PATH.md. Writes to a temporary name and renames at the end: a failed export "
        "leaves no file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="study id or exact name")
        parser.add_argument("--format", required=True, choices=ExportJob.Format.values)
        parser.add_argument("--out", required=True, help="file to write")
        parser.add_argument("--table", default="final", choices=ExportJob.Table.values)
        parser.add_argument(
            "--decided-only",
            action="store_true",
            help="only items with a decision (otherwise undecided items have empty labels)",
        )
        parser.add_argument("--round", type=int, help="only items of this round number")
        parser.add_argument("--source", help="only items decided this way (imported, …)")
        parser.add_argument("--screening", help="only items whose screening decision is CODE")
        parser.add_argument("--repository", help="only issues of OWNER/NAME")
        parser.add_argument("--no-card", action="store_true", help="do not write PATH.md")
        parser.add_argument(
            "--pseudonymise",
            action="store_true",
            help="huggingface and replication: people as the study's codes (A01, U0001)",
        )
        parser.add_argument(
            "--license",
            default="cc-by-4.0",
            choices=[license for license, _ in LICENSES],
            help="the labels' licence in the dataset card (huggingface, replication)",
        )
        parser.add_argument(
            "--unpack",
            action="store_true",
            help="huggingface and replication: write the folder at PATH (new or empty) instead "
            "of a zip; load_dataset(PATH) reads a Hugging Face folder",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        study = _study(options["study"])
        filters = {k: options[k] for k in ("round", "source", "screening", "repository")}
        out = Path(options["out"])
        if options["unpack"]:
            _check_unpack(options["format"], out)
        partial = out.with_name(f".{out.name}.partial")
        result = None
        try:
            with partial.open("wb") as stream:
                result = export_dataset(
                    study=study,
                    format=options["format"],
                    out=stream,
                    table=options["table"],
                    scope=ExportJob.Scope.DECIDED if options["decided_only"] else "all",
                    filters={k: v for k, v in filters.items() if v is not None},
                    pseudonymise=options["pseudonymise"],
                    license=options["license"],
                )
        except (ExportFilterError, ValueError) as error:
            raise CommandError(str(error)) from None
        finally:
            if result is None and partial.exists():
                partial.unlink()
        if options["unpack"]:
            _unpack(partial, out)
            self.stdout.write(f"wrote {result.rows} rows to the folder {out}")
            return
        os.replace(partial, out)
        if not options["no_card"]:
            out.with_name(out.name + ".md").write_text(result.card)
        self.stdout.write(f"wrote {result.rows} rows to {out}")


def _study(value: str) -> Study:
    found = Study.objects.filter(pk=int(value)) if value.isdigit() else Study.objects.none()
    study = found.first() or Study.objects.filter(name=value).first()
    if study is None:
        raise CommandError(f"no study {value!r} (give its id or exact name)")
    return study


def _check_unpack(format: str, out: Path) -> None:
    if format not in PACKAGES:
        raise CommandError(
            f"--unpack: {format!r} is one file; only {' and '.join(PACKAGES)} are folders"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CommandError(f"--unpack: {out} exists and is not an empty folder")


def _unpack(archive: Path, out: Path) -> None:
    """The zip's one top folder's contents into `out`; the zip removed."""
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp, zipfile.ZipFile(archive) as files:
        files.extractall(tmp)
        (top,) = list(Path(tmp).iterdir())
        out.mkdir(parents=True, exist_ok=True)
        for path in top.iterdir():
            shutil.move(str(path), out / path.name)
    archive.unlink()
