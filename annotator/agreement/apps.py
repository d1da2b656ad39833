from django.apps import AppConfig


class AgreementConfig(AppConfig):
    name = "annotator.agreement"
    label = "agreement"
    verbose_name = "inter-rater agreement"
