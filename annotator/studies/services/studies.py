"""Studies, their members (accounts and invitation links) and rounds."""

from __future__ import annotations

import secrets
from collections import Counter
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Max
from django.db.models.functions import Greatest
from django.utils import timezone

from annotator.accounts.raters import RATER_NAME, RESERVED_MESSAGE
from annotator.adjudication.services import reapply_decision_rules
from taxonomy_app.models import CodebookVersion

from .. import sql
from ..errors import StudyError
from ..models import Annotation, Assignment, Invitation, Item, Membership, Round, Study

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
def update_study(
    *,
    study: Study,
    name: str,
    guidelines: str,
    overlap_k: int,
    route_unsure_to_adjudication: bool | None = None,
    gold_in_agreement: bool | None = None,
) -> Study:
    """Rename the study, rewrite its guidelines, change k while no open main round has a
    submitted label (StudyError naming the round otherwise), or turn
    the routing of unsure labels to adjudication on or off (None: kept as it is). A change of
    the routing applies the decision rules again at once to the complete items no person
    decided: on, an agreed item with an unsure label loses its automatic decision and waits in
    the queue; off, it is decided again if its labels agree. `gold_in_agreement` (None: kept)
    counts the items with a gold answer in agreement runs from the next run on."""
    if not name.strip():
        raise StudyError("field 'name': name the study")
    if overlap_k < 1:
        raise StudyError("field 'overlap_k': each item needs at least one annotator")
    # What is stored, not the instance: a ModelForm has already set the new value on it.
    stored, stored_k = (
        Study.objects.select_for_update()
        .filter(pk=study.pk)
        .values_list("route_unsure_to_adjudication", "overlap_k")
        .get()
    )
    if overlap_k != stored_k:
        _refuse_k_change_after_labels(study, stored_k)
    route = stored if route_unsure_to_adjudication is None else bool(route_unsure_to_adjudication)
    study.name, study.guidelines, study.overlap_k = name.strip(), guidelines, overlap_k
    study.route_unsure_to_adjudication = route
    if gold_in_agreement is not None:
        study.gold_in_agreement = bool(gold_in_agreement)
    study.save(
        update_fields=[
            "name",
            "guidelines",
            "overlap_k",
            "route_unsure_to_adjudication",
            "gold_in_agreement",
        ]
    )
    # A smaller k never takes labels back: an item keeps at least the slots already used.
    # A closed round (imported, complete, closed by an owner) keeps its quotas, and so do the
    # items a sampled round left out of its reliability sample (one annotator each).
    Item.objects.filter(
        study=study, round__kind=Round.Kind.MAIN, round__closed_at=None, reliability_sample=True
    ).update(quota=Greatest(overlap_k, F("active_count")))
    if route != stored:
        reapply_decision_rules(study=study)
    return study


def _refuse_k_change_after_labels(study: Study, k: int) -> None:
    """k may change only while no open main round holds a submitted label: a new k on labelled
    items would leave some complete without a decision or "unanimous" on fewer labels than k.
    Closed rounds keep their quotas whatever k becomes."""
    labelled = (
        Annotation.objects.filter(
            status=Annotation.Status.SUBMITTED,
            assignment__item__study=study,
            assignment__item__round__kind=Round.Kind.MAIN,
            assignment__item__round__closed_at=None,
        )
        .values_list("assignment__item__round__number", flat=True)
        .first()
    )
    if labelled is not None:
        raise StudyError(
            f"field 'overlap_k': round {labelled} already has submitted labels with k = {k}; "
            "k changes only before labeling starts (close the round and add a new one for "
            "another k)"
        )


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
    if RATER_NAME.match(username):
        raise StudyError(f"field 'username': {RESERVED_MESSAGE}")
    if User.objects.filter(username__iexact=username).exists():
        raise StudyError(f"field 'username': {username!r} exists; add it as a member instead")
    password = password or secrets.token_urlsafe(9)
    user = User.objects.create_user(username=username, password=password)
    return add_member(study=study, user=user, role=role), password


MAX_INVITATION_DAYS = 365


