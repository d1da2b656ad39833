import os
import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from annotator.issues.services import import_issues

DEMO_DATA = Path(__file__).resolve().parents[2] / "demo_data"
DEMO_FILES = ["colossalai_issues.json", "colossalai_comments.json"]


class Command(BaseCommand):
    help = (
        "Create (or reset) the demo owner account and import the 36 real Colossal-AI issues "
        "(idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=os.environ.get("DEMO_USERNAME", "demo"))
        parser.add_argument("--password", default=os.environ.get("DEMO_PASSWORD", ""))

    def handle(self, *args: Any, username: str, password: str, **options: Any) -> None:
        for name in DEMO_FILES:
            with (DEMO_DATA / name).open("rb") as stream:
                counts = import_issues(stream=stream, filename=name)
            self.stdout.write(f"{name}: {counts}")
        # The seed codebook, published; left alone when it exists (the owner may have evolved it).
        call_command("load_codebook", publish=True, if_missing=True, stdout=self.stdout._out)
        owner = self._owner(username, password)
        self._study(owner)

    def _study(self, owner: Any) -> None:
        # The demo study (annotator/studies/demo.py): created once; annotators' passwords are
        # fresh on every run, like the owner's.
        from annotator.studies.demo import seed_demo_study

        study, passwords = seed_demo_study(owner=owner)
        self.stdout.write(
            f"Demo study: {study.name} ({study.items.count()} items, k = {study.overlap_k})"
        )
        for name, secret in passwords.items():
            self.stdout.write(self.style.SUCCESS(f"Demo annotator account: {name} / {secret}"))

    def _owner(self, username: str, password: str) -> Any:
        # A fresh random password on each run unless one is given, so the terminal always
        # shows credentials that work.
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        user = user or User(username=username, email=f"{username}@example.org")
        password = password or secrets.token_urlsafe(9)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(self.style.SUCCESS(f"Demo owner account: {username} / {password}"))
        return user
