"""REST API for agreement: start a run, read a run (status, progress, result) and list a
study's runs. Owners and adjudicators only; anyone else gets 404 (as the studies API does),
because a result shows every annotator's labels side by side."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.studies.models import Membership, Round

from .models import AgreementRun
from .services import AgreementError, start_agreement_run

SEE_ALL = {Membership.Role.OWNER, Membership.Role.ADJUDICATOR}


def _membership(request: Request, study_id: int) -> Membership:
    membership = (
        Membership.objects.select_related("study")
        .filter(study_id=study_id, user=request.user, role__in=SEE_ALL)
        .first()
    )
    if membership is None:
        raise Http404
    return membership


class RunInput(serializers.Serializer):  # type: ignore[misc]  # DRF ships no types
    round = serializers.IntegerField(required=False, help_text="round number; default: all")
    facets = serializers.ListField(
        child=serializers.SlugField(), required=False, default=list, help_text="facet keys"
    )


class RunOutput(serializers.ModelSerializer):  # type: ignore[misc]
    round = serializers.IntegerField(source="round.number", allow_null=True, default=None)

    class Meta:
        model = AgreementRun
        fields = [
            "id", "study", "round", "facets", "codebook_version", "trigger", "status", "progress",
            "error", "created_at", "started_at", "finished_at", "inputs", "result",
        ]  # fmt: skip


class RunSummaryOutput(RunOutput):
    class Meta(RunOutput.Meta):
        fields = [f for f in RunOutput.Meta.fields if f not in {"inputs", "result"}]


class RunListCreateApi(APIView):  # type: ignore[misc]
    @extend_schema(responses=RunSummaryOutput(many=True))
    def get(self, request: Request, study_id: int) -> Response:
        _membership(request, study_id)
        runs = AgreementRun.objects.filter(study_id=study_id).select_related("round")[:100]
        return Response(RunSummaryOutput(runs, many=True).data)

    @extend_schema(request=RunInput, responses={202: RunOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id).study
        data = RunInput(data=request.data)
        data.is_valid(raise_exception=True)
        round = None
        if "round" in data.validated_data:
            round = Round.objects.filter(study=study, number=data.validated_data["round"]).first()
            if round is None:
                raise ValidationError({"round": "the study has no round with this number"})
        try:
            run = start_agreement_run(
                study=study, round=round, facets=data.validated_data["facets"],
                user=request.user, trigger=AgreementRun.Trigger.API,
            )  # fmt: skip
        except AgreementError as error:
            raise ValidationError({"detail": str(error)}) from error
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(generics.RetrieveAPIView):  # type: ignore[misc]
    serializer_class = RunOutput

    def get_object(self) -> AgreementRun:
        run = AgreementRun.objects.select_related("round").filter(pk=self.kwargs["run_id"]).first()
        if run is None:
            raise Http404
        _membership(self.request, run.study_id)
        return run
