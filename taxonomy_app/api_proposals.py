"""REST API for proposals (open coding): annotators propose, owners accept, map or reject."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from . import serializers as s
from . import services
from .api import require_owner, run, valid
from .models import Proposal


@extend_schema(
    parameters=[
        OpenApiParameter("codebook", int, description="proposals of this codebook"),
        OpenApiParameter("facet", str, description="facet key"),
        OpenApiParameter("status", enum=Proposal.Status.values),
    ]
)
class ProposalListApi(generics.ListCreateAPIView):
    """Proposals, newest first: all of the codebooks the caller owns, and the caller's own
    elsewhere (a proposal names an issue and a category: annotators stay blind to each
    other's); POST records a new one (any annotator)."""

    serializer_class = s.ProposalOutput

    def get_queryset(self) -> QuerySet[Proposal]:
        params = self.request.query_params
        proposals = Proposal.objects.select_related("facet")
        user = self.request.user
        if not user.is_staff:
            proposals = proposals.filter(
                Q(proposed_by=user.pk) | Q(facet__version__codebook__created_by=user.pk)
            )
        if params.get("codebook", "").isdigit():
            proposals = proposals.filter(facet__version__codebook_id=int(params["codebook"]))
        if params.get("facet"):
            proposals = proposals.filter(facet__key=params["facet"])
        if params.get("status") in Proposal.Status.values:
            proposals = proposals.filter(status=params["status"])
        return proposals

    @extend_schema(request=s.ProposalInput, responses={201: s.ProposalOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = valid(s.ProposalInput, request)
        proposal = run(services.create_proposal, user=request.user, **data)
        return Response(s.ProposalOutput(proposal).data, status=status.HTTP_201_CREATED)


class ProposalApiView(generics.GenericAPIView):
    serializer_class = s.ProposalOutput
    queryset = Proposal.objects.select_related("facet__version__codebook")

    def owned(self, request: Request) -> Proposal:
        proposal = self.get_object()
        require_owner(request, proposal.facet.version.codebook)
        return proposal


class ProposalAcceptApi(ProposalApiView):
    """Accept: the proposal becomes a category of the codebook's draft."""

    @extend_schema(request=s.AcceptInput, responses={200: s.CategoryOutput})
    def post(self, request: Request, pk: int) -> Response:
        proposal = self.owned(request)
        data = valid(s.AcceptInput, request)
        category = run(services.accept_proposal, proposal=proposal, user=request.user, **data)
        return Response(s.CategoryOutput(category).data)


class ProposalMapApi(ProposalApiView):
    """Resolve by pointing to an existing category of the same facet."""

    @extend_schema(request=s.MapInput, responses={200: s.ProposalOutput})
    def post(self, request: Request, pk: int) -> Response:
        proposal = self.owned(request)
        data = valid(s.MapInput, request)
        proposal = run(services.map_proposal, proposal=proposal, user=request.user, **data)
        return Response(s.ProposalOutput(proposal).data)


class ProposalRejectApi(ProposalApiView):
    """Reject with a reason (required)."""

    @extend_schema(request=s.RejectInput, responses={200: s.ProposalOutput})
    def post(self, request: Request, pk: int) -> Response:
        proposal = self.owned(request)
        data = valid(s.RejectInput, request)
        proposal = run(services.reject_proposal, proposal=proposal, user=request.user, **data)
        return Response(s.ProposalOutput(proposal).data)
