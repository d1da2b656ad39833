from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "annotator"

    def ready(self) -> None:
        # Importing the module creates the Celery app and makes it current, so that
        # @shared_task functions and `celery -A annotator` find it.
        from . import celery  # noqa: F401
