"""Creating, revoking and touching API tokens: the one place that writes ApiToken rows.

Pages, the API, the admin and `manage.py create_api_token` all go through these functions, so
the secret is generated and hashed in one place and never reaches the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import crypto
from .errors import GitHubTokenError, TokenError
from .models import LAST_USED_PRECISION, ApiToken, GitHubToken
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


# --- GitHub tokens (models.GitHubToken) ------------------------------------------------------
GITHUB_TOKEN_LENGTH = 255  # GitHub's own tokens are 40 to 93 characters


def github_tokens_enabled() -> bool:
    """Whether a key is configured, so tokens can be stored (and read back)."""
    return bool(settings.TOKEN_KEYS)


def store_github_token(
    *, user: Any, token: str, source: str, scopes: str = "", github_login: str = ""
) -> GitHubToken:
    """Keep `token` encrypted as `user`'s GitHub token, replacing any earlier one. The token
    must look like one GitHub issues (printable ASCII, no spaces); it is not shown back."""
    token = (token or "").strip()
    if not token:
        raise GitHubTokenError("field 'token': paste a GitHub token")
    if len(token) > GITHUB_TOKEN_LENGTH or not all(33 <= ord(c) < 127 for c in token):
        raise GitHubTokenError(
            "field 'token': not a GitHub token (letters, digits and _ only, as ghp_…, "
            f"gho_… or github_pat_…, at most {GITHUB_TOKEN_LENGTH} characters)"
        )
    try:
        ciphertext = crypto.encrypt(token, settings.TOKEN_KEYS)
    except crypto.TokenKeyError as error:
        raise GitHubTokenError(f"field 'token': {error}") from None
    row, _ = GitHubToken.objects.update_or_create(
        user=user,
        defaults={
            "ciphertext": ciphertext,
            "source": source,
            "scopes": scopes[:200],
            "github_login": github_login[:100],
            "updated_at": timezone.now(),
        },
    )
    return row


def forget_github_token(*, user: Any) -> bool:
    """Delete `user`'s stored GitHub token; whether there was one."""
    deleted, _ = GitHubToken.objects.filter(user=user).delete()
    return bool(deleted)


def has_github_token(user: Any) -> bool:
    """Whether syncs `user` starts will send their own token (without decrypting it)."""
    return github_tokens_enabled() and GitHubToken.objects.filter(user=user).exists()


def github_token_for(user: Any) -> str | None:
    """The GitHub token `user` stored, decrypted, or None (no user, no token, or no key:
    syncs then use the server's GITHUB_TOKEN). A token no key opens raises TokenKeyError."""
    if user is None or not getattr(user, "pk", None) or not settings.TOKEN_KEYS:
        return None
    stored = GitHubToken.objects.filter(user=user).values_list("ciphertext", flat=True).first()
    if stored is None:
        return None
    return crypto.decrypt(stored, settings.TOKEN_KEYS)


def rotate_github_token_keys(*, batch: int = 500) -> int:
    """Encrypt every stored GitHub token again with the first of ANNOTATOR_TOKEN_KEYS, in one
    transaction (a token no key opens stops it, naming the row, and nothing changes).
    Returns how many rows were re-encrypted."""
    keys = settings.TOKEN_KEYS
    crypto.cipher(keys)  # no key, or a malformed one: refuse before reading rows
    done = 0
    with transaction.atomic():
        rows = GitHubToken.objects.select_for_update().order_by("pk")
        rows = rows.only("pk", "user_id", "ciphertext")
        for row in rows.iterator(chunk_size=batch):
            try:
                row.ciphertext = crypto.rotate(row.ciphertext, keys)
            except crypto.TokenKeyError as error:
                where = f"GitHub token #{row.pk} (user #{row.user_id})"
                raise crypto.TokenKeyError(f"{where}: {error}") from None
            row.save(update_fields=["ciphertext"])
            done += 1
    return done
