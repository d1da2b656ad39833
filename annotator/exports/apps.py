from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "annotator.exports"
    label = "exports"
    verbose_name = "exports, analysis and prior labels"
