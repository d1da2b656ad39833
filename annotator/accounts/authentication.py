"""DRF authentication by API token: `Authorization: Token <secret>` (or `Bearer <secret>`).

It is the first of DEFAULT_AUTHENTICATION_CLASSES, so an unauthenticated request gets 401 with
`WWW-Authenticate: Token` (DRF takes the header from the first class). A header with another
scheme (Basic, …) is left to the classes after it.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from .models import ApiToken
from .services import touch_api_token
from .tokens import hash_secret

KEYWORDS = (b"token", b"bearer")


class ApiTokenAuthentication(BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Token <secret>'."
            )
        try:
            secret = parts[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid API token.") from None
        return self.authenticate_secret(secret)

    def authenticate_secret(self, secret: str) -> tuple[Any, ApiToken]:
        # One indexed lookup on the unique hash; the user comes with it (no second query).
        token = ApiToken.objects.select_related("user").filter(key_hash=hash_secret(secret)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid API token.")
        now = timezone.now()
        state = token.state_at(now)
        if state != ApiToken.State.ACTIVE:
            raise exceptions.AuthenticationFailed(f"This API token is {state}.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        touch_api_token(token=token, now=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'
