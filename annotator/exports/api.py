"""REST API for exports and analysis: start an export, read it, download its file and card,
read the analysis tables. Owners and adjudicators only; anyone else gets 404 (an export holds
every annotator's labels)."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.adjudication.models import Decision
from annotator.studies.models import Membership, Study

from .analysis import analysis_tables, study_final_labels
from .models import ExportJob
from .rows import ExportFilterError
from .services import start_export_job
from .views import CONTENT_TYPES

SEE_ALL = {Membership.Role.OWNER, Membership.Role.ADJUDICATOR}


def _study(request: Request, study_id: int) -> Study:
    membership = (
        Membership.objects.select_related("study")
        .filter(study_id=study_id, user=request.user, role__in=SEE_ALL)
        .first()
    )
    if membership is None:
        raise Http404
    return membership.study


def _job(request: Request, pk: int) -> ExportJob:
    job = ExportJob.objects.filter(pk=pk).first()
    if job is None:
        raise Http404
    _study(request, job.study_id)
    return job


class ExportInput(serializers.Serializer):  # type: ignore[misc]
    format = serializers.ChoiceField(choices=ExportJob.Format.values, default="csv")
    table = serializers.ChoiceField(choices=ExportJob.Table.values, default="final")
    round = serializers.IntegerField(required=False, min_value=1, help_text="round number")
    source = serializers.ChoiceField(choices=Decision.Source.values, required=False)
    screening = serializers.SlugField(required=False, help_text="screening category code")
    repository = serializers.CharField(required=False, max_length=201, help_text="OWNER/NAME")


class ExportOutput(serializers.ModelSerializer):  # type: ignore[misc]
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id", "study", "format", "table", "filters", "status", "error", "total_rows",
            "rows_written", "size_bytes", "created_at", "started_at", "finished_at",
            "download_url",
        ]  # fmt: skip

    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.SUCCEEDED:
            return None
        return f"/api/exports/{job.pk}/download/"


class ExportListCreateApi(APIView):  # type: ignore[misc]
    @extend_schema(responses=ExportOutput(many=True))
    def get(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        jobs = ExportJob.objects.filter(study=study)[:50]
        return Response(ExportOutput(jobs, many=True).data)

    @extend_schema(request=ExportInput, responses={202: ExportOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        data = ExportInput(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = dict(data.validated_data)
        format, table = values.pop("format"), values.pop("table")
        try:
            job = start_export_job(
                study=study, format=format, table=table, filters=values, user=request.user
            )
        except ExportFilterError as error:
            raise ValidationError({"detail": str(error)}) from None
        return Response(ExportOutput(job).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):  # type: ignore[misc]
    @extend_schema(responses=ExportOutput)
    def get(self, request: Request, pk: int) -> Response:
        return Response(ExportOutput(_job(request, pk)).data)


class ExportDownloadApi(APIView):  # type: ignore[misc]
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request: Request, pk: int) -> FileResponse:
        job = _job(request, pk)
        if job.status != ExportJob.Status.SUCCEEDED or not job.file:
            raise Http404
        return FileResponse(job.file.open("rb"), as_attachment=True, filename=job.filename,
                            content_type=CONTENT_TYPES[job.format])  # fmt: skip


class ExportCardApi(APIView):  # type: ignore[misc]
    @extend_schema(responses={(200, "text/markdown"): OpenApiTypes.STR})
    def get(self, request: Request, pk: int) -> HttpResponse:
        job = _job(request, pk)
        if job.status != ExportJob.Status.SUCCEEDED:
            raise Http404
        return HttpResponse(job.card, content_type="text/markdown; charset=utf-8")


class TableOutput(serializers.Serializer):  # type: ignore[misc]
    id = serializers.CharField()
    title = serializers.CharField()
    header = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.ListField())


class AnalysisApi(APIView):  # type: ignore[misc]
    @extend_schema(
        parameters=[
            OpenApiParameter("round", int, required=False),
            OpenApiParameter("screening", str, required=False),
            OpenApiParameter("repository", str, required=False),
        ],
        responses=TableOutput(many=True),
    )
    def get(self, request: Request, study_id: int) -> Response:
        study = _study(request, study_id)
        filters = {k: request.query_params[k] for k in ("round", "screening", "repository")
                   if request.query_params.get(k)}  # fmt: skip
        try:
            data = study_final_labels(study, filters)
        except ExportFilterError as error:
            raise ValidationError({"detail": str(error)}) from None
        tables = [
            {"id": t.id, "title": t.title, "header": t.header,
             "rows": [[c.value for c in row] for row in t.rows]}
            for t in analysis_tables(data)
        ]  # fmt: skip
        return Response(tables)
