"""Encryption at rest of the GitHub tokens people give the app (models.GitHubToken).

Fernet (AES-128-CBC with HMAC-SHA256, from `cryptography`) under a MultiFernet of the keys in
settings.TOKEN_KEYS (ANNOTATOR_TOKEN_KEYS, newest first): encryption uses the first key,
decryption tries each, so a new key is added in front, `manage.py rotate_token_keys`
re-encrypts every row with it, and the old key is then dropped. Pure: no Django import; the
keys are passed in.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


class TokenKeyError(Exception):
    """No key, a malformed key, or a stored value no key opens; str() says which."""


def cipher(keys: Sequence[str]) -> MultiFernet:
    """A MultiFernet of `keys` (url-safe base64 of 32 bytes each), the first encrypting."""
    if not keys:
        raise TokenKeyError("no encryption key: set ANNOTATOR_TOKEN_KEYS to store GitHub tokens")
    fernets = []
    for number, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.encode()))
        except ValueError:
            raise TokenKeyError(
                f"ANNOTATOR_TOKEN_KEYS key {number} is not a Fernet key "
                "(32 url-safe base64-encoded bytes)"
            ) from None
    return MultiFernet(fernets)


def encrypt(secret: str, keys: Sequence[str]) -> str:
    return cipher(keys).encrypt(secret.encode()).decode("ascii")


def decrypt(stored: str, keys: Sequence[str]) -> str:
    try:
        return cipher(keys).decrypt(stored.encode("ascii")).decode()
    except InvalidToken:
        raise TokenKeyError(
            "no key in ANNOTATOR_TOKEN_KEYS opens this stored token (was its key dropped "
            "before `rotate_token_keys` ran?)"
        ) from None


def rotate(stored: str, keys: Sequence[str]) -> str:
    """`stored` encrypted again with the first key (same secret, new ciphertext)."""
    try:
        return cipher(keys).rotate(stored.encode("ascii")).decode("ascii")
    except InvalidToken:
        raise TokenKeyError("no key in ANNOTATOR_TOKEN_KEYS opens this stored token") from None
