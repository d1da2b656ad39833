"""The screening API: declare a screening round, read its stopping panel, retrain, draw the
audit, take the included issues into a later round. One view per operation, the same services
as the pages; owners write, owners and adjudicators read (counts only, no screener's label)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.studies.access import MANAGERS, SEE_ALL, membership_or_404
from annotator.studies.models import Round, Selection
from annotator.studies.services import StudyError, create_round

from . import services
from .models import MODELS, RetrainJob, ScreeningPlan
from .panel import screening_panel


def _refuse(error: StudyError) -> ValidationError:
    return ValidationError({"detail": str(error)})


def _plan(request: Request, study_id: int, number: int, roles: Any) -> ScreeningPlan:
    study = membership_or_404(request, study_id, roles).study
    plan = (
        ScreeningPlan.objects.select_related("round__study", "relevant_category__facet")
        .filter(round__study=study, round__number=number, round__kind=Round.Kind.SCREENING)
        .first()
    )
    if plan is None:
        raise NotFound("no such screening round in this study")
    return plan


class PlanInput(serializers.Serializer[None]):
    relevant_category = serializers.IntegerField(
        required=False, help_text="category id; default: the screening facet's 'relevant'"
    )
    prioritised = serializers.BooleanField(default=True)
    model = serializers.CharField(default="tfidf-svm", help_text=" | ".join(MODELS))
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    retrain_every = serializers.IntegerField(default=10)
    target_recall = serializers.FloatField(default=0.95)
    alpha = serializers.FloatField(default=0.05)
    looks = serializers.IntegerField(default=1)


class PanelOutput(serializers.Serializer[dict[str, Any]]):
    """The stopping panel (`panel.Panel.as_json`)."""

    round = serializers.IntegerField()
    prioritised = serializers.BooleanField()
    relevant_category = serializers.DictField()
    rule = serializers.DictField(help_text="target_recall, alpha, looks, declared_at, text")
    prisma = serializers.DictField(
        help_text="candidates, duplicates_removed, screened, audited, included, excluded, "
        "not_screened"
    )
    screened = serializers.IntegerField()
    relevant_found = serializers.IntegerField()
    decisions_since_last_relevant = serializers.IntegerField()
    relevant_curve = serializers.ListField(child=serializers.IntegerField())
    audit = serializers.DictField(allow_null=True)
    stopping = serializers.DictField(
        allow_null=True, help_text="stop, p_value, level, recall, recall_ci95, k_target"
    )
    verdict = serializers.CharField()
    suggested_audit_size = serializers.IntegerField(allow_null=True)
    models = serializers.ListField(child=serializers.DictField())


class RetrainOutput(serializers.ModelSerializer[RetrainJob]):
    screening_model = serializers.IntegerField(
        source="screening_model.version", allow_null=True, default=None
    )

    class Meta:
        model = RetrainJob
        fields = ["id", "status", "reason", "progress", "error", "created_at", "finished_at"]
        fields += ["screening_model"]


class AuditInput(serializers.Serializer[None]):
    size = serializers.IntegerField(min_value=1)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class IncludeInput(serializers.Serializer[None]):
    round = serializers.IntegerField(
        required=False, allow_null=True, help_text="round number; empty: a new main round"
    )
    sample_size = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class IncludedSelectionOutput(serializers.Serializer[Selection]):
    id = serializers.IntegerField()
    round = serializers.IntegerField(source="round.number")
    sampled = serializers.IntegerField()
    sample_size = serializers.IntegerField(allow_null=True)
    seed = serializers.IntegerField(allow_null=True)
    source = serializers.DictField()  # type: ignore[assignment]
    method_text = serializers.CharField()


class ScreeningRoundCreateApi(APIView):
    """A new screening round with its plan and stopping rule declared (owner only)."""

    @extend_schema(request=PlanInput, responses={201: PanelOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = membership_or_404(request, study_id, MANAGERS).study
        data = PlanInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            plan = services.start_screening_round(
                study=study, user=request.user, **data.validated_data
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(screening_panel(plan).as_json(), status=status.HTTP_201_CREATED)


class ScreeningPanelApi(APIView):
    """The stopping panel of screening round `number`: screened, relevant found, the curve,
    the audit, the Callaghan & Müller-Hansen test and the PRISMA-style counts."""

    @extend_schema(responses={200: PanelOutput})
    def get(self, request: Request, study_id: int, number: int) -> Response:
        plan = _plan(request, study_id, number, SEE_ALL)
        return Response(screening_panel(plan).as_json())


class ScreeningPlanApi(APIView):
    """Declare the round's plan again (owner only): refused once it has a decision."""

    @extend_schema(request=PlanInput, responses={200: PanelOutput})
    def put(self, request: Request, study_id: int, number: int) -> Response:
        plan = _plan(request, study_id, number, MANAGERS)
        data = PlanInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            plan = services.declare_screening(
                round=plan.round, user=request.user, **data.validated_data
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(screening_panel(plan).as_json())


class ScreeningRetrainApi(APIView):
    """Queue a retrain now (owner only; the one queued or running, if any)."""

    @extend_schema(request=None, responses={202: RetrainOutput})
    def post(self, request: Request, study_id: int, number: int) -> Response:
        plan = _plan(request, study_id, number, MANAGERS)
        try:
            job = services.request_retrain(round=plan.round, user=request.user)
        except StudyError as error:
            raise _refuse(error) from error
        return Response(RetrainOutput(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: RetrainOutput(many=True)})
    def get(self, request: Request, study_id: int, number: int) -> Response:
        """The round's retrain jobs, latest first (the last 20)."""
        plan = _plan(request, study_id, number, SEE_ALL)
        jobs = RetrainJob.objects.filter(round=plan.round).select_related("screening_model")
        return Response(RetrainOutput(jobs.order_by("-created_at", "-pk")[:20], many=True).data)


class ScreeningAuditApi(APIView):
    """Draw the random audit of the unscreened pool, or extend it to `size` (owner only)."""

    @extend_schema(request=AuditInput, responses={200: PanelOutput})
    def post(self, request: Request, study_id: int, number: int) -> Response:
        plan = _plan(request, study_id, number, MANAGERS)
        data = AuditInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.draw_audit(round=plan.round, user=request.user, **data.validated_data)
        except StudyError as error:
            raise _refuse(error) from error
        return Response(screening_panel(plan).as_json())


class ScreeningIncludeApi(APIView):
    """Add the included issues to a later round: all, or a seeded random sample (owner)."""

    @extend_schema(request=IncludeInput, responses={201: IncludedSelectionOutput})
    def post(self, request: Request, study_id: int, number: int) -> Response:
        plan = _plan(request, study_id, number, MANAGERS)
        data = IncludeInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        study = plan.round.study
        try:
            if values.get("round") is None:
                target = create_round(study=study)
            else:
                found = study.rounds.filter(number=values["round"]).first()
                if found is None:
                    raise StudyError(f"field 'round': no round {values['round']} in this study")
                target = found
            selection = services.select_included(
                screening_round=plan.round,
                round=target,
                sample_size=values.get("sample_size"),
                seed=values.get("seed"),
                user=request.user,
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(IncludedSelectionOutput(selection).data, status=status.HTTP_201_CREATED)
