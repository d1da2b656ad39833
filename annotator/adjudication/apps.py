from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "annotator.adjudication"
    label = "adjudication"
    verbose_name = "adjudication"
