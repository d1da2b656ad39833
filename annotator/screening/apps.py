from django.apps import AppConfig


class ScreeningConfig(AppConfig):
    name = "annotator.screening"
    label = "screening"
    verbose_name = "prioritised screening"
