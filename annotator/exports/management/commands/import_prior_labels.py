"""`manage.py import_prior_labels STUDY FILE --format labelstudio|doccano|xlsx --mapping FILE`:
prior labels as a new closed round of a study, as the wizard's confirm step and the API's
`prior-labels/import/` make it (the same mapping JSON: `api.PriorMappingInput`; `data_key`
for Label Studio and doccano files). All or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.exports.api import PriorMappingInput, prior_mapping
from annotator.exports.interop import FORMATS
from annotator.exports.prior import PriorImportError, import_prior_labels
from annotator.exports.spreadsheets import SpreadsheetError
from annotator.studies.models import Membership, Study


class Command(BaseCommand):
    help = (
        "Import prior labels (an .xlsx workbook, a Label Studio JSON export or a doccano JSONL "
        "export) as a new closed round of STUDY. Every value must match a category or be "
        "mapped in the mapping's 'values'; on any error nothing is written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", type=int, help="study id")
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=FORMATS, default="xlsx")
        parser.add_argument(
            "--mapping", type=Path, required=True, help="the API's mapping JSON (+ data_key)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.select_related("codebook_version").filter(pk=options["study"])
        target = study.first()
        if target is None:
            raise CommandError(f"field 'study': no study {options['study']}")
        path, format = options["file"], options["format"]
        if not path.is_file():
            raise CommandError(f"field 'file': {path} does not exist")
        try:
            raw = json.loads(options["mapping"].read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CommandError(f"field 'mapping': {options['mapping']}: {error}") from None
        if not isinstance(raw, dict):
            raise CommandError("field 'mapping': expected a JSON object")
        given = PriorMappingInput(data={**raw, "study": target.pk}, context={"format": format})
        if not given.is_valid():
            raise CommandError(f"field 'mapping': {json.dumps(given.errors)}")
        values = given.validated_data
        mapping = prior_mapping(
            values, target.codebook_version, format=format, source_name=path.name
        )
        owner = (
            Membership.objects.filter(study=target, role=Membership.Role.OWNER)
            .select_related("user")
            .order_by("pk")
            .first()
        )
        try:
            result = import_prior_labels(
                path=path,
                mapping=mapping,
                choices=values["values"],
                user=owner.user if owner else None,
                study=target,
                filename=path.name,
            )
        except (SpreadsheetError, PriorImportError) as error:  # LabelFileError too
            raise CommandError(f"{error}; nothing was imported") from None
        record = result.record
        not_labels = ", ".join(f"{k} {n}" for k, n in record.get("not_labels", {}).items())
        self.stdout.write(
            f"round {result.round.number} (closed): items {result.items}, annotations "
            f"{result.annotations}, labels {result.labels}, decisions {result.decisions}, "
            f"left out {result.left_out}, skipped {len(record['skipped'])}"
            + (f" ({not_labels})" if not_labels else "")
        )
