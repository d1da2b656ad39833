"""Who may see what: every study view resolves the user's membership first.

Non-members get 404, not 403, so that study, item and assignment ids reveal nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache
from typing import TYPE_CHECKING, cast

from django.http import Http404, HttpRequest
from rest_framework.request import Request

from annotator.issues.rendering import render_markdown

from ..models import Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User

Role = Membership.Role
MANAGERS = {Role.OWNER}
SEE_ALL = {Role.OWNER, Role.ADJUDICATOR}


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
        .filter(study_id=study_id, user=cast("User", user))
        .first()
    )
    if membership is None or (roles is not None and membership.role not in roles):
        raise Http404("No such study")
    return membership


@lru_cache(maxsize=2048)
def markdown_html(text: str) -> str:
    """render_markdown, memoised: a thread is read by k annotators and re-read on every reload,
    and its text rarely changes (a changed text is a new key)."""
    return render_markdown(text)
