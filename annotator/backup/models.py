"""Backup jobs: dumping a study into an archive, or restoring one, as a background job."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.urls import reverse

from annotator.jobs import Job
from annotator.studies.models import Study


class BackupJob(Job):
    """One dump (the archive is `file` once it succeeded) or one restore (`file` is the
    uploaded archive until the job ends; `study` the restored study once it succeeded)."""

    class Kind(models.TextChoices):
        DUMP = "dump", "backup"
        RESTORE = "restore", "restore"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    study = models.ForeignKey(
        Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="backup_jobs"
    )
    study_name = models.CharField(max_length=200, blank=True, help_text="as archived")
    file = models.FileField(upload_to="backups/", blank=True, max_length=300)
    original_name = models.CharField(max_length=255, blank=True, help_text="uploaded as")
    size_bytes = models.BigIntegerField(default=0)
    rows_total = models.PositiveBigIntegerField(default=0)
    rows_done = models.PositiveBigIntegerField(default=0)
    # Restores: keep this server's copy of issues that changed since the backup.
    prefer_existing_issues = models.BooleanField(default=False)
    # Per table its rows (and for a restore, what was written and reused), for the page.
    tables = models.JSONField(default=dict, blank=True)
    summary = models.TextField(blank=True)

    lost_outcome: ClassVar[str] = "nothing it wrote was kept"
    task_name = "annotator.backup.tasks.backup_job_task"

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="restore") | Q(file="") | Q(status=Job.Status.SUCCEEDED),
                name="backup_file_only_when_succeeded",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk} of {self.study_name!r} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("backup:job", args=[self.pk])

    @classmethod
    def remove_leftovers(cls) -> int:
        """Archives killed dumps were writing, and uploads of restores that ended or were never
        confirmed, each after a day."""
        from .services import remove_backup_leftovers

        return remove_backup_leftovers()

    @property
    def percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.rows_total:
            return 0
        return min(99, int(100 * self.rows_done / self.rows_total))

    @property
    def download_name(self) -> str:
        day = self.created_at.strftime("%Y-%m-%d") if self.created_at else "undated"
        return f"study-{self.study_id}-backup-{day}-{self.pk}.zip"
