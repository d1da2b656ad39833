"""Who may see what on the adjudication pages. Non-members get 404, as in the studies app."""

from __future__ import annotations

from collections.abc import Collection

from django.http import Http404, HttpRequest

from annotator.studies.access import signed_in
from annotator.studies.models import Item, Membership


def item_or_404(
    request: HttpRequest, item_id: int, roles: Collection[str] | None = None
) -> tuple[Item, Membership]:
    """The item and the viewer's membership of its study (restricted to `roles` if given)."""
    item = (
        Item.objects.select_related("issue__repository", "round", "study__codebook_version")
        .defer("issue__raw", "issue__search_vector")
        .filter(pk=item_id)
        .first()
    )
    if item is None:
        raise Http404("No such item")
    membership = Membership.objects.filter(study=item.study_id, user=signed_in(request)).first()
    if membership is None or (roles is not None and membership.role not in roles):
        raise Http404("No such item")
    return item, membership
