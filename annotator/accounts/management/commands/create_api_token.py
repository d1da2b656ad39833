from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.accounts.errors import TokenError
from annotator.accounts.services import MAX_DAYS, create_api_token


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print only its secret (for scripts: "
        "TOKEN=$(manage.py create_api_token alice --name ci)). The secret is not stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", required=True, help="what the token is for")
        parser.add_argument("--days", type=int, help=f"expire after N days (1..{MAX_DAYS})")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"user {username!r}: no such user; nothing created")
        if not user.is_active:
            raise CommandError(
                f"user {username!r}: inactive, a token would not work; nothing created"
            )
        try:
            _, secret = create_api_token(user=user, name=options["name"], days=options["days"])
        except TokenError as error:
            raise CommandError(f"{error}; nothing created") from error
        self.stdout.write(secret)
