"""Exports: the dataset of a study streamed into a file, the dataset card, the export job.

`export_dataset` is the one service behind `manage.py export_dataset`, the export page and the
API. It reads inside one transaction (one snapshot: the card's counts match the rows) through
server-side cursors (`rows.py`) and streams into the pure writers (`writers.py`), so memory
stays flat whatever the study's size.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotator.adjudication.models import DecisionLabel
from annotator.jobs import claim_job, finish_job, job_heartbeat, report_progress
from annotator.studies.models import Annotation, AnnotationLabel, Item, Study

from . import interop, writers
from .card_facts import build_card
from .columns import (
    LONG_TABLE_COLUMNS,
    Column,
    annotator_sheet_columns,
    disagreement_columns,
    final_dataset_columns,
)
from .disagreements import disagreement_items, disagreement_rows
from .huggingface import LICENSES
from .models import PACKAGES, ExportJob
from .package import Package, assign_pseudonyms, write_package
from .rows import (
    CHUNK,
    Codebook,
    ExportFilterError,
    annotator_rows,
    annotators_of,
    filtered_items,
    final_rows,
    load_codebook,
    long_rows,
    with_bodies,
)

__all__ = [
    "ExportFilterError",
    "ExportResult",
    "export_dataset",
    "run_export_job",
    "start_export_job",
]

logger = logging.getLogger(__name__)
Format = ExportJob.Format
Table = ExportJob.Table
Scope = ExportJob.Scope
DEFAULT_LICENSE = "cc-by-4.0"
LICENSE_IDS = [license for license, _ in LICENSES]
TEXT_WRITERS: dict[str, Callable[..., int]] = {
    "csv": writers.write_csv,
    "json": writers.write_json,
    "jsonl": writers.write_jsonl,
    "parquet": writers.write_parquet,
}


@dataclass(frozen=True)
class ExportResult:
    rows: int
    card: str


def export_dataset(
    *,
    study: Study,
    format: str,
    out: IO[bytes],
    table: str = Table.FINAL,
    filters: dict[str, Any] | None = None,
    scope: str = Scope.ALL,
    on_progress: Callable[[int], None] | None = None,
    pseudonymise: bool = False,
    license: str = DEFAULT_LICENSE,
) -> ExportResult:
    """Write the study's final dataset or long table (XLSX: a sheet per annotator plus `Final`)
    to `out` in `format`; return the rows written and the dataset card (Markdown).

    Formats `huggingface` and `replication` write a zip (`package.py`): the Hugging Face folder
    (both tables as Parquet, the card with its YAML header under `license`), or the replication
    package around it; `pseudonymise` (those two only) writes people as the study's codes.

    Columns: see `annotator.exports.writers`. Filters: `round` (number), `source` (decision
    source), `screening` (screening category code of the decision), `repository` (owner/name).
    Scope: `all` writes every item passing the filters (an undecided one with empty labels),
    `decided` only the items with a decision. Raises ExportFilterError for a bad filter,
    ValueError for an unknown format, table or scope.
    """
    _check_choices(format=format, table=table, scope=scope)
    _check_package_options(format=format, pseudonymise=pseudonymise, license=license)
    with transaction.atomic():
        passing = filtered_items(study, dict(filters or {}))
        items = scoped_items(passing, scope)
        book = load_codebook(study.codebook_version)
        progress = _Progress(on_progress)
        if format in PACKAGES:
            people = assign_pseudonyms(study=study, items=items) if pseudonymise else None
            package = Package(
                study=study,
                items=items,
                passing=passing.count(),
                book=book,
                filters=dict(filters or {}),
                scope=scope,
                license=license,
                people=people,
                count=progress.count,
            )
            card = write_package(package, out, replication=format == Format.REPLICATION)
            return ExportResult(rows=progress.rows, card=card)
        if format == Format.XLSX:
            tables = _write_xlsx(study, items, book, out, progress)
        elif format == Format.LABELSTUDIO:
            tables = _write_labelstudio(study, items, book, out, progress)
        else:
            columns, rows = _table(study, items, book, table)
            TEXT_WRITERS[format](progress.count(rows), columns, out)
            tables = {table: columns}
        card = build_card(
            study=study,
            items=items,
            book=book,
            tables=tables,
            filters=filters,
            scope=scope,
            passing=passing.count(),
        )
    return ExportResult(rows=progress.rows, card=card)


def _check_choices(*, format: str, table: str, scope: str) -> None:
    for name, value, choices in (
        ("format", format, Format.values),
        ("table", table, Table.values),
        ("scope", scope, Scope.values),
    ):
        if value not in choices:
            raise ValueError(f"unknown {name} {value!r}; use one of {', '.join(choices)}")


def _check_package_options(*, format: str, pseudonymise: bool, license: str) -> None:
    if pseudonymise and format not in PACKAGES:
        raise ValueError(
            "pseudonymise: only the Hugging Face folder and the replication package are "
            f"pseudonymised, not {format!r}"
        )
    if license not in LICENSE_IDS:
        raise ValueError(f"unknown license {license!r}; use one of {', '.join(LICENSE_IDS)}")


def scoped_items(items: QuerySet[Item], scope: str) -> QuerySet[Item]:
    """The items an export of `scope` writes: all of them, or those with a decision."""
    return items.filter(decision__isnull=False) if scope == Scope.DECIDED else items


def _table(
    study: Study, items: QuerySet[Item], book: Codebook, table: str
) -> tuple[list[Column], Iterator[dict[str, Any]]]:
    if table == Table.LONG:
        return list(LONG_TABLE_COLUMNS), long_rows(items, book)
    if table == Table.DISAGREEMENTS:
        return _disagreements(study, items, book)
    return final_dataset_columns(book.facets), final_rows(items, book)


def _disagreements(
    study: Study, items: QuerySet[Item], book: Codebook
) -> tuple[list[Column], Iterator[dict[str, Any]]]:
    disputed = disagreement_items(items, study)
    annotators = annotators_of(disputed)
    columns = disagreement_columns(book.facets, [name for _, name in annotators])
    return columns, disagreement_rows(disputed, book, dict(annotators))


def _write_xlsx(
    study: Study, items: QuerySet[Item], book: Codebook, out: IO[bytes], progress: _Progress
) -> dict[str, list[Column]]:
    sheet_columns = annotator_sheet_columns(book.facets)
    final_columns = final_dataset_columns(book.facets)
    sheets = [
        writers.XlsxSheet(name, sheet_columns, progress.count(annotator_rows(items, book, pk)))
        for pk, name in annotators_of(items)
    ]
    final = progress.count(final_rows(items, book))
    sheets.append(writers.XlsxSheet("Final", final_columns, final))
    disputed_columns, disputed = _disagreements(study, items, book)
    sheets.append(writers.XlsxSheet("Disagreements", disputed_columns, progress.count(disputed)))
    writers.write_xlsx(sheets, out)
    return {
        "annotator sheets": sheet_columns,
        "Final": final_columns,
        "Disagreements": disputed_columns,
    }


def _write_labelstudio(
    study: Study, items: QuerySet[Item], book: Codebook, out: IO[bytes], progress: _Progress
) -> dict[str, list[Column]]:
    """The items as Label Studio tasks (`interop.labelstudio_task`): the final rows with each
    issue's body, the final labels as one prediction per task whose model_version names the
    study and the export."""
    model_version = f"annotator study {study.pk} ({study.name}) final labels, {_stamp()}"
    facets = [(f.key, f.kind, f.levels) for f in book.facets]
    rows = with_bodies(final_rows(items, book), items)
    interop.write_labelstudio(progress.count(rows), facets, out, model_version=model_version)
    return {"final": final_dataset_columns(book.facets)}


def _stamp() -> str:
    return timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")


class _Progress:
    """Counts rows as the writer pulls them and reports every CHUNK rows."""

    def __init__(self, report: Callable[[int], None] | None) -> None:
        self.report, self.rows = report, 0

    def count(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            self.rows += 1
            if self.report and self.rows % CHUNK == 0:
                self.report(self.rows)
            yield row


def total_rows(
    *, study: Study, table: str, format: str, filters: dict[str, Any], scope: str = Scope.ALL
) -> int:
    """How many rows the export will write (the progress bar's 100%)."""
    items = scoped_items(filtered_items(study, filters), scope)
    submitted = Annotation.Status.SUBMITTED
    if format == Format.XLSX:
        annotations = Annotation.objects.filter(assignment__item__in=items.values("pk"))
        disputed = disagreement_items(items, study).count()
        return items.count() + annotations.filter(status=submitted).count() + disputed
    if format in PACKAGES:  # both tables, as Parquet (and as CSV in the package)
        tables = items.count() + _long_count(items)
        return tables * (2 if format == Format.REPLICATION else 1)
    if format == Format.LABELSTUDIO or table == Table.FINAL:
        return items.count()
    if table == Table.DISAGREEMENTS:
        return disagreement_items(items, study).count()
    if table == Table.LONG:
        return _long_count(items)
    return items.count()


def _long_count(items: QuerySet[Item]) -> int:
    labels = AnnotationLabel.objects.filter(
        annotation__status=Annotation.Status.SUBMITTED,
        annotation__assignment__item__in=items.values("pk"),
    ).count()
    return labels + DecisionLabel.objects.filter(decision__item__in=items.values("pk")).count()


# --- the export job -----------------------------------------------------------------------------
def start_export_job(
    *,
    study: Study,
    format: str = Format.CSV,
    table: str = Table.FINAL,
    filters: dict[str, Any] | None = None,
    scope: str = Scope.ALL,
    user: Any = None,
    pseudonymise: bool = False,
    license: str = DEFAULT_LICENSE,
) -> ExportJob:
    """Check the request, create a queued ExportJob and queue it once the transaction commits."""
    from annotator.dispatch import enqueue_job

    _check_choices(format=format, table=table, scope=scope)
    _check_package_options(format=format, pseudonymise=pseudonymise, license=license)
    clean = {k: v for k, v in (filters or {}).items() if v not in (None, "")}
    filtered_items(study, clean)  # raises ExportFilterError now rather than in the job
    job = ExportJob.objects.create(
        study=study,
        format=format,
        table=table,
        scope=scope,
        filters=clean,
        pseudonymise=pseudonymise,
        license=license,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    enqueue_job(job)
    return job


def run_export_job(*, job_id: int) -> None:
    """The job: write the export to a partial file, then store it and mark the job succeeded.

    Until then the job has no file, so a failed or killed export offers nothing to download.
    The partial file is removed whatever happens; one a killed worker left is removed by the
    next export on that machine or by the sweep (`remove_export_leftovers`).
    """
    job = ExportJob.objects.select_related("study__codebook_version__codebook").get(pk=job_id)
    if not claim_job(ExportJob, job.pk):
        return  # finished, or another worker holds it (a redelivered task)
    _remove_stray_partials()
    path = partial_path(job)
    with job_heartbeat(ExportJob, job.pk):
        try:
            _write_and_store(job, path)
        except Exception as error:
            logger.exception("export job %s failed", job.pk)
            _fail(job.pk, f"{type(error).__name__}: {error}")
            raise
        finally:
            path.unlink(missing_ok=True)


def _write_and_store(job: ExportJob, path: Path) -> None:
    total = total_rows(
        study=job.study,
        table=job.table,
        format=job.format,
        filters=job.filters,
        scope=job.scope,
    )
    report_progress(ExportJob, job.pk, total_rows=total)
    with path.open("wb") as out:
        result = export_dataset(
            study=job.study,
            format=job.format,
            out=out,
            table=job.table,
            filters=job.filters,
            scope=job.scope,
            on_progress=lambda n: report_progress(ExportJob, job.pk, rows_written=n),
            pseudonymise=job.pseudonymise,
            license=job.license,
        )
    with path.open("rb") as written:
        name = default_storage.save(f"exports/{job.filename}", File(written))
    stored = finish_job(
        ExportJob,
        job.pk,
        status=ExportJob.Status.SUCCEEDED,
        file=name,
        card=result.card,
        rows_written=result.rows,
        total_rows=max(total, result.rows),
        size_bytes=path.stat().st_size,
    )
    if not stored:  # the sweep failed it as lost meanwhile: offer nothing
        default_storage.delete(name)


# --- what killed exports leave behind -----------------------------------------------------------
def partial_directory() -> Path:
    """Where exports being written live on this machine: one folder per database, so that
    deployments (or test runs) sharing a machine judge only their own jobs' files."""
    database = re.sub(r"[^A-Za-z0-9_.-]", "_", str(connection.settings_dict["NAME"]))[-80:]
    directory = Path(tempfile.gettempdir()) / "annotator-exports" / database
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def partial_path(job: ExportJob) -> Path:
    return partial_directory() / f"job-{job.pk}.{job.format}.part"


def remove_export_leftovers(*, now: datetime | None = None) -> int:
    """Remove what killed exports left: partial files on this machine of jobs no longer
    running, and a stored file of a job failed in the last day (killed while storing it).
    Returns how many files were removed."""
    removed = _remove_stray_partials()
    since = (now or timezone.now()) - timedelta(days=1)
    for job in ExportJob.objects.filter(status=ExportJob.Status.FAILED, finished_at__gte=since):
        name = f"exports/{job.filename}"
        if default_storage.exists(name):
            default_storage.delete(name)
            removed += 1
    return removed


def _remove_stray_partials() -> int:
    # Listed before the running jobs are read: a job claimed after the listing has no file in it.
    partials = list(partial_directory().glob("job-*.part"))
    running = set(
        ExportJob.objects.filter(status=ExportJob.Status.RUNNING).values_list("pk", flat=True)
    )
    stray = [path for path in partials if _job_of(path) not in running]
    for path in stray:
        path.unlink(missing_ok=True)
    return len(stray)


def _job_of(partial: Path) -> int | None:
    found = re.match(r"job-(\d+)\.", partial.name)
    return int(found[1]) if found else None


def _fail(job_id: int, error: str) -> None:
    finish_job(ExportJob, job_id, status=ExportJob.Status.FAILED, error=error, file="")
