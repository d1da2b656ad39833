"""Open coding: annotators propose categories; the owner accepts, maps or rejects them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from ..errors import CodebookError
from ..models import Category, Codebook, CodebookVersion, Facet, Proposal
from ..usage import label_usage
from .categories import add_category
from .versions import _user, start_draft

OTHER_CODES = Q(code="other") | Q(code__endswith="-other")


@transaction.atomic
def create_proposal(
    *,
    facet: Facet,
    name: str,
    rationale: str = "",
    issue: str = "",
    parent: Category | None = None,
    user: Any = None,
) -> Proposal:
    """Record an annotator's proposal of a new category in `facet` (of the version they label
    with), optionally under `parent`, prompted by `issue` (a URL or OWNER/NAME#N)."""
    if not name.strip():
        raise CodebookError("field 'name': name the category you propose")
    if parent is not None and parent.facet_id != facet.pk:
        raise CodebookError(f"field 'parent': {parent.code!r} belongs to another facet")
    return Proposal.objects.create(
        facet=facet,
        parent=parent,
        name=name.strip(),
        rationale=rationale.strip(),
        issue=issue.strip(),
        proposed_by=_user(user),
    )


@transaction.atomic
def accept_proposal(
    *, proposal: Proposal, user: Any = None, name: str = "", definition: str = ""
) -> Category:
    """Accept a proposal: it becomes a category of the codebook's draft (started from the
    published version when there is none), under the proposed parent."""
    proposal = _lock_open(proposal)
    draft = start_draft(codebook=proposal.facet.version.codebook, user=user)
    facet = draft.facets.filter(key=proposal.facet.key).first()
    if facet is None:
        raise CodebookError(f"the draft has no facet {proposal.facet.key!r} any more")
    parent = _counterpart(proposal.parent, draft) if proposal.parent else None
    category = add_category(
        facet=facet,
        name=name.strip() or proposal.name,
        parent=parent,
        user=user,
        definition=definition.strip() or proposal.rationale,
        detail={"proposal": proposal.pk},
    )
    _resolve(proposal, Proposal.Status.ACCEPTED, user, category, "")
    return category


@transaction.atomic
def map_proposal(
    *, proposal: Proposal, category: Category, user: Any = None, reason: str = ""
) -> Proposal:
    """Resolve a proposal by pointing to an existing category of the same facet."""
    proposal = _lock_open(proposal)
    same_codebook = category.facet.version.codebook_id == proposal.facet.version.codebook_id
    if not same_codebook or category.facet.key != proposal.facet.key:
        raise CodebookError("field 'category': choose a category of the proposal's facet")
    return _resolve(proposal, Proposal.Status.MAPPED, user, category, reason)


@transaction.atomic
def reject_proposal(*, proposal: Proposal, reason: str, user: Any = None) -> Proposal:
    """Reject a proposal; the reason is shown to the annotator who made it."""
    proposal = _lock_open(proposal)
    if not reason.strip():
        raise CodebookError("field 'reason': say why the proposal is rejected")
    return _resolve(proposal, Proposal.Status.REJECTED, user, None, reason)


def _lock_open(proposal: Proposal) -> Proposal:
    proposal = (
        Proposal.objects.select_for_update().select_related("facet__version").get(pk=proposal.pk)
    )
    if proposal.status != Proposal.Status.OPEN:
        raise CodebookError(f"the proposal {proposal.name!r} is {proposal.status} already")
    return proposal


def _resolve(
    proposal: Proposal, status: str, user: Any, category: Category | None, reason: str
) -> Proposal:
    proposal.status, proposal.resolved_to, proposal.reason = status, category, reason.strip()
    proposal.resolved_by, proposal.resolved_at = _user(user), timezone.now()
    proposal.save()
    return proposal


def _counterpart(category: Category, draft: CodebookVersion) -> Category | None:
    """The draft's copy of `category` (or itself when it is in the draft)."""
    if category.facet.version_id == draft.pk:
        return category
    return Category.objects.filter(facet__version=draft, origin=category).first()


@dataclass
class FacetProposalCounts:
    facet: Facet
    open: int
    accepted: int
    mapped: int
    rejected: int
    other_labels: int

    @property
    def total(self) -> int:
        return self.open + self.accepted + self.mapped + self.rejected


def proposal_counts(*, codebook: Codebook, viewer: Any) -> list[FacetProposalCounts]:
    """Per facet of the latest version: proposals by status (over all versions) and how many
    submitted labels use an "other" category (code `other` or ending in `-other`). As the
    proposals page lists them: the codebook's owners count every proposal, anyone else their
    own; "other" labels are counted in the studies `viewer` owns only (staff: all)."""
    version = codebook.latest_published() or codebook.draft()
    if version is None:
        return []
    proposals = Proposal.objects.filter(facet__version__codebook=codebook)
    if not codebook.can_edit(viewer):
        mine = getattr(viewer, "is_authenticated", False)
        proposals = proposals.filter(proposed_by=viewer.pk) if mine else proposals.none()
    by_status = {
        (row["facet__key"], row["status"]): row["n"]
        for row in proposals.values("facet__key", "status").annotate(n=Count("pk"))
    }
    others = Category.objects.filter(OTHER_CODES, facet__version=version).values_list(
        "pk", "facet__key"
    )
    usage = label_usage().count_labels([pk for pk, _ in others], viewer=viewer)
    other_by_facet: dict[str, int] = {}
    for pk, key in others:
        other_by_facet[key] = other_by_facet.get(key, 0) + usage.get(pk, 0)
    return [
        FacetProposalCounts(
            facet=facet,
            other_labels=other_by_facet.get(facet.key, 0),
            **{s: by_status.get((facet.key, s), 0) for s in Proposal.Status.values},
        )
        for facet in version.facets.all()
    ]
