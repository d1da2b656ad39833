"""Creating, revoking and touching API tokens: the one place that writes ApiToken rows.

Pages, the API, the admin and `manage.py create_api_token` all go through these functions, so
the secret is generated and hashed in one place and never reaches the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from .errors import TokenError
from .models import LAST_USED_PRECISION, ApiToken
from .tokens import hash_secret, new_secret

MAX_DAYS = 3650
NAME_LENGTH = ApiToken._meta.get_field("name").max_length or 100


def create_api_token(*, user: Any, name: str, days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for `user`, expiring after `days` (never if None). Returns the row and the
    secret; the secret exists only in the return value, so show it once and drop it."""
    name = (name or "").strip()
    if not name:
        raise TokenError("field 'name': name the token, e.g. after the script that uses it")
    if len(name) > NAME_LENGTH:
        raise TokenError(f"field 'name': at most {NAME_LENGTH} characters")
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise TokenError(f"field 'days': between 1 and {MAX_DAYS}, or empty for no expiry")
    now = timezone.now()
    prefix, secret = new_secret()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        key_hash=hash_secret(secret),
        created_at=now,
        expires_at=now + timedelta(days=days) if days else None,
    )
    return token, secret


def revoke_api_tokens(*, tokens: Iterable[ApiToken] | Any) -> int:
    """Revoke the given tokens (a queryset or rows); already revoked ones keep their date.
    Returns how many were revoked now."""
    ids = [token.pk for token in tokens]
    return ApiToken.objects.filter(pk__in=ids, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def revoke_own_api_token(*, user: Any, token_id: int) -> ApiToken:
    """Revoke one of `user`'s tokens. Another user's token is ApiToken.DoesNotExist, exactly
    like a missing one, so callers answer 404 and ids reveal nothing."""
    token = ApiToken.objects.owned_by(user).get(pk=token_id)
    revoke_api_tokens(tokens=[token])
    token.refresh_from_db(fields=["revoked_at"])
    return token


def touch_api_token(*, token: ApiToken, now: datetime) -> None:
    """Record a use in last_used_at, at most once per LAST_USED_PRECISION. The condition is
    repeated in the UPDATE, so concurrent requests of one script write once between them."""
    if not token.needs_touch(now):
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_PRECISION)
    ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
    token.last_used_at = now
