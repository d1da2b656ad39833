from django.apps import AppConfig


class BackupConfig(AppConfig):
    name = "annotator.backup"
    label = "backup"
    verbose_name = "study backup and restore"

    def ready(self) -> None:
        # The job dispatcher (annotator/dispatch.py) finds each kind of job's task in JOB_TASKS;
        # backups plug theirs in here, so that a backup waiting for the queue is sent again
        # like any other job.
        from annotator.dispatch import JOB_TASKS

        JOB_TASKS.setdefault("backup.backupjob", "annotator.backup.tasks.backup_job_task")
