"""System checks of the GitHub token keys (`manage.py check`, and `check --deploy`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from .crypto import TokenKeyError, cipher


@checks.register(checks.Tags.security)
def check_token_keys(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A malformed key would fail every store and read of a GitHub token: refuse it here."""
    if not settings.TOKEN_KEYS:
        return []
    try:
        cipher(settings.TOKEN_KEYS)
    except TokenKeyError as error:
        return [checks.Error(str(error), id="accounts.E001")]
    return []


@checks.register(checks.Tags.security, deploy=True)
def check_sign_in_keeps_tokens(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    github = settings.SOCIALACCOUNT_PROVIDERS.get("github", {})
    if github.get("APPS") and not settings.TOKEN_KEYS:
        return [
            checks.Warning(
                "Sign in with GitHub is configured but ANNOTATOR_TOKEN_KEYS is empty: the "
                "tokens people grant are not kept, and every sync uses GITHUB_TOKEN.",
                id="accounts.W001",
            )
        ]
    return []
