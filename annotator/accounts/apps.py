from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "annotator.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"

    def ready(self) -> None:
        # drf-spectacular finds authentication extensions by import: register ours.
        from . import checks, schema  # noqa: F401
