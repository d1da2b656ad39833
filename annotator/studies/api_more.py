"""More of the studies API: study update, rounds, items, one's own assignments, selection
records and invitation links. Same style as `api.py`: one view per operation, small
Input/Output serializers, writes through the services, role checks by membership (404 for
non-members and for roles that may not see a list).

Blindness: nothing here carries labels. The item list (with its counters) is for owners and
adjudicators; an annotator lists only their own assignments.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .access import MANAGERS, SEE_ALL
from .api import RoundOutput, SelectionOutput, StudyOutput, _membership, _refuse, unsure_of
from .errors import StudyError
from .models import Assignment, Invitation, Item, Membership, Round, Selection, Study
from .services.studies import MAX_INVITATION_DAYS

Role = Membership.Role
ITEM_STATES = ["unassigned", "in progress", "complete"]  # ItemQuerySet.with_state


# --- serializers ------------------------------------------------------------------------------
class StudyUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    guidelines = serializers.CharField(required=False, allow_blank=True)
    route_unsure_to_adjudication = serializers.BooleanField(
        required=False,
        help_text="send items with an unsure label to adjudication even when the annotators "
        "agree; a change applies at once to complete items no person decided",
    )


class RoundInput(serializers.Serializer):
    # a plain string (the service checks it): a second "kind" enum would collide in the schema
    kind = serializers.CharField(default=Round.Kind.MAIN, help_text=" | ".join(Round.Kind.values))


class IssueRefOutput(serializers.Serializer):
    id = serializers.IntegerField()
    repository = serializers.CharField(source="repository.full_name")
    number = serializers.IntegerField()
    title = serializers.CharField()


class ItemFilterInput(serializers.Serializer):
    round = serializers.IntegerField(required=False, help_text="round id")
    state = serializers.ChoiceField(choices=ITEM_STATES, required=False)


class ItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    round = RoundOutput()
    issue = IssueRefOutput()
    state = serializers.CharField(help_text=" | ".join(ITEM_STATES))
    quota = serializers.IntegerField()
    active_count = serializers.IntegerField()
    submitted_count = serializers.IntegerField()
    released_at = serializers.DateTimeField(allow_null=True)


class MyAssignmentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text=" | ".join(Assignment.Status.values))
    item = serializers.IntegerField(source="item_id")
    round = RoundOutput(source="item.round")
    issue = IssueRefOutput(source="item.issue")
    assigned_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(source="annotation.submitted_at", allow_null=True)
    unsure = serializers.SerializerMethodField(help_text="keys of the facets marked unsure")

    def get_unsure(self, assignment: Assignment) -> list[str]:
        return unsure_of(assignment)


class SelectionRecordOutput(SelectionOutput):
    sampled = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class InvitationInput(serializers.Serializer):
    role = serializers.ChoiceField(
        choices=[Role.ANNOTATOR, Role.ADJUDICATOR], default=Role.ANNOTATOR
    )
    days = serializers.IntegerField(
        min_value=1,
        max_value=MAX_INVITATION_DAYS,
        required=False,
        allow_null=True,
        default=None,
        help_text="the link works this many days; default STUDIES_INVITATION_DAYS (14)",
    )
    max_uses = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=1,
        help_text="how many people may join by it (default 1); null: no limit",
    )


class InvitationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.CharField()
    token = serializers.CharField()
    url = serializers.SerializerMethodField(
        help_text="the join link (sign up on it, or log in and join)"
    )
    uses = serializers.IntegerField()
    max_uses = serializers.IntegerField(allow_null=True, help_text="null: no limit")
    uses_left = serializers.IntegerField(allow_null=True, help_text="null: no limit")
    expires_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    live = serializers.SerializerMethodField(help_text="whether the link still makes members")
    created_at = serializers.DateTimeField()

    def get_live(self, invitation: Invitation) -> bool:
        return not invitation.refusal()

    def get_url(self, invitation: Invitation) -> str:
        request = self.context.get("request")
        path = invitation.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else path


# --- study ------------------------------------------------------------------------------------
class StudyUpdateApi(APIView):
    """Rename the study, rewrite its guidelines or turn the routing of unsure labels to
    adjudication on or off (owner only); omitted fields are kept."""

    @extend_schema(request=StudyUpdateInput, responses=StudyOutput)
    def patch(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, MANAGERS).study
        data = StudyUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        try:
            study = services.update_study(
                study=study,
                name=values.get("name", study.name),
                guidelines=values.get("guidelines", study.guidelines),
                overlap_k=study.overlap_k,
                route_unsure_to_adjudication=values.get("route_unsure_to_adjudication"),
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(StudyOutput(study).data)


# --- rounds -----------------------------------------------------------------------------------
class RoundListApi(generics.ListAPIView):
    """The study's rounds (members)."""

    serializer_class = RoundOutput

    def get_queryset(self) -> QuerySet[Round]:
        study = _membership(self.request, self.kwargs["study_id"]).study
        return Round.objects.filter(study=study).order_by("number")


