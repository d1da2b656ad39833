"""REST API of the machine rater: declare a rater on a study and list them, a run's cost and
token estimate, start a run (202; 409 past the concurrency limit) and list them, read a run.
The study's owner only; everyone else gets 404. Machine labels are not served here: they are
the owner's and adjudicators' to read on an item's page once its human labels are in."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.dispatch import with_queue_notice
from annotator.studies.access import MANAGERS, membership_or_404
from annotator.studies.models import Round

from . import services
from .access import rater_or_404, run_or_404
from .models import MachineRater, MachineRun


class RaterInput(serializers.Serializer[None]):
    name = serializers.CharField(max_length=100)
    model = serializers.CharField(max_length=200, help_text="the model id the server knows")
    base_url = serializers.URLField(
        required=False, allow_blank=True, default="", help_text="empty: LLM_BASE_URL"
    )
    parameters = serializers.DictField(
        required=False,
        default=dict,
        help_text="temperature, top_p, max_tokens, seed (those given are sent with every call)",
    )
    samples = serializers.IntegerField(min_value=1, max_value=20, default=1)
    token_budget = serializers.IntegerField(min_value=200, max_value=1_000_000, default=6000)


class RaterOutput(serializers.ModelSerializer[MachineRater]):
    class Meta:
        model = MachineRater
        fields = [
            "id",
            "study",
            "name",
            "base_url",
            "model",
            "parameters",
            "samples",
            "prompt_version",
            "token_budget",
            "created_at",
        ]


class MachineRunInput(serializers.Serializer[None]):
    round = serializers.IntegerField(help_text="round number")
    sample_size = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text="a seeded sample; empty: all"
    )
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class MachineRunOutput(serializers.ModelSerializer[MachineRun]):
    round = serializers.IntegerField(source="round.number")
    invalid_rate = serializers.SerializerMethodField(
        help_text="invalid answers / answers (labeled + invalid) of this run"
    )

    class Meta:
        model = MachineRun
        fields = [
            "id",
            "rater",
            "round",
            "sample_size",
            "seed",
            "status",
            "progress",
            "counts",
            "invalid_rate",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_invalid_rate(self, run: MachineRun) -> float | None:
        return services.invalid_rate(run.counts)


class RaterListCreateApi(APIView):
    @extend_schema(responses=RaterOutput(many=True))
    def get(self, request: Request, study_id: int) -> Response:
        membership_or_404(request, study_id, MANAGERS)
        raters = MachineRater.objects.filter(study_id=study_id)
        return Response(RaterOutput(raters, many=True).data)

    @extend_schema(request=RaterInput, responses={201: RaterOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = membership_or_404(request, study_id, MANAGERS).study
        data = RaterInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        if not services.configured() and not values["base_url"]:
            raise ValidationError(
                {"base_url": "no server: give the rater a base_url or set LLM_BASE_URL"}
            )
        try:
            rater = services.declare_rater(study=study, user=request.user, **values)
        except services.MachineError as error:
            raise ValidationError({"detail": str(error)}) from error
        return Response(RaterOutput(rater).data, status=status.HTTP_201_CREATED)


def _round(rater: MachineRater, number: Any) -> Round:
    if number is None or number == "":  # the estimate's default: the study's last round
        last = Round.objects.filter(study_id=rater.study_id).order_by("-number").first()
        if last is not None:
            return last
    try:
        found = Round.objects.filter(study_id=rater.study_id, number=int(number)).first()
    except (TypeError, ValueError):
        found = None
    if found is None:
        raise ValidationError({"round": f"the study has no round {number!r}"})
    return found


class EstimateOutput(serializers.Serializer[dict[str, int]]):
    items = serializers.IntegerField()
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField(help_text="estimated as characters / 4")
    sampled = serializers.IntegerField(
        help_text="items whose prompts were built: all, or 500 drawn at random and scaled up"
    )


class EstimateApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("round", OpenApiTypes.INT, description="default: the last round"),
            OpenApiParameter("sample_size", OpenApiTypes.INT),
        ],
        responses=EstimateOutput,
    )
    def get(self, request: Request, rater_id: int) -> Response:
        """Calls and prompt tokens a run would spend; nothing is sent."""
        rater = rater_or_404(request, rater_id)
        round = _round(rater, request.query_params.get("round"))
        size = request.query_params.get("sample_size") or None
        if size is not None and (not str(size).isdigit() or int(size) < 1):
            raise ValidationError({"sample_size": "a whole number of items, at least 1"})
        return Response(services.estimate(rater, round, int(size) if size else None))


class RunListCreateApi(APIView):
    @extend_schema(responses=MachineRunOutput(many=True))
    def get(self, request: Request, rater_id: int) -> Response:
        rater = rater_or_404(request, rater_id)
        return Response(MachineRunOutput(rater.runs.select_related("round")[:100], many=True).data)

    @extend_schema(
        request=MachineRunInput, responses={202: MachineRunOutput, 409: OpenApiTypes.OBJECT}
    )
    def post(self, request: Request, rater_id: int) -> Response:
        rater = rater_or_404(request, rater_id)
        data = MachineRunInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            run = services.start_run(
                rater=rater,
                round=_round(rater, values["round"]),
                sample_size=values.get("sample_size"),
                seed=values.get("seed"),
                user=request.user,
            )
        except services.ConcurrencyLimit as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        except services.MachineError as error:
            raise ValidationError({"detail": str(error)}) from error
        body = with_queue_notice(MachineRunOutput(run).data, run)
        return Response(body, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(APIView):
    @extend_schema(responses=MachineRunOutput)
    def get(self, request: Request, run_id: int) -> Response:
        run = run_or_404(request, run_id)
        if run is None:
            raise Http404
        return Response(MachineRunOutput(run).data)
