# ruff: noqa: RUF001, RUF003 -- α and κ in help texts.
"""REST API for agreement: start a run, read a run (status, progress, result), list a
study's runs, read/set the calibration threshold and mark a round passed. Owners and
adjudicators only (threshold and pass: owners write); anyone else gets 404 (as the studies API
does), because a result shows every annotator's labels side by side."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.dispatch import with_queue_notice
from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.models import Membership, Round
from annotator.studies.rounds import asked_round

from .models import AgreementRun, CalibrationPass
from .services import (
    AgreementError,
    calibration_verdict,
    mark_calibration_passed,
    set_threshold,
    start_agreement_run,
    study_threshold,
)
from .threshold import Judgement, Verdict


def _membership(request: Request, study_id: int) -> Membership:
    return membership_or_404(request, study_id, SEE_ALL)


# A serializer's type argument is the instance it reads: the model (or the dict) an output
# serializes; None for the inputs, which only validate request data.
class RunInput(serializers.Serializer[None]):
    round = serializers.IntegerField(required=False, help_text="round number; default: all")
    facets = serializers.ListField(
        child=serializers.SlugField(), required=False, default=list, help_text="facet keys"
    )


class JudgementOutput(serializers.Serializer[Judgement]):
    facet = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="the headline coefficient")
    low = serializers.FloatField(allow_null=True, help_text="lower bound of its 95% CI")
    high = serializers.FloatField(allow_null=True, help_text="upper bound of its 95% CI")
    meets = serializers.BooleanField(
        allow_null=True, help_text="lower bound ≥ threshold; null: undefined, not judged"
    )
    text = serializers.CharField(help_text='e.g. "meets α ≥ 0.8: lower bound 0.81 of the 95% CI"')


class VerdictOutput(serializers.Serializer[Verdict]):
    threshold = serializers.FloatField()
    rule = serializers.CharField()
    passes = serializers.BooleanField(help_text="whether the round can pass calibration")
    reason = serializers.CharField()
    lowest_low = serializers.FloatField(allow_null=True)
    facets = JudgementOutput(many=True, source="judgements")


RESULT_HELP = (
    "The stored result: `schema` (2), `conventions` (population, missing ratings, AC1's q for "
    "single, multi-choice and hierarchical facets, headline, interval method, bootstrap, pairwise "
    "κ, threshold rule; absent from schema-1 results), `raters` and per facet `coefficients` "
    "(value, se, ci, p_o, p_e, q, extra.q_rule, n_pairable_units, ...), `design`, "
    "`per_category`, `levels` (α and AC1 per hierarchy level), `pairwise_cohen` (`cells`: the "
    "κ matrix; `pairs`: per annotator pair n, p_o, p_e, kappa, se, ci) and `confusion`; "
    "when a machine rater answered in scope, `partitions` (human–human, human–machine, "
    "machine–machine, pooled, the substitution test with its verdict, per facet)."
)


class RunOutput(serializers.ModelSerializer[AgreementRun]):
    round = serializers.IntegerField(source="round.number", allow_null=True, default=None)
    calibration = serializers.SerializerMethodField(
        help_text="each facet judged against the study's threshold on its 95% CI's lower bound"
    )

    class Meta:
        model = AgreementRun
        fields = [
            "id",
            "study",
            "round",
            "facets",
            "codebook_version",
            "trigger",
            "status",
            "progress",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "inputs",
            "result",
            "calibration",
        ]
        extra_kwargs = {"result": {"help_text": RESULT_HELP}}

    @extend_schema_field(VerdictOutput(allow_null=True))
    def get_calibration(self, run: AgreementRun) -> dict[str, Any] | None:
        if not run.result:
            return None
        return dict(VerdictOutput(calibration_verdict(run)).data)


class RunSummaryOutput(RunOutput):
    calibration = None  # type: ignore[assignment]

    class Meta(RunOutput.Meta):
        fields = [f for f in RunOutput.Meta.fields if f not in {"inputs", "result", "calibration"}]


class RunListCreateApi(APIView):
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
                study=study,
                round=round,
                facets=data.validated_data["facets"],
                user=request.user,
                trigger=AgreementRun.Trigger.API,
            )
        except AgreementError as error:
            raise ValidationError({"detail": str(error)}) from error
        body = with_queue_notice(RunOutput(run).data, run)
        return Response(body, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(generics.RetrieveAPIView[AgreementRun]):
    serializer_class = RunOutput

    def get_object(self) -> AgreementRun:
        run = AgreementRun.objects.select_related("round").filter(pk=self.kwargs["run_id"]).first()
        if run is None:
            raise Http404
        _membership(self.request, run.study_id)
        return run


def _owner_study(request: Request, study_id: int) -> Membership:
    membership = _membership(request, study_id)
    if membership.role != Membership.Role.OWNER:
        raise Http404
    return membership


class AgreementSettingsOutput(serializers.Serializer[dict[str, Any]]):
    study = serializers.IntegerField(read_only=True)
    threshold = serializers.FloatField(
        help_text="the alpha a round must reach to pass calibration, in (0, 1]"
    )


class AgreementSettingsInput(serializers.Serializer[None]):
    threshold = serializers.FloatField(
        min_value=0,
        max_value=1,
        help_text="the alpha a round must reach to pass calibration, in (0, 1]",
    )

    def validate_threshold(self, value: float) -> float:
        if not 0 < value <= 1:
            raise serializers.ValidationError("the threshold is an alpha in (0, 1]")
        return value


class AgreementSettingsApi(APIView):
    """The study's calibration threshold: owners and adjudicators read it, owners change it."""

    @extend_schema(responses=AgreementSettingsOutput)
    def get(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id).study
        return Response({"study": study.pk, "threshold": study_threshold(study)})

    @extend_schema(request=AgreementSettingsInput, responses=AgreementSettingsOutput)
    def put(self, request: Request, study_id: int) -> Response:
        study = _owner_study(request, study_id).study
        data = AgreementSettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            row = set_threshold(study=study, threshold=data.validated_data["threshold"])
        except AgreementError as error:
            raise ValidationError({"threshold": str(error)}) from error
        return Response({"study": study.pk, "threshold": row.threshold})


