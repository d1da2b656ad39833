"""API tokens: hashed secrets that let scripts call the REST API as their owner."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

# last_used_at is a hint for the owner ("is this token still in use?"), not an audit log: it is
# written at most once per this interval, so a busy script does not write on every request.
LAST_USED_PRECISION = timedelta(minutes=1)


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def owned_by(self, user: Any) -> ApiTokenQuerySet:
        return self.filter(user=user)

    def live(self, now: datetime | None = None) -> ApiTokenQuerySet:
        """Neither revoked nor expired."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active"
        EXPIRED = "expired"
        REVOKED = "revoked"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="what the token is for, e.g. 'notebook'")
    prefix = models.CharField(max_length=8, help_text="first characters, shown in lists")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(
                condition=Q(key_hash__regex=r"^[0-9a-f]{64}$"), name="api_token_hash_is_sha256"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (ann_{self.prefix}…)"

    def state_at(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return self.State.REVOKED
        if self.expires_at is not None and self.expires_at <= now:
            return self.State.EXPIRED
        return self.State.ACTIVE

    @property
    def state(self) -> str:
        return self.state_at(timezone.now())

    def needs_touch(self, now: datetime) -> bool:
        """Whether a request at `now` should record itself in last_used_at."""
        return self.last_used_at is None or now - self.last_used_at >= LAST_USED_PRECISION


class GitHubToken(models.Model):
    """A person's GitHub token, which the syncs they start use instead of the server's
    GITHUB_TOKEN: granted when they signed in with GitHub, or pasted on their account page.
    Only its Fernet ciphertext is stored (crypto.py, keys ANNOTATOR_TOKEN_KEYS); no page, API,
    log or backup ever shows the token."""

    class Source(models.TextChoices):
        SIGN_IN = "sign-in", "granted at sign-in with GitHub"
        PASTED = "pasted", "pasted on the account page"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="github_token"
    )
    ciphertext = models.TextField(help_text="Fernet token of the GitHub token; never the token")
    source = models.CharField(max_length=10, choices=Source.choices)
    scopes = models.CharField(max_length=200, blank=True, help_text="as GitHub granted them")
    github_login = models.CharField(max_length=100, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "GitHub token"
        constraints = [
            # A Fernet token is url-safe base64 beginning with version byte 0x80 ("gAAAAA").
            models.CheckConstraint(
                condition=Q(ciphertext__startswith="gAAAAA"), name="github_token_is_encrypted"
            ),
        ]

    def __str__(self) -> str:
        return f"GitHub token of user #{self.user_id} ({self.source})"
