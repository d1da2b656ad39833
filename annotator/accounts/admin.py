from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import ApiToken
from .services import revoke_api_tokens


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "state", "created_at", "last_used_at", "expires_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "user__username"]
    raw_id_fields = ["user"]
    # The hash is the credential and last_used_at is written by authentication: only the name
    # and expiry are editable here. Tokens are created by their owner (page, API, command),
    # since the secret must be shown to them.
    readonly_fields = ["user", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="state")
    def state(self, token: ApiToken) -> str:
        return token.state

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = revoke_api_tokens(tokens=queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).select_related("user")
