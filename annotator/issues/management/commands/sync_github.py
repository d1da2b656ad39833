from argparse import ArgumentTypeError
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.issues.formats import ImportFormatError
from annotator.issues.github import GitHubError
from annotator.issues.sync import SyncError, SyncReport, sync_repository


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
        "Token from GITHUB_TOKEN. Prints 'issues: created N, ...; comments: created N, ...'."
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

    def handle(
        self, *args: Any, repository: str, since: datetime | None, api_url: str, **options: Any
    ) -> None:
        last_message = ""

        def show(report: SyncReport) -> None:
            nonlocal last_message
            if report.message != last_message and options["verbosity"] > 0:
                self.stderr.write(f"{report.repository}: {report.message}")
                last_message = report.message

        try:
            report = sync_repository(
                full_name=repository, since=since, api_url=api_url, on_progress=show
            )
        except (GitHubError, SyncError, ImportFormatError) as error:
            raise CommandError(f"{repository}: {error}") from error
        for reason in report.issues.skipped_reasons + report.comments.skipped_reasons:
            self.stderr.write(f"skipped {reason}")
        self.stdout.write(str(report))
