"""Studies, their members (accounts and invitation links) and rounds."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Max
from django.db.models.functions import Greatest

from taxonomy_app.models import CodebookVersion

from ..errors import StudyError
from ..models import Invitation, Item, Membership, Round, Study

Role = Membership.Role


@transaction.atomic
def create_study(
    *,
    name: str,
    codebook_version: CodebookVersion,
    owner: Any,
    overlap_k: int = 2,
    guidelines: str = "",
) -> Study:
    """Create a study labeled with a published codebook version, owned by `owner`, with a first
    (main) round."""
    if not name.strip():
        raise StudyError("field 'name': name the study")
    if not codebook_version.is_published:
        raise StudyError("field 'codebook_version': choose a published codebook version")
    if overlap_k < 1:
        raise StudyError("field 'overlap_k': each item needs at least one annotator")
    study = Study.objects.create(
        name=name.strip(),
        codebook_version=codebook_version,
        overlap_k=overlap_k,
        guidelines=guidelines,
        created_by=owner,
    )
    Membership.objects.create(study=study, user=owner, role=Role.OWNER)
    Round.objects.create(study=study, number=1, kind=Round.Kind.MAIN)
    return study


@transaction.atomic
def update_study(*, study: Study, name: str, guidelines: str, overlap_k: int) -> Study:
    """Rename the study, rewrite its guidelines or change k for items not yet full."""
    if not name.strip():
        raise StudyError("field 'name': name the study")
    if overlap_k < 1:
        raise StudyError("field 'overlap_k': each item needs at least one annotator")
    study.name, study.guidelines, study.overlap_k = name.strip(), guidelines, overlap_k
    study.save(update_fields=["name", "guidelines", "overlap_k"])
    # A smaller k never takes labels back: an item keeps at least the slots already used.
    Item.objects.filter(study=study, round__kind=Round.Kind.MAIN).update(
        quota=Greatest(overlap_k, F("active_count"))
    )
    return study


@transaction.atomic
def add_member(*, study: Study, user: Any, role: str) -> Membership:
    """Make `user` a member with `role` (or change their role)."""
    if role not in Role.values:
        raise StudyError(f"field 'role': choose one of {', '.join(Role.values)}")
    membership, _ = Membership.objects.update_or_create(
        study=study, user=user, defaults={"role": role}
    )
    _sync_calibration_quota(study)
    return membership


@transaction.atomic
def create_member_account(
    *, study: Study, username: str, role: str = Role.ANNOTATOR, password: str = ""
) -> tuple[Membership, str]:
    """Create an account and add it to the study; returns the membership and the password
    (generated unless given), to hand over once."""
    User = get_user_model()
    username = username.strip()
    if not username:
        raise StudyError("field 'username': choose a user name")
    if User.objects.filter(username__iexact=username).exists():
        raise StudyError(f"field 'username': {username!r} exists; add it as a member instead")
    password = password or secrets.token_urlsafe(9)
    user = User.objects.create_user(username=username, password=password)
    return add_member(study=study, user=user, role=role), password


@transaction.atomic
def create_invitation(*, study: Study, role: str = Role.ANNOTATOR, user: Any = None) -> Invitation:
    """A link that makes whoever opens it a member with `role`."""
    if role not in Role.values or role == Role.OWNER:
        raise StudyError("field 'role': invite annotators or adjudicators")
    return Invitation.objects.create(
        study=study, role=role, token=secrets.token_urlsafe(24), created_by=user
    )


@transaction.atomic
def accept_invitation(*, token: str, user: Any) -> Membership:
    """Join the invitation's study; a member keeps their role."""
    invitation = Invitation.objects.select_for_update().filter(token=token).first()
    if invitation is None:
        raise StudyError("this invitation link is not valid")
    existing = Membership.objects.filter(study=invitation.study_id, user=user).first()
    if existing is not None:
        return existing
    Invitation.objects.filter(pk=invitation.pk).update(uses=F("uses") + 1)
    return add_member(study=invitation.study, user=user, role=invitation.role)


@transaction.atomic
def create_round(*, study: Study, kind: str = Round.Kind.MAIN) -> Round:
    """Add the study's next round."""
    if kind not in Round.Kind.values:
        raise StudyError(f"field 'kind': choose one of {', '.join(Round.Kind.values)}")
    Study.objects.select_for_update().get(pk=study.pk)
    last = study.rounds.aggregate(n=Max("number"))["n"] or 0
    return Round.objects.create(study=study, number=last + 1, kind=kind)


@transaction.atomic
def round_for_selection(*, study: Study, kind: str) -> Round:
    """The round that "add issues to a new round" fills: the study's round 1 while it is still
    empty, taking `kind`, else the study's next round. Every study starts with an empty main
    round 1; a study that begins with calibration would otherwise keep it, empty, before its
    calibration round (numbered 2 in exports and reports)."""
    if kind not in Round.Kind.values:
        raise StudyError(f"field 'kind': choose one of {', '.join(Round.Kind.values)}")
    Study.objects.select_for_update().get(pk=study.pk)
    rounds = list(study.rounds.order_by("number")[:2])
    if len(rounds) == 1 and not rounds[0].items.exists():
        first = rounds[0]
        if first.kind != kind:
            first.kind = kind
            first.save(update_fields=["kind"])
        return first
    return create_round(study=study, kind=kind)


def item_quota(study: Study, round: Round) -> int:
    """How many annotators an item of `round` needs: k, or every annotator in calibration."""
    if round.kind == Round.Kind.CALIBRATION:
        return max(1, study.memberships.filter(role=Role.ANNOTATOR).count())
    return study.overlap_k


def _sync_calibration_quota(study: Study) -> None:
    count = study.memberships.filter(role=Role.ANNOTATOR).count()
    Item.objects.filter(study=study, round__kind=Round.Kind.CALIBRATION).update(
        quota=Greatest(max(count, 1), F("active_count"))
    )
