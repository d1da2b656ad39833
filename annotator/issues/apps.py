from django.apps import AppConfig


class IssuesConfig(AppConfig):
    name = "annotator.issues"
    label = "issues"
    verbose_name = "GitHub issues"
