"""Export jobs: one streamed file of a study's dataset, written by a Celery job.

The pure cores of this app (writers.py, columns.py, card.py, spreadsheets.py, matching.py)
import no Django; this module and services.py are the Django side around them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.urls import reverse

from annotator.issues.filter_text import filters_in_words
from annotator.jobs import Job
from annotator.studies.models import Study


class ExportJob(Job):
    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSON = "json", "JSON"
        JSONL = "jsonl", "JSON Lines"
        PARQUET = "parquet", "Parquet"
        XLSX = "xlsx", "XLSX (a sheet per annotator plus Final)"
        LABELSTUDIO = "labelstudio", "Label Studio tasks (JSON; the final labels as predictions)"

    class Table(models.TextChoices):
        FINAL = "final", "final dataset (one row per issue)"
        LONG = "long", "long table (one row per label given)"
        DISAGREEMENTS = "disagreements", "disagreements (one row per item that needed a person)"

    class Scope(models.TextChoices):
        ALL = "all", "every item passing the filters (undecided ones with empty labels)"
        DECIDED = "decided", "decided items only"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    format = models.CharField(max_length=16, choices=Format.choices, default=Format.CSV)
    table = models.CharField(
        max_length=16,
        choices=Table.choices,
        default=Table.FINAL,
        help_text="ignored for XLSX, which holds every annotator's sheet, Final and Disagreements",
    )
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.ALL)
    # {"round": n, "source": "...", "screening": "code", "repository": "owner/name"}
    filters = models.JSONField(default=dict, blank=True)
    total_rows = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    # Set only when the job succeeded: a failed export never offers a file (services.py
    # writes to a temporary name and moves it into place at the end).
    file = models.FileField(upload_to="exports/%Y/%m/", blank=True, max_length=300)
    size_bytes = models.BigIntegerField(default=0)
    card = models.TextField(blank=True, help_text="the dataset card (Markdown)")

    task_name = "annotator.exports.tasks.export_dataset_task"

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(
                condition=Q(file="") | Q(status=Job.Status.SUCCEEDED),
                name="export_file_only_when_succeeded",
            )
        ]

    def __str__(self) -> str:
        return f"export {self.pk} of study {self.study_id} ({self.format}, {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("exports:job", args=[self.pk])

    @classmethod
    def remove_leftovers(cls) -> int:
        """Partial files of killed exports and files stored by exports failed meanwhile."""
        from .services import remove_export_leftovers

        return remove_export_leftovers()

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.total_rows:
            return 0
        return min(99, int(100 * self.rows_written / self.total_rows))

    @property
    def filters_text(self) -> str:
        """The filters for people (`round = 1, repository = hpcaitech/ColossalAI`)."""
        return filters_in_words(self.filters, quote=False, separator=", ")

    @property
    def filename(self) -> str:
        if self.format == self.Format.LABELSTUDIO:  # Label Studio imports a .json file
            return f"study-{self.study_id}-labelstudio-export-{self.pk}.json"
        table = "" if self.format == self.Format.XLSX else f"-{self.table}"
        return f"study-{self.study_id}{table}-export-{self.pk}.{self.format}"