@transaction.atomic
def create_invitation(
    *,
    study: Study,
    role: str = Role.ANNOTATOR,
    user: Any = None,
    days: int | None = None,
    max_uses: int | None = 1,
) -> Invitation:
    """A link that makes whoever opens it a member with `role`, for `days` (default
    STUDIES_INVITATION_DAYS) and `max_uses` people (None: any number)."""
    if role not in Role.values or role == Role.OWNER:
        raise StudyError("field 'role': invite annotators or adjudicators")
    days = settings.STUDIES_INVITATION_DAYS if days is None else days
    if not 1 <= days <= MAX_INVITATION_DAYS:
        raise StudyError(f"field 'days': a link works 1 to {MAX_INVITATION_DAYS} days")
    if max_uses is not None and max_uses < 1:
        raise StudyError("field 'max_uses': at least one person must be able to join by it")
    return Invitation.objects.create(
        study=study,
        role=role,
        token=secrets.token_urlsafe(24),
        created_by=user,
        expires_at=timezone.now() + timedelta(days=days),
        max_uses=max_uses,
    )


def live_invitation(token: str, *, lock: bool = False) -> Invitation:
    """The invitation of `token` while it still makes members; StudyError saying why not."""
    invitations = Invitation.objects.select_related("study")
    if lock:
        invitations = invitations.select_for_update(of=("self",))
    invitation = invitations.filter(token=token).first()
    if invitation is None:
        raise StudyError("This invitation link is not valid: check it, or ask for a new one.")
    refusal = invitation.refusal()
    if refusal:
        raise StudyError(f"{refusal} Ask the study's owner for a new link.")
    return invitation


@transaction.atomic
def accept_invitation(*, token: str, user: Any) -> Membership:
    """Join the invitation's study with its role, using one of its uses; a member keeps their
    role (and the link its uses). An expired, revoked or used-up link is a StudyError."""
    invitation = Invitation.objects.filter(token=token).only("study_id").first()
    existing = None
    if invitation is not None:
        existing = Membership.objects.filter(study=invitation.study_id, user=user).first()
    if existing is not None:
        return existing
    invitation = live_invitation(token, lock=True)
    Invitation.objects.filter(pk=invitation.pk).update(uses=F("uses") + 1)
    return add_member(study=invitation.study, user=user, role=invitation.role)


@transaction.atomic
def join_with_new_account(
    *, token: str, username: str, password: str, email: str = ""
) -> tuple[Any, Membership]:
    """Create an account (the caller has checked the password against Django's validators)
    and join the invitation's study with it; nothing is created when the link no longer
    works or the name is taken."""
    live_invitation(token, lock=True)
    User = get_user_model()
    username = username.strip()
    if not username:
        raise StudyError("field 'username': choose a user name")
    if RATER_NAME.match(username):
        raise StudyError(f"field 'username': {RESERVED_MESSAGE}")
    if User.objects.filter(username__iexact=username).exists():
        raise StudyError(f"field 'username': {username!r} is taken; choose another")
    user = User.objects.create_user(username=username, password=password, email=email.strip())
    return user, accept_invitation(token=token, user=user)


@transaction.atomic
def revoke_invitation(*, study: Study, token: str) -> Invitation:
    """Stop the study's link from making members (revoking again keeps the first date).
    Another study's link is Invitation.DoesNotExist, like a missing one."""
    invitation = Invitation.objects.select_for_update().get(study=study, token=token)
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


@transaction.atomic
def remove_member(*, study: Study, user: Any) -> int:
    """Take `user` out of the study. Their open assignments return to the pool (the item's
    slot is free for another annotator, and their drafts on them are kept but never counted:
    only submitted labels are); their submitted labels stay. The last owner cannot leave.
    Returns how many assignments went back."""
    membership = _locked_membership(study, user)
    if membership.is_owner:
        _refuse_last_owner(study, "removed")
    released = _release_open_assignments(study, user, "removed from the study")
    membership.delete()
    _sync_calibration_quota(study)
    return released


@transaction.atomic
def change_member_role(*, study: Study, user: Any, role: str) -> tuple[Membership, int]:
    """Give a member another role. An annotator who stops annotating gives their open
    assignments back to the pool (as remove_member does); the last owner keeps the role.
    Returns the membership and how many assignments went back."""
    if role not in Role.values:
        raise StudyError(f"field 'role': choose one of {', '.join(Role.values)}")
    membership = _locked_membership(study, user)
    if membership.role == role:
        return membership, 0
    if membership.is_owner:
        _refuse_last_owner(study, "made " + role)
    released = 0
    if membership.role == Role.ANNOTATOR:
        released = _release_open_assignments(study, user, f"made {role} of the study")
    membership.role = role
    membership.save(update_fields=["role"])
    _sync_calibration_quota(study)
    return membership, released


