from django.apps import AppConfig


class SimilarityConfig(AppConfig):
    name = "annotator.similarity"
    label = "similarity"
    verbose_name = "near-duplicates and similar issues"
