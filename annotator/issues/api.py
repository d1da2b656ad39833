"""REST API for issues and imports: one view per operation, calling the same services."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.api_pagination import EstimatedPagination
from annotator.dispatch import with_queue_notice
from annotator.upload_handling import UploadRefused, accept_upload

from .access import REFUSAL, can_import
from .formats import FORMATS
from .models import ISSUE_FILTERS, ImportJob, Issue, IssueComment
from .services import start_import_job


class IssueOutput(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.full_name")

    class Meta:
        model = Issue
        fields = [
            "id",
            "repository",
            "number",
            "github_id",
            "title",
            "state",
            "state_reason",
            "labels",
            "author",
            "created_at",
            "updated_at",
            "closed_at",
            "is_pull_request",
            "html_url",
            "comments_count",
            "content_hash",
        ]


class CommentOutput(serializers.ModelSerializer):
    class Meta:
        model = IssueComment
        fields = ["id", "github_id", "author", "body", "created_at", "updated_at"]


class IssueDetailOutput(IssueOutput):
    comments = CommentOutput(many=True, read_only=True)

    class Meta(IssueOutput.Meta):
        fields = [*IssueOutput.Meta.fields, "body", "comments"]


class ImportJobOutput(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "status",
            "original_name",
            "format",
            "repository",
            "size_bytes",
            "bytes_read",
            "records_read",
            "percent",
            "created",
            "updated",
            "unchanged",
            "skipped",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class ImportJobInput(serializers.Serializer):
    file = serializers.FileField(help_text=".json, .jsonl, .ndjson or .csv, UTF-8")
    format = serializers.ChoiceField(choices=["auto", *FORMATS], default="auto")
    repository = serializers.RegexField(r"^[\w.-]+/[\w.-]+$", required=False, default="")

    def validate_file(self, upload: Any) -> Any:
        try:
            accept_upload(upload, "issues")  # size, name and every byte: annotator/uploads.py
        except UploadRefused as error:
            raise serializers.ValidationError(str(error)) from None
        return upload


def _require_importer(request: Request) -> None:
    if not can_import(request.user):
        raise PermissionDenied(REFUSAL)


class IssueListApi(generics.ListAPIView):
    """Issues, filtered with the same parameters as the issue list page. Past 10,000 matches
    `count` is the database's estimate (`count_is_estimate`), and a search lists newest first
    instead of by relevance."""

    serializer_class = IssueOutput
    pagination_class = EstimatedPagination

    def get_queryset(self) -> QuerySet[Issue]:
        params = self.request.query_params
        return Issue.objects.for_list().matching(
            {key: params.get(key, "") for key in ISSUE_FILTERS}
        )


class IssueDetailApi(generics.RetrieveAPIView):
    serializer_class = IssueDetailOutput
    queryset = Issue.objects.select_related("repository").prefetch_related("comments")


class ImportJobDetailApi(generics.RetrieveAPIView):
    serializer_class = ImportJobOutput
    queryset = ImportJob.objects.all()


class ImportJobCreateApi(generics.GenericAPIView):
    parser_classes = [MultiPartParser]
    serializer_class = ImportJobInput

    @extend_schema(request=ImportJobInput, responses={202: ImportJobOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        _require_importer(request)  # before the upload is read
        data = ImportJobInput(data=request.data)
        data.is_valid(raise_exception=True)
        job = start_import_job(
            uploaded=data.validated_data["file"],
            format=data.validated_data["format"],
            repository=data.validated_data["repository"],
            user=request.user,
        )
        data = with_queue_notice(ImportJobOutput(job).data, job)
        return Response(data, status=status.HTTP_202_ACCEPTED)


# --- GitHub sync ----------------------------------------------------------------------------
from .models import SyncJob  # noqa: E402
from .sync import start_sync_job  # noqa: E402


class SyncJobOutput(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)

    class Meta:
        model = SyncJob
        fields = [
            "id",
            "status",
            "repository_name",
            "since",
            "periodic",
            "phase",
            "phase_page",
            "phase_pages",
            "percent",
            "pages",
            "not_modified",
            "issues_created",
            "issues_updated",
            "issues_unchanged",
            "comments_created",
            "comments_updated",
            "comments_unchanged",
            "skipped",
            "waits",
            "waited_seconds",
            "message",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class SyncJobInput(serializers.Serializer):
    repository = serializers.RegexField(r"^[\w.-]+/[\w.-]+$")
    since = serializers.DateTimeField(required=False, default=None)
    periodic = serializers.BooleanField(required=False, default=False)


class SyncJobDetailApi(generics.RetrieveAPIView):
    serializer_class = SyncJobOutput
    queryset = SyncJob.objects.all()


class SyncJobCreateApi(generics.GenericAPIView):
    """Queue a sync of a GitHub repository; poll the returned job for its progress."""

    serializer_class = SyncJobInput

    @extend_schema(request=SyncJobInput, responses={202: SyncJobOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        _require_importer(request)
        data = SyncJobInput(data=request.data)
        data.is_valid(raise_exception=True)
        job = start_sync_job(**data.validated_data, user=request.user)
        data = with_queue_notice(SyncJobOutput(job).data, job)
        return Response(data, status=status.HTTP_202_ACCEPTED)
