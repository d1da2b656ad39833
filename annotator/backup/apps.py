from django.apps import AppConfig


class BackupConfig(AppConfig):
    name = "annotator.backup"
    label = "backup"
    verbose_name = "study backup and restore"
