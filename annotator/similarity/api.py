"""REST API: near-duplicate passes and groups (any signed-in user reads them: issues are shared
and groups carry no labels; owners of a study start passes), a study's marks (its owners), and
an issue's similar issues (annotators get only those they labeled themselves)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.issues.models import Issue, Repository
from annotator.studies.access import MANAGERS, membership_or_404, signed_in
from annotator.studies.models import Membership

from .models import DuplicateGroup, DuplicateMark, DuplicatePair, DuplicatePass
from .services import (
    SimilarityError,
    group_queryset,
    mark_issue,
    similar_issues,
    start_duplicate_pass,
    withdraw_mark,
)


class PassInput(serializers.Serializer[None]):
    repository = serializers.CharField(
        required=False, allow_blank=True, help_text="OWNER/NAME; empty: every issue"
    )
    study = serializers.IntegerField(required=False, help_text="a study you own (its page links)")


class PassOutput(serializers.ModelSerializer[DuplicatePass]):
    repository = serializers.CharField(source="repository.full_name", allow_null=True, default=None)

    class Meta:
        model = DuplicatePass
        fields = [
            "id",
            "status",
            "progress",
            "repository",
            "study",
            "params",
            "counts",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


def _owns_a_study(user: Any) -> bool:
    return bool(
        user.is_staff or Membership.objects.filter(user=user, role=Membership.Role.OWNER).exists()
    )


class PassListCreateApi(APIView):
    @extend_schema(responses=PassOutput(many=True), summary="Near-duplicate passes, newest first")
    def get(self, request: Request) -> Response:
        signed_in(request)
        passes = DuplicatePass.objects.select_related("repository").order_by("-created_at")[:50]
        return Response(PassOutput(passes, many=True).data)

    @extend_schema(
        request=PassInput,
        responses={202: PassOutput},
        summary="Start a pass over every issue or one repository (owners of a study, staff)",
    )
    def post(self, request: Request) -> Response:
        user = signed_in(request)
        if not _owns_a_study(user):
            raise Http404("Only owners of a study start passes")
        data = PassInput(data=request.data)
        data.is_valid(raise_exception=True)
        repository = None
        if name := data.validated_data.get("repository"):
            repository = Repository.objects.named(name)
            if repository is None:
                raise ValidationError({"repository": [f"no repository {name!r}"]})
        study = None
        if (study_id := data.validated_data.get("study")) is not None:
            study = membership_or_404(request, study_id, MANAGERS).study
        job = start_duplicate_pass(repository=repository, study=study, user=user)
        return Response(PassOutput(job).data, status=status.HTTP_202_ACCEPTED)


class PassDetailApi(APIView):
    @extend_schema(responses=PassOutput, summary="A pass: status, progress, counts")
    def get(self, request: Request, pass_id: int) -> Response:
        signed_in(request)
        job = get_object_or_404(DuplicatePass.objects.select_related("repository"), pk=pass_id)
        return Response(PassOutput(job).data)


class PairOutput(serializers.ModelSerializer[DuplicatePair]):
    class Meta:
        model = DuplicatePair
        fields = ["issue_a", "issue_b", "similarity", "same_signature"]


class GroupOutput(serializers.ModelSerializer[DuplicateGroup]):
    issues = serializers.SerializerMethodField()
    pairs = PairOutput(many=True, read_only=True)

    class Meta:
        model = DuplicateGroup
        fields = ["id", "found_by", "size", "max_similarity", "min_similarity", "issues", "pairs"]

    def get_issues(self, group: DuplicateGroup) -> list[dict[str, Any]]:
        return [
            {"id": m.issue_id, "repository": m.issue.repository.full_name, "number": m.issue.number}
            for m in group.members.all()
        ]


class GroupListApi(generics.ListAPIView[DuplicateGroup]):
    serializer_class = GroupOutput

    @extend_schema(
        parameters=[
            OpenApiParameter("repository", str, description="OWNER/NAME: groups touching it"),
            OpenApiParameter("study", int, description="a study of yours: groups touching it"),
        ],
        summary="Near-duplicate groups, largest similarity first",
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        signed_in(self.request)
        repository = None
        if name := self.request.query_params.get("repository"):
            repository = Repository.objects.named(name)
            if repository is None:
                raise ValidationError({"repository": [f"no repository {name!r}"]})
        study = None
        if value := self.request.query_params.get("study"):
            try:
                study = membership_or_404(self.request, int(value)).study
            except ValueError:
                raise ValidationError({"study": [f"{value!r} is not a study id"]}) from None
        return group_queryset(repository=repository, study=study).prefetch_related(
            "members__issue__repository", "pairs"
        )


class MarkInput(serializers.Serializer[None]):
    issue = serializers.IntegerField()
    decision = serializers.ChoiceField(choices=DuplicateMark.Decision.choices)
    duplicate_of = serializers.IntegerField(required=False, allow_null=True)
    include = serializers.BooleanField(required=False, default=False, help_text="include anyway")


class MarkOutput(serializers.ModelSerializer[DuplicateMark]):
    decided_by = serializers.CharField(source="decided_by.get_username", default=None)
    withdrawn_by = serializers.CharField(source="withdrawn_by.get_username", default=None)

    class Meta:
        model = DuplicateMark
        fields = [
            "id",
            "issue",
            "decision",
            "duplicate_of",
            "include",
            "similarity",
            "decided_by",
            "decided_at",
            "withdrawn_by",
            "withdrawn_at",
        ]


class MarkListCreateApi(APIView):
    @extend_schema(responses=MarkOutput(many=True), summary="A study's marks, history included")
    def get(self, request: Request, study_id: int) -> Response:
        study = membership_or_404(request, study_id, MANAGERS).study
        marks = DuplicateMark.objects.filter(study=study).select_related(
            "decided_by", "withdrawn_by"
        )
        return Response(MarkOutput(marks, many=True).data)

    @extend_schema(request=MarkInput, responses={201: MarkOutput}, summary="Mark an issue")
    def post(self, request: Request, study_id: int) -> Response:
        study = membership_or_404(request, study_id, MANAGERS).study
        data = MarkInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            mark = mark_issue(study=study, user=request.user, **data.validated_data)
        except SimilarityError as error:
            raise ValidationError({"detail": str(error)}) from None
        return Response(MarkOutput(mark).data, status=status.HTTP_201_CREATED)


class MarkUndoApi(APIView):
    @extend_schema(request=None, responses=MarkOutput, summary="Undo a mark (kept as history)")
    def post(self, request: Request, study_id: int, mark_id: int) -> Response:
        study = membership_or_404(request, study_id, MANAGERS).study
        try:
            mark = withdraw_mark(study=study, mark_id=mark_id, user=request.user)
        except SimilarityError as error:
            raise ValidationError({"detail": str(error)}) from None
        return Response(MarkOutput(mark).data)


class SimilarOutput(serializers.Serializer[dict[str, Any]]):
    issue = serializers.IntegerField(source="issue.pk")
    repository = serializers.CharField(source="issue.repository.full_name")
    number = serializers.IntegerField(source="issue.number")
    title = serializers.CharField(source="issue.title")
    score = serializers.FloatField(help_text="TF-IDF cosine")
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="your own submitted labels on it: facet name → category names",
    )


class SimilarApi(APIView):
    @extend_schema(
        responses=SimilarOutput(many=True),
        summary="An issue's ten most similar issues (annotators: only those they labeled)",
    )
    def get(self, request: Request, issue_id: int) -> Response:
        user = signed_in(request)
        issue = get_object_or_404(Issue, pk=issue_id)
        found = similar_issues(issue=issue, user=user)
        return Response(SimilarOutput(found, many=True).data)  # type: ignore[arg-type]
