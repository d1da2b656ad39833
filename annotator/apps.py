import os

from django.apps import AppConfig
from django.conf import settings


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "annotator"

    def ready(self) -> None:
        # Importing the module creates the Celery app and makes it current, so that
        # @shared_task functions and `celery -A annotator` find it.
        from . import celery  # noqa: F401

        # The app's temporary directories (settings.TEMP_DIR) exist before anything runs:
        # Django's checks refuse a FILE_UPLOAD_TEMP_DIR that does not (files.E001). If one
        # cannot be made, that check says so.
        for folder in (settings.FILE_UPLOAD_TEMP_DIR, settings.XLSX_TEMP_DIR):
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                continue
