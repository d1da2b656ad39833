"""Who may see what: every study page and API view resolves the user's membership first.

Non-members get 404, not 403, so that study, item and assignment ids reveal nothing. The other
apps' pages and API views go through the same check, so it lives here rather than in a views
module (nothing imports another app's views).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from django.http import Http404, HttpRequest
from rest_framework.request import Request

from . import sql
from .models import Assignment, Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Role = Membership.Role
MANAGERS = {Role.OWNER}
SEE_ALL = {Role.OWNER, Role.ADJUDICATOR}


def signed_in(request: HttpRequest | Request) -> User:
    """The request's user, who is signed in on every page and API route but the login's
    (LoginRequiredMiddleware, DRF's permission); 404 otherwise."""
    user = request.user
    if not user.is_authenticated:
        raise Http404("Not signed in")
    return user


def membership_or_404(
    request: HttpRequest | Request, study_id: int, roles: Collection[str] | None = None
) -> Membership:
    """The user's membership of the study, with one of `roles` if given; 404 otherwise.
    Pages and API views alike go through it."""
    user = request.user
    if not user.is_authenticated:  # LoginRequiredMiddleware / DRF send these to log in
        raise Http404("No such study")
    membership = (
        Membership.objects.select_related("study__codebook_version__codebook")
        .filter(study_id=study_id, user_id=user.pk)
        .first()
    )
    if membership is None or (roles is not None and membership.role not in roles):
        raise Http404("No such study")
    return membership


def own_assignment_or_404(user: Any, assignment_id: int, *, page: bool = True) -> Assignment:
    """The user's own assignment, or 404 (another annotator's reveals nothing either): the one
    way the annotate page, its htmx writes and the API load an assignment. `page`: with all the
    page shows (item, issue, repository, round, study, codebook version, annotation); else with
    what a write needs (item, study, codebook version). See `studies.sql.own_assignment`."""
    if not getattr(user, "is_authenticated", False):
        raise Http404("No such assignment")
    assignment = sql.own_assignment(assignment_id, user.pk, page=page)
    if assignment is None:
        raise Http404("No such assignment")
    return assignment