class RoundCreateApi(APIView):
    """Add the study's next round (owner only)."""

    @extend_schema(request=RoundInput, responses={201: RoundOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, MANAGERS).study
        data = RoundInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            round = services.create_round(study=study, kind=data.validated_data["kind"])
        except StudyError as error:
            raise _refuse(error) from error
        return Response(RoundOutput(round).data, status=status.HTTP_201_CREATED)


class RoundCloseApi(APIView):
    """Close the study's round `number` for good (owner only): no more assignments (those in
    progress become skipped), no quota change, no draft or submit. Closing a closed round
    answers with it as it is."""

    @extend_schema(request=None, responses={200: RoundOutput})
    def post(self, request: Request, study_id: int, number: int) -> Response:
        study = _membership(request, study_id, {Role.OWNER}).study
        round = Round.objects.filter(study=study, number=number).first()
        if round is None:
            raise NotFound("no such round in this study")
        return Response(RoundOutput(services.close_round(round=round)).data)


# --- items ------------------------------------------------------------------------------------
class ItemListApi(generics.ListAPIView):
    """The study's items with their state from the counters (owners and adjudicators), in
    labeling order; filter by `round` (id) and `state`."""

    serializer_class = ItemOutput

    @extend_schema(parameters=[ItemFilterInput])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Item]:
        study = _membership(self.request, self.kwargs["study_id"], SEE_ALL).study
        filters = ItemFilterInput(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        items = (
            Item.objects.filter(study=study)
            .with_state()
            .select_related("round", "issue__repository")
            .order_by("round__number", "position", "pk")
        )
        if "round" in filters.validated_data:
            items = items.filter(round_id=filters.validated_data["round"])
        if "state" in filters.validated_data:
            # "state" is with_state()'s annotation, which the plugin cannot see through a method
            items = items.filter(state=filters.validated_data["state"])  # type: ignore[misc]
        return items


# --- assignments ------------------------------------------------------------------------------
class MyAssignmentListApi(generics.ListAPIView):
    """The caller's own assignments in the study (any member; nobody else's)."""

    serializer_class = MyAssignmentOutput

    def get_queryset(self) -> QuerySet[Assignment]:
        study = _membership(self.request, self.kwargs["study_id"]).study
        return (
            Assignment.objects.filter(item__study=study, annotator_id=self.request.user.pk)
            .select_related("item__round", "item__issue__repository", "annotation")
            .order_by("assigned_at", "pk")
        )


# --- selections -------------------------------------------------------------------------------
class SelectionListApi(generics.ListAPIView):
    """How issues were added to the study: filters, counts, sample, seed (members)."""

    serializer_class = SelectionRecordOutput

    def get_queryset(self) -> QuerySet[Selection]:
        study = _membership(self.request, self.kwargs["study_id"]).study
        return Selection.objects.filter(study=study).order_by("created_at", "pk")


# --- invitations ------------------------------------------------------------------------------
class InvitationListApi(generics.ListAPIView):
    """The study's invitation links (owner only)."""

    serializer_class = InvitationOutput

    def get_queryset(self) -> QuerySet[Invitation]:
        study: Study = _membership(self.request, self.kwargs["study_id"], MANAGERS).study
        return Invitation.objects.filter(study=study).order_by("created_at", "pk")


class InvitationCreateApi(APIView):
    """Make a join link for an annotator or adjudicator (owner only)."""

    @extend_schema(request=InvitationInput, responses={201: InvitationOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, MANAGERS).study
        data = InvitationInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            invitation = services.create_invitation(
                study=study, user=request.user, **data.validated_data
            )
        except StudyError as error:
            raise _refuse(error) from error
        out = InvitationOutput(invitation, context={"request": request})
        return Response(out.data, status=status.HTTP_201_CREATED)


class InvitationRevokeApi(APIView):
    """Revoke one of the study's links (owner only); again: the first date is kept."""

    @extend_schema(request=None, responses=InvitationOutput)
    def post(self, request: Request, study_id: int, token: str) -> Response:
        study = _membership(request, study_id, MANAGERS).study
        try:
            invitation = services.revoke_invitation(study=study, token=token)
        except Invitation.DoesNotExist:
            raise NotFound("no such invitation in this study") from None
        return Response(InvitationOutput(invitation, context={"request": request}).data)
