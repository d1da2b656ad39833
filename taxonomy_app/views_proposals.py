"""The owner's proposals queue: counts per facet, and accept / map / reject for each."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from . import services
from .errors import CodebookError
from .forms import ProposalForm, ResolveForm, add_service_error
from .models import Codebook, Facet, Proposal
from .views import posted, require_owner


@require_http_methods(["GET", "POST"])
def proposal_list(request: HttpRequest, pk: int) -> HttpResponse:
    """Open proposals first with their resolve forms, then the resolved ones; anyone can
    propose with the form at the bottom. Owners see every proposal; anyone else only their own,
    since a proposal names the issue and the category an annotator had in mind (blind
    labeling: another annotator of the same item must not read it)."""
    codebook = get_object_or_404(Codebook, pk=pk)
    version = codebook.latest_published() or codebook.draft()
    facets = Facet.objects.filter(version=version)
    form = ProposalForm(posted(request), facets=facets)
    if request.method == "POST" and form.is_valid():
        try:
            services.create_proposal(user=request.user, **form.cleaned_data)
        except CodebookError as error:
            add_service_error(form, error)
        else:
            messages.success(request, "Thank you: the proposal is in the owner's queue.")
            return redirect("taxonomy:proposals", pk=codebook.pk)
    proposals = Proposal.objects.filter(facet__version__codebook=codebook).select_related(
        "facet", "parent", "resolved_to", "proposed_by", "resolved_by"
    )
    if not codebook.can_edit(request.user):
        proposals = proposals.filter(proposed_by=request.user.pk)
    open_ = [
        (p, ResolveForm(facet=p.facet, prefix=f"p{p.pk}")) for p in proposals if p.status == "open"
    ]
    context = {
        "codebook": codebook,
        "counts": services.proposal_counts(codebook=codebook, viewer=request.user),
        "open": open_,
        "resolved": [p for p in proposals if p.status != "open"],
        "form": form,
        "can_edit": codebook.can_edit(request.user),
    }
    return render(
        request, "taxonomy_app/proposal_list.html", context, status=400 if form.errors else 200
    )


@require_POST
def proposal_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal.objects.select_related("facet__version__codebook"), pk=pk)
    codebook = proposal.facet.version.codebook
    require_owner(request, codebook)
    form = ResolveForm(request.POST, facet=proposal.facet, prefix=f"p{proposal.pk}")
    back = reverse("taxonomy:proposals", args=[codebook.pk]) + f"#proposal-{proposal.pk}"
    if not form.is_valid():
        messages.error(request, "Choose accept, map or reject.")
        return redirect(back)
    try:
        messages.success(request, _resolve(proposal, form, request.user))
    except CodebookError as error:
        messages.error(request, f"{proposal.name}: {error}")
    return redirect(back)


def _resolve(proposal: Proposal, form: ResolveForm, user: object) -> str:
    action, data = form.cleaned_data["action"], form.cleaned_data
    if action == "accept":
        category = services.accept_proposal(proposal=proposal, user=user)
        number = category.facet.version.number
        return f"Accepted {proposal.name}: it is {category.code} in draft v{number}."
    if action == "map":
        if data["category"] is None:
            raise CodebookError("choose the category to map it to")
        services.map_proposal(
            proposal=proposal, category=data["category"], user=user, reason=data["reason"]
        )
        return f"Mapped {proposal.name} to {data['category'].name}."
    services.reject_proposal(proposal=proposal, reason=data["reason"], user=user)
    return f"Rejected {proposal.name}."
