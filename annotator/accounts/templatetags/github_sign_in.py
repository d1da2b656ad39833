"""`{% github_sign_in as enabled %}`: whether pages offer Sign in with GitHub."""

from __future__ import annotations

from django import template

from annotator.accounts.github import github_configured

register = template.Library()


@register.simple_tag
def github_sign_in() -> bool:
    return github_configured()
