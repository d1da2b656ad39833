from argparse import ArgumentTypeError
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.accounts.crypto import TokenKeyError
from annotator.issues.formats import ImportFormatError
from annotator.issues.github import GitHubError
from annotator.issues.sync import (
    USER_TOKEN_NAME,
    SyncError,
    SyncReport,
    sync_repository,
    token_for,
)


def _iso_datetime(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ArgumentTypeError(
            f"expected an ISO date or time such as 2024-01-01 or 2024-01-01T12:00:00Z, got {text!r}"
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


class Command(BaseCommand):
    help = (
        "Pull the issues, pull requests and comments of a GitHub repository into the database, "
        "incrementally (only what changed since the last run) and resuming an unfinished run. "
        "Token from GITHUB_TOKEN, or with --user USERNAME that user's own GitHub token (stored "
        "encrypted on their account page) when they have one. "
        "Prints 'issues: created N, ...; comments: created N, ...'."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("repository", help="OWNER/NAME")
        parser.add_argument(
            "--since",
            type=_iso_datetime,
            default=None,
            help="ISO date or time: fetch what changed since then (starts a fresh run)",
        )
        parser.add_argument(
            "--api-url", default="", help="API root, e.g. https://HOST/api/v3 or a test server"
        )
        parser.add_argument(
            "--user",
            default="",
            help="USERNAME whose stored GitHub token to use (GITHUB_TOKEN if they have none)",
        )

    def handle(
        self, *args: Any, repository: str, since: datetime | None, api_url: str, **options: Any
    ) -> None:
        last_message = ""

        def show(report: SyncReport) -> None:
            nonlocal last_message
            if report.message != last_message and options["verbosity"] > 0:
                self.stderr.write(f"{report.repository}: {report.message}")
                last_message = report.message

        token = self._token(options["user"])
        try:
            report = sync_repository(
                full_name=repository,
                since=since,
                api_url=api_url,
                on_progress=show,
                token=token,
                token_name=USER_TOKEN_NAME if token else "GITHUB_TOKEN",
            )
        except (GitHubError, SyncError, ImportFormatError) as error:
            raise CommandError(f"{repository}: {error}") from error
        for reason in report.issues.skipped_reasons + report.comments.skipped_reasons:
            self.stderr.write(f"skipped {reason}")
        self.stdout.write(str(report))

    def _token(self, username: str) -> str | None:
        """`username`'s GitHub token, or None (GITHUB_TOKEN); an unknown user stops here."""
        if not username:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"--user {username!r}: no such user; nothing synced")
        try:
            token = token_for(user)
        except TokenKeyError as error:
            raise CommandError(f"--user {username!r}: {error}; nothing synced") from None
        if token is None:
            self.stderr.write(f"{username} has no GitHub token stored: using GITHUB_TOKEN")
        return token
