"""The demo study `manage.py seed_demo` creates: the Colossal-AI issues, k = 2, two annotators."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from annotator.issues.access import grant_import
from annotator.issues.models import Repository
from taxonomy_app.models import Codebook, CodebookVersion

from .models import Membership, Study
from .services import add_member, create_study, select_issues

DEMO_STUDY = "Colossal-AI bugs (demo)"
DEMO_ANNOTATORS = ("annotator1", "annotator2")
DEMO_SEED = 2512


@transaction.atomic
def seed_demo_study(*, owner: Any, password: str = "") -> tuple[Study, dict[str, str]]:
    """Create the demo study once (owner `owner`, k = 2, the Colossal-AI issues as round 1) and
    its two annotators; every run sets the annotators' passwords (given, or fresh random ones)
    and returns them so the terminal can print working credentials."""
    version = _seed_version()
    grant_import(owner)  # the demo owner imports and syncs issues
    study = Study.objects.filter(name=DEMO_STUDY).first()
    if study is None:
        study = create_study(
            name=DEMO_STUDY,
            codebook_version=version,
            owner=owner,
            overlap_k=2,
            guidelines="Read the whole thread, then label each facet. Screening first: "
            "only *relevant* issues need the other facets.",
        )
    passwords = {name: _annotator(study, name, password) for name in DEMO_ANNOTATORS}
    if not study.items.exists():
        repository = Repository.objects.named("hpcaitech/ColossalAI")
        filters = {"repository": str(repository.pk)} if repository else {}
        select_issues(
            study=study,
            round=study.rounds.get(number=1),
            filters=filters,
            seed=DEMO_SEED,
            user=owner,
        )
    return study, passwords


def _seed_version() -> CodebookVersion:
    codebook = Codebook.objects.filter(slug="distributed-dl-bugs").first()
    version = codebook.latest_published() if codebook else None
    if version is None:
        raise RuntimeError("load and publish a codebook first (manage.py load_codebook --publish)")
    return version


def _annotator(study: Study, username: str, password: str) -> str:
    User = get_user_model()
    user = User.objects.filter(username=username).first() or User(username=username)
    password = password or secrets.token_urlsafe(9)
    user.set_password(password)
    user.save()
    if not Membership.objects.filter(study=study, user=user).exists():
        add_member(study=study, user=user, role=Membership.Role.ANNOTATOR)
    return password
