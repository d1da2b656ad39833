"""OpenAPI description of ApiTokenAuthentication for drf-spectacular (imported by apps.py).

Described as HTTP bearer, so that the docs page's "Authorize" dialog takes the bare secret;
the server accepts the same secret after `Token ` as well.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "annotator.accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API token from /account/tokens/ (`ann_…`), sent as "
                "`Authorization: Token <secret>` or `Authorization: Bearer <secret>`."
            ),
        }
