"""The API token format, pure (no Django): `ann_<prefix>_<rest>`.

The `ann_` marker makes a leaked token recognisable to secret scanners and to people; the
8-character prefix is what lists show so that an owner can tell tokens apart without the
secret. Only the SHA-256 of the whole token is stored. A plain, unsalted hash is enough here
(unlike for passwords): the token carries 256 random bits, so there is nothing to guess, and a
fast hash keeps the lookup one indexed equality per request.
"""

from __future__ import annotations

import hashlib
import secrets
import string

MARKER = "ann_"
PREFIX_LENGTH = 8
_PREFIX_ALPHABET = string.ascii_letters + string.digits


def new_secret() -> tuple[str, str]:
    """A fresh token: (prefix, secret). The prefix is alphanumeric, so `_` only separates."""
    prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
    return prefix, f"{MARKER}{prefix}_{secrets.token_urlsafe(32)}"


def hash_secret(secret: str) -> str:
    """SHA-256 hex digest of the token as sent: the only form the database ever sees."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()
