from django.apps import AppConfig


class MachineConfig(AppConfig):
    name = "annotator.machine"
    label = "machine"
    verbose_name = "machine raters"
