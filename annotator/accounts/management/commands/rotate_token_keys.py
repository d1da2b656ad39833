from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotator.accounts.crypto import TokenKeyError
from annotator.accounts.services import rotate_github_token_keys


class Command(BaseCommand):
    help = (
        "Encrypt every stored GitHub token again with the first key of ANNOTATOR_TOKEN_KEYS "
        "(put a new key first, keep the old ones after it, run this, then drop the old ones). "
        "Prints 're-encrypted N'. A token no key opens stops it, naming the row; nothing changes."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            done = rotate_github_token_keys()
        except TokenKeyError as error:
            raise CommandError(f"{error}; nothing re-encrypted") from None
        self.stdout.write(f"re-encrypted {done}")
