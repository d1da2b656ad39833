from django.apps import AppConfig


class TaxonomyAppConfig(AppConfig):
    name = "taxonomy_app"
    verbose_name = "Codebooks"