def _locked_membership(study: Study, user: Any) -> Membership:
    # The study row first: two owners demoting each other at once must not both succeed.
    Study.objects.select_for_update().get(pk=study.pk)
    membership = Membership.objects.select_for_update().filter(study=study, user=user).first()
    if membership is None:
        raise StudyError(f"{user} is not a member of this study")
    return membership


def _refuse_last_owner(study: Study, change: str) -> None:
    if study.memberships.filter(role=Role.OWNER).count() <= 1:
        raise StudyError(
            f"The study's last owner cannot be {change}: make another member owner first."
        )


def _release_open_assignments(study: Study, user: Any, reason: str) -> int:
    """Their assignments in progress become skipped and free their items' slots, as
    skip_assignment does; the item is never offered to them again."""
    open_assignments = list(
        Assignment.objects.select_for_update(of=("self",))
        .filter(item__study=study, annotator=user, status=Assignment.Status.ASSIGNED)
        .values_list("pk", "item_id")
    )
    if not open_assignments:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in open_assignments]).update(
        status=Assignment.Status.SKIPPED, skip_reason=reason, finished_at=timezone.now()
    )
    # One assignment per item and annotator (assignment_unique_pair): one slot per item.
    items = sorted(item_id for _, item_id in open_assignments)
    Item.objects.filter(pk__in=items).update(active_count=F("active_count") - 1)
    return len(open_assignments)


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
    if len(rounds) == 1 and not rounds[0].is_closed and not rounds[0].items.exists():
        first = rounds[0]
        if first.kind != kind:
            first.kind = kind
            first.save(update_fields=["kind"])
        return first
    return create_round(study=study, kind=kind)


def item_quota(study: Study, round: Round) -> int:
    """How many annotators an item of `round` needs: k, or every annotator in calibration and
    training."""
    if round.kind in Round.EVERY_ANNOTATOR:
        return max(1, study.memberships.filter(role=Role.ANNOTATOR).count())
    return study.overlap_k


def _sync_calibration_quota(study: Study) -> None:
    """Every annotator labels every item of an open calibration or training round; a closed
    round's items keep their quota (a new member is not handed its historical items)."""
    count = study.memberships.filter(role=Role.ANNOTATOR).count()
    open_calibration = Item.objects.filter(
        study=study, round__kind__in=Round.EVERY_ANNOTATOR, round__closed_at=None
    )
    open_calibration.update(quota=Greatest(max(count, 1), F("active_count")))


@transaction.atomic
def close_round(*, round: Round, reason: str = Round.Closed.OWNER) -> Round:
    """Close `round` for good: it hands out no more assignments, its items keep their quota
    whatever the study's members or k become, and its labels no longer change. Assignments in
    progress in it become skipped (their drafts are kept, never counted). Closing a closed
    round keeps its first date and reason."""
    if reason not in Round.Closed.values:
        raise StudyError(f"field 'reason': choose one of {', '.join(Round.Closed.values)}")
    round = Round.objects.select_for_update().get(pk=round.pk)
    if round.is_closed:
        return round
    open_assignments = Assignment.objects.select_for_update(of=("self",)).filter(
        item__round=round, status=Assignment.Status.ASSIGNED
    )
    slots = Counter(open_assignments.values_list("item_id", flat=True))
    open_assignments.update(
        status=Assignment.Status.SKIPPED, skip_reason="round closed", finished_at=timezone.now()
    )
    for item_id, count in sorted(slots.items()):
        Item.objects.filter(pk=item_id).update(active_count=F("active_count") - count)
    round.closed_at, round.closed_reason = timezone.now(), reason
    round.save(update_fields=["closed_at", "closed_reason"])
    return round


def close_round_when_complete(*, item_id: int) -> None:
    """Call after a submit completed an item: once the transaction commits, the item's round
    closes (reason "complete") if every item of it has its labels. After the commit, so that of
    two submits completing a round's last items at once the later one sees both."""
    transaction.on_commit(
        lambda: sql.close_complete_round(item_id, timezone.now()),
        robust=True,  # a failure is logged, never an error for the submit that committed
    )