class CalibrationPassOutput(serializers.ModelSerializer[CalibrationPass]):
    round = serializers.IntegerField(source="round.number")

    class Meta:
        model = CalibrationPass
        fields = ["round", "run", "threshold", "lowest_alpha", "lowest_ci_low", "passed_at"]


class CalibrationPassConflict(serializers.Serializer[dict[str, str]]):
    detail = serializers.CharField()


class CalibrationPassApi(APIView):
    """Mark a round passed calibration from its latest succeeded run; refused (409) when that
    run does not meet the study's threshold — the rule of the report page and the database."""

    @extend_schema(
        request=None, responses={201: CalibrationPassOutput, 409: CalibrationPassConflict}
    )
    def post(self, request: Request, study_id: int, round_id: int) -> Response:
        study = _owner_study(request, study_id).study
        round = Round.objects.filter(study=study, pk=round_id).first()
        if round is None:
            raise Http404
        run = (
            AgreementRun.objects.succeeded()
            .filter(round=round)
            .select_related("round", "study")
            .order_by("-created_at", "-pk")
            .first()
        )
        if run is None:
            message = f"round {round.number} has no finished agreement run; start one first"
            return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
        try:
            passed = mark_calibration_passed(run=run, user=request.user)
        except AgreementError as error:
            message = f"round {round.number} not passed (run {run.pk}): {error}"
            return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
        return Response(CalibrationPassOutput(passed).data, status=status.HTTP_201_CREATED)


class AnnotatorDiagnosticsApi(APIView):
    """Per-annotator diagnostics of one round (`?round=N`, default the last): the figures of
    the page /agreement/studies/<id>/annotators/, as the round's latest agreement run over every
    facet stored them, with that run's id (`run`) and finish time (`computed_at`). Before any
    run of the round computed them: `run` and `computed_at` null, no annotators or facets, a
    `detail` saying how to compute them (POST /api/studies/<id>/agreement-runs/ {"round": N})
    and `pending_run`, a run of the round queued or running. Owners only (404 otherwise): it
    sets every annotator's figures side by side."""

    @extend_schema(
        parameters=[OpenApiParameter("round", int, description="round number; default: last")],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, study_id: int) -> Response:
        from .annotators_service import stored_round_diagnostics

        study = _owner_study(request, study_id).study
        asked = asked_round(study, request.query_params.get("round"))
        round = asked.last if asked.number is None else asked.round
        if round is None:
            raise Http404
        stored = stored_round_diagnostics(round)
        if stored.report is not None:
            return Response(stored.report)
        detail = (
            f"No diagnostics computed for round {round.number} yet: start an agreement run of "
            f'the round (POST /api/studies/{study.pk}/agreement-runs/ {{"round": {round.number}}}).'
        )
        return Response(
            {
                "study": study.pk,
                "round": round.number,
                "run": None,
                "computed_at": None,
                "pending_run": stored.pending.pk if stored.pending else None,
                "annotators": [],
                "facets": [],
                "detail": detail,
            }
        )


class DriftApi(APIView):
    """Drift within a round (`?round=N`, default the last; `?window=SIZE`, default 10, at least
    5): headline alpha per window of pairable items and the recalibration prompt, the figures of
    the page /agreement/studies/<id>/drift/. At the default window, the figures the round's
    latest agreement run over every facet stored, with its id (`run`) and finish time
    (`computed_at`), judged against the study's threshold now; before any run of the round:
    `run` null, no windows or facets, a `detail` saying how to compute them and `pending_run`.
    Another window size is computed for the request. Owners and adjudicators (404 otherwise)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("round", int, description="round number; default: last"),
            OpenApiParameter("window", int, description="items per window; default 10, min 5"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, study_id: int) -> Response:
        from .drift_views import drift_params, drift_report

        study = _membership(request, study_id).study
        _, round, size = drift_params(study, request.query_params)
        report, stored = drift_report(study, round, size)
        if report is not None:
            return Response(report)
        detail = (
            f"No drift computed for round {round.number} yet: start an agreement run of the "
            f'round (POST /api/studies/{study.pk}/agreement-runs/ {{"round": {round.number}}}).'
        )
        pending = stored.pending if stored else None
        return Response(
            {
                "study": study.pk,
                "round": round.number,
                "window": size,
                "run": None,
                "computed_at": None,
                "pending_run": pending.pk if pending else None,
                "windows": [],
                "facets": [],
                "detail": detail,
            }
        )
