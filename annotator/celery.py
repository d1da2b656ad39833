"""The Celery application. Loaded by AnnotatorConfig.ready(), never from annotator/__init__.py,
so that pure modules such as annotator.issues.formats import without Celery or Django."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
