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

from .huggingface import LICENSES

PACKAGES = ("huggingface", "replication")  # formats written as a zip of several files


class ExportJob(Job):
    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSON = "json", "JSON"
        JSONL = "jsonl", "JSON Lines"
        PARQUET = "parquet", "Parquet"
        XLSX = "xlsx", "XLSX (a sheet per annotator plus Final)"
        LABELSTUDIO = "labelstudio", "Label Studio tasks (JSON; the final labels as predictions)"
        HUGGINGFACE = "huggingface", "Hugging Face dataset folder (zip)"
        REPLICATION = "replication", "Replication package (zip)"

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
    # The Hugging Face folder and the replication package only (package.py): people as study
    # codes (Pseudonym), the mapping never in the file.
    pseudonymise = models.BooleanField(default=False)
    license = models.CharField(
        max_length=32,
        choices=LICENSES,
        default="cc-by-4.0",
        help_text="the labels' licence in the dataset card (Hugging Face folder, package)",
    )

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
        if self.format in PACKAGES:
            plain = "-pseudonymised" if self.pseudonymise else ""
            return f"study-{self.study_id}-{self.format}{plain}-export-{self.pk}.zip"
        table = "" if self.format == self.Format.XLSX else f"-{self.table}"
        return f"study-{self.study_id}{table}-export-{self.pk}.{self.format}"


class Pseudonym(models.Model):
    """A person's stable code in a study's pseudonymised exports: an annotator as `A01`, a
    GitHub user (issue or comment author, someone @mentioned) as `U0001`. Given at the first
    pseudonymised export that names them and kept, so every later export uses the same code.
    The mapping stays on the server: the owner reads it on the study's pseudonyms page; no
    export file holds it."""

    class Kind(models.TextChoices):
        ANNOTATOR = "annotator", "study member or annotator"
        GITHUB = "github", "GitHub user"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pseudonyms")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # annotator: the account's id (a renamed account keeps its code); GitHub: the login,
    # lower-cased (GitHub compares logins so).
    key = models.CharField(max_length=200)
    name = models.CharField(max_length=200, help_text="the user name or login when coded")
    code = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "code"]
        constraints = [
            models.UniqueConstraint(fields=["study", "kind", "key"], name="pseudonym_once"),
            models.UniqueConstraint(fields=["study", "code"], name="pseudonym_code_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.code} in study {self.study_id}"
