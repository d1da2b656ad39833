"""Who may see what: every study view resolves the user's membership first.

Non-members get 404, not 403, so that study, item and assignment ids reveal nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

from django.http import Http404, HttpRequest

from annotator.issues.rendering import render_markdown

from ..models import Membership

Role = Membership.Role
MANAGERS = {Role.OWNER}
SEE_ALL = {Role.OWNER, Role.ADJUDICATOR}


def membership_or_404(
    request: HttpRequest, study_id: int, roles: Collection[str] | None = None
) -> Membership:
    if not request.user.is_authenticated:  # LoginRequiredMiddleware sends these to log in
        raise Http404("No such study")
    membership = (
        Membership.objects.select_related("study__codebook_version__codebook")
        .filter(study_id=study_id, user=request.user)
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
