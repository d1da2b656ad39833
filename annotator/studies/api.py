"""REST API for studies and labeling: one view per operation, calling the same services.

Labels travel as `{facet key: [category code, …]}`. Blindness holds here as on the pages:
assignments are reachable by their annotator only, and annotation lists go through
`Annotation.objects.visible_to`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.api_pagination import EstimatedPagination
from annotator.figures import (
    PENDING_RESPONSES,
    RETRY_AFTER_HEADER,
    FiguresAsOfOutput,
    as_of,
    pending_response,
)
from annotator.params import BIGINT_MAX, INT_MAX
from taxonomy_app.models import CodebookVersion

from . import services
from .access import SEE_ALL, membership_or_404, own_assignment_or_404, signed_in
from .codebook import codebook_schema
from .errors import LabelErrors, StudyError, UnsureError
from .models import Annotation, AnnotationLabel, Assignment, Membership, Round, Study
from .services.gold import feedback as gold_feedback
from .services.progress import study_dashboard_as_of

Role = Membership.Role


def _membership(
    request: Request, study_id: int, roles: Collection[str] | None = None
) -> Membership:
    return membership_or_404(request, study_id, roles)


def _own_assignment(request: Request, assignment_id: int, *, write: bool = False) -> Assignment:
    """The caller's assignment, loaded as the annotate page loads it (`write`: with what a draft
    or submit needs, and no more: this is on every labeling call)."""
    return own_assignment_or_404(request.user, assignment_id, page=not write)


def _refuse(error: StudyError) -> ValidationError:
    if isinstance(error, LabelErrors):
        return ValidationError({"labels": error.errors})
    if isinstance(error, UnsureError):
        return ValidationError({"unsure": [str(error)]})
    return ValidationError({"detail": str(error)})


# --- serializers ------------------------------------------------------------------------------
class RoundOutput(serializers.ModelSerializer):
    class Meta:
        model = Round
        fields = ["id", "number", "kind", "closed_at", "closed_reason"]


class StudyOutput(serializers.ModelSerializer):
    rounds = RoundOutput(many=True, read_only=True)

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "codebook_version",
            "overlap_k",
            "guidelines",
            "route_unsure_to_adjudication",
            "rounds",
        ]


class StudyInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    codebook_version = serializers.PrimaryKeyRelatedField(
        queryset=CodebookVersion.objects.filter(status="published")
    )
    overlap_k = serializers.IntegerField(min_value=1, default=2)
    guidelines = serializers.CharField(required=False, default="", allow_blank=True)


class MemberInput(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.ANNOTATOR)
    # The API's field names; they shadow Serializer.create and Field.label, which these input
    # serializers never use.
    create = serializers.BooleanField(default=False, help_text="create the account")  # type: ignore[assignment]


class MemberOutput(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    password = serializers.CharField(required=False, help_text="only for a new account")


class SelectionInput(serializers.Serializer):
    round = serializers.IntegerField(required=False, help_text="round id; default: the last")
    q = serializers.CharField(required=False, allow_blank=True, default="")
    repository = serializers.IntegerField(required=False)
    state = serializers.ChoiceField(choices=["open", "closed"], required=False)
    label = serializers.CharField(required=False, allow_blank=True, default="")  # type: ignore[assignment]
    kind = serializers.ChoiceField(choices=["issue", "pr"], required=False)
    since = serializers.DateField(required=False)
    until = serializers.DateField(required=False)
    sample_size = serializers.IntegerField(required=False, min_value=1, max_value=INT_MAX)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=BIGINT_MAX)
    stratify = serializers.BooleanField(default=True)
    repeat_issues = serializers.BooleanField(
        default=False,
        help_text="also issues already in other rounds of the study (not those in this round)",
    )
    reliability_share = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=99,
        help_text="main rounds: this percentage of the items (stratified by repository) goes to "
        "k annotators, the rest to one; omitted: every item to k",
    )
    reliability_seed = serializers.IntegerField(
        required=False, min_value=0, max_value=BIGINT_MAX, help_text="the reliability sample's seed"
    )


class SelectionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField(source="round_id")
    filters = serializers.DictField()
    matched = serializers.IntegerField()
    sample_size = serializers.IntegerField(allow_null=True)
    seed = serializers.IntegerField(allow_null=True)
    stratified_by = serializers.CharField()
    strata = serializers.DictField()
    added = serializers.IntegerField()
    reliability_share = serializers.IntegerField(allow_null=True)
    reliability_seed = serializers.IntegerField(allow_null=True)
    reliability_strata = serializers.DictField()
    method_text = serializers.CharField()


class AssignmentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    item = serializers.IntegerField(source="item_id")
    issue = serializers.IntegerField(source="item.issue_id")
    issue_ref = serializers.CharField(source="item.issue.__str__")
    title = serializers.CharField(source="item.issue.title")
    unsure = serializers.SerializerMethodField(
        help_text="keys of the facets marked unsure in its draft or submitted annotation"
    )

    revision = serializers.JSONField(
        source="annotation.revision",
        read_only=True,
        allow_null=True,
        help_text=(
            "labels submitted after the item was released for discussion, beside the blind "
            "labels agreement reads: {labels: {facet key: [codes]}, unsure, notes, at, count}; "
            "null until then"
        ),
    )

    def get_unsure(self, assignment: Assignment) -> list[str]:
        return unsure_of(assignment)


def unsure_of(assignment: Assignment) -> list[str]:
    """The facets marked unsure in the assignment's annotation; none before it has one."""
    try:
        return list(assignment.annotation.unsure)
    except Annotation.DoesNotExist:
        return []


class WorkInput(serializers.Serializer):
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="facet key → category codes",
    )
    notes = serializers.CharField(required=False, allow_blank=True, default="")
    seconds_spent = serializers.IntegerField(required=False, min_value=0, default=0)
    unsure = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="keys of the facets you are unsure about (chosen or not); omitted: none. "
        "A key that is no facet of the study's codebook version is refused (400).",
    )


class SkipInput(serializers.Serializer):
    reason = serializers.CharField(max_length=300)


class AnnotationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    assignment = serializers.IntegerField(source="assignment_id")
    item = serializers.IntegerField(source="assignment.item_id")
    annotator = serializers.CharField(source="assignment.annotator.username")
    status = serializers.CharField()
    codebook_version = serializers.IntegerField(source="codebook_version_id")
    seconds_spent = serializers.IntegerField()
    notes = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    labels = serializers.SerializerMethodField()
    unsure = serializers.ListField(
        child=serializers.CharField(), help_text="keys of the facets marked unsure"
    )
    revision = serializers.JSONField(
        read_only=True,
        allow_null=True,
        help_text=(
            "after the item was released for discussion: the labels submitted since, beside "
            "the blind `labels` (which agreement reads); null until then"
        ),
    )

    def get_labels(self, annotation: Annotation) -> dict[str, list[str]]:
        labels: dict[str, list[str]] = {}
        for label in annotation.labels.all():
            labels.setdefault(label.facet.key, []).append(label.category.code)
        return labels


class RoundProgressOutput(FiguresAsOfOutput):
    round = serializers.IntegerField(source="round.number")
    unassigned = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    complete = serializers.IntegerField()
    duplicates_left_out = serializers.IntegerField(
        help_text="items whose issue the owners marked a near-duplicate (not included anyway):"
        " in none of the round's other figures"
    )
    annotators = serializers.ListField(child=serializers.DictField())
    unsure = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="facet key → submitted annotations of the round that marked it unsure",
    )


# --- studies ----------------------------------------------------------------------------------
class StudyListApi(generics.ListAPIView):
    """The studies the caller is a member of."""

    serializer_class = StudyOutput

    def get_queryset(self) -> QuerySet[Study]:
        studies = Study.objects.filter(memberships__user=signed_in(self.request))
        return studies.prefetch_related("rounds")


class StudyCreateApi(APIView):
    @extend_schema(request=StudyInput, responses={201: StudyOutput})
    def post(self, request: Request) -> Response:
        data = StudyInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            study = services.create_study(owner=request.user, **data.validated_data)
        except StudyError as error:
            raise _refuse(error) from error
        return Response(StudyOutput(study).data, status=status.HTTP_201_CREATED)


class StudyDetailApi(APIView):
    @extend_schema(responses=StudyOutput)
    def get(self, request: Request, study_id: int) -> Response:
        return Response(StudyOutput(_membership(request, study_id).study).data)


class MemberAddApi(APIView):
    """Add a member (owner only); with `create`, make the account and return its password."""

    @extend_schema(request=MemberInput, responses={201: MemberOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, {Role.OWNER}).study
        data = MemberInput(data=request.data)
        data.is_valid(raise_exception=True)
        username, role = data.validated_data["username"], data.validated_data["role"]
        out: dict[str, Any] = {"username": username, "role": role}
        try:
            if data.validated_data["create"]:
                _, out["password"] = services.create_member_account(
                    study=study, username=username, role=role
                )
            else:
                user = get_user_model().objects.filter(username=username).first()
                if user is None:
                    raise StudyError(f"field 'username': no account {username!r}")
                services.add_member(study=study, user=user, role=role)
        except StudyError as error:
            raise _refuse(error) from error
        return Response(MemberOutput(out).data, status=status.HTTP_201_CREATED)


class MemberRoleInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class MemberChangeOutput(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    released = serializers.IntegerField(
        help_text="their assignments in progress that went back to the pool"
    )


class MemberApi(APIView):
    """Change a member's role (PATCH) or remove them (DELETE); owner only. Their assignments
    in progress go back to the pool; submitted labels stay. The last owner stays (400)."""

    def _member(self, request: Request, study_id: int, user_id: int) -> tuple[Study, Any]:
        study = _membership(request, study_id, {Role.OWNER}).study
        membership = study.memberships.select_related("user").filter(user_id=user_id).first()
        if membership is None:
            raise NotFound("no such member of this study")
        return study, membership.user

    @extend_schema(request=MemberRoleInput, responses=MemberChangeOutput)
    def patch(self, request: Request, study_id: int, user_id: int) -> Response:
        study, user = self._member(request, study_id, user_id)
        data = MemberRoleInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            membership, released = services.change_member_role(
                study=study, user=user, role=data.validated_data["role"]
            )
        except StudyError as error:
            raise _refuse(error) from error
        out = {"username": user.get_username(), "role": membership.role, "released": released}
        return Response(MemberChangeOutput(out).data)

    @extend_schema(request=None, responses={200: MemberChangeOutput})
    def delete(self, request: Request, study_id: int, user_id: int) -> Response:
        study, user = self._member(request, study_id, user_id)
        try:
            released = services.remove_member(study=study, user=user)
        except StudyError as error:
            raise _refuse(error) from error
        out = {"username": user.get_username(), "role": "", "released": released}
        return Response(MemberChangeOutput(out).data)


class SelectionCreateApi(APIView):
    """Add issues by filter (and seeded stratified sample) to a round (owner only)."""

    @extend_schema(request=SelectionInput, responses={201: SelectionOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, {Role.OWNER}).study
        data = SelectionInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        round_id = values.pop("round", None)
        rounds = study.rounds.order_by("-number")
        round = rounds.filter(pk=round_id).first() if round_id else rounds.first()
        if round is None:
            raise ValidationError({"round": "no such round in this study"})
        options = {
            k: values.pop(k, None)
            for k in (
                "sample_size",
                "seed",
                "stratify",
                "repeat_issues",
                "reliability_share",
                "reliability_seed",
            )
        }
        try:
            selection = services.select_issues(
                study=study, round=round, filters=values, user=request.user, **options
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(SelectionOutput(selection).data, status=status.HTTP_201_CREATED)


# --- labeling ---------------------------------------------------------------------------------
class NextItemApi(APIView):
    """The caller's open assignment, or a new one on the next item; 204 when none is left."""

    @extend_schema(request=None, responses={200: AssignmentOutput, 204: None})
    def post(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, {Role.ANNOTATOR}).study
        assignment = services.next_assignment(study=study, annotator=request.user)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        assignment = _own_assignment(request, assignment.pk)
        return Response(AssignmentOutput(assignment).data)


class AssignmentDetailApi(APIView):
    @extend_schema(responses=AssignmentOutput)
    def get(self, request: Request, assignment_id: int) -> Response:
        return Response(AssignmentOutput(_own_assignment(request, assignment_id)).data)


def _labels_by_id(assignment: Assignment, labels: dict[str, list[str]]) -> dict[int, list[int]]:
    schema = codebook_schema(assignment.item.study.codebook_version)
    facets = {f.key: f for f in schema.facets}
    errors = {key: "no such facet" for key in labels if key not in facets}
    out: dict[int, list[int]] = {}
    for key, codes in labels.items():
        if key in facets:
            ids = {c.code: c.id for c in facets[key].categories}
            bad = [code for code in codes if code not in ids]
            if bad:
                errors[key] = f"no such category {', '.join(map(repr, bad))}"
            out[facets[key].id] = [ids[code] for code in codes if code in ids]
    if errors:
        raise LabelErrors(errors)
    return out


class _WorkApi(APIView):
    service: Any = None

    def _run(self, request: Request, assignment_id: int) -> Annotation:
        assignment = _own_assignment(request, assignment_id, write=True)
        data = WorkInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            return type(self).service(
                assignment=assignment,
                user=request.user,
                labels=_labels_by_id(assignment, data.validated_data["labels"]),
                notes=data.validated_data["notes"],
                seconds_spent=data.validated_data["seconds_spent"],
                unsure=data.validated_data["unsure"],
            )
        except StudyError as error:
            raise _refuse(error) from error

    def _out(self, request: Request, annotation: Annotation) -> Response:
        annotation = _annotations(Annotation.objects.filter(pk=annotation.pk)).get()
        return Response(AnnotationOutput(annotation).data)


class DraftSaveApi(_WorkApi):
    """Save the caller's draft labels (lenient; counts as activity for the timeout)."""

    service = staticmethod(services.save_draft)

    @extend_schema(request=WorkInput, responses=AnnotationOutput)
    def put(self, request: Request, assignment_id: int) -> Response:
        return self._out(request, self._run(request, assignment_id))


class SubmitApi(_WorkApi):
    """Submit labels; 400 with `labels: {facet key: message}` when they do not validate, or
    `unsure: [message]` naming an unsure key that is no facet of the codebook."""

    service = staticmethod(services.submit_annotation)

    @extend_schema(request=WorkInput, responses=AnnotationOutput)
    def post(self, request: Request, assignment_id: int) -> Response:
        return self._out(request, self._run(request, assignment_id))


class FeedbackFacetOutput(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    mine = serializers.ListField(child=serializers.CharField(), help_text="'CODE · name'")
    gold = serializers.ListField(child=serializers.CharField())
    match = serializers.BooleanField()


class FeedbackOutput(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment.pk")
    matched = serializers.IntegerField()
    facets = FeedbackFacetOutput(many=True)
    rationale = serializers.CharField()


class FeedbackApi(APIView):
    """The gold answer beside the caller's labels, once they submitted an item of a training
    round that has one; 404 before the submit (and for any other assignment)."""

    @extend_schema(responses=FeedbackOutput)
    def get(self, request: Request, assignment_id: int) -> Response:
        assignment = _own_assignment(request, assignment_id, write=True)
        shown = gold_feedback(assignment)
        if shown is None:
            raise NotFound("no gold answer to show for this assignment")
        return Response(FeedbackOutput(shown).data)


class SkipApi(APIView):
    @extend_schema(request=SkipInput, responses=AssignmentOutput)
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = _own_assignment(request, assignment_id)
        data = SkipInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.skip_assignment(
                assignment=assignment, user=request.user, reason=data.validated_data["reason"]
            )
        except StudyError as error:
            raise _refuse(error) from error
        return Response(AssignmentOutput(_own_assignment(request, assignment_id)).data)


def _annotations(queryset: QuerySet[Annotation]) -> QuerySet[Annotation]:
    labels = AnnotationLabel.objects.select_related("facet", "category")
    return queryset.select_related("assignment__annotator").prefetch_related(
        Prefetch("labels", labels)
    )


class AnnotationListApi(generics.ListAPIView):
    """Annotations of a study the caller may see: all for owners and adjudicators; for an
    annotator their own, and others' only on items released for discussion once theirs is in.
    Past 10,000 annotations `count` is the database's estimate (`count_is_estimate`): an exact
    count joins every annotation of the study to its item (over a second at 300,000)."""

    serializer_class = AnnotationOutput
    pagination_class = EstimatedPagination
    keyset = ("pk",)

    def get_queryset(self) -> QuerySet[Annotation]:
        membership = _membership(self.request, self.kwargs["study_id"])
        visible = Annotation.objects.filter(assignment__item__study=membership.study).visible_to(
            self.request.user, membership
        )
        return _annotations(visible).order_by(*self.keyset)


class ProgressApi(APIView):
    """Progress per round and annotator, and the round's unsure marks by facet (owners and
    adjudicators); items whose issue is a marked near-duplicate are left out of every figure
    and counted in `duplicates_left_out`. On a large study the annotators' rows and unsure
    marks may be a little older than the data (`as_of`, `stale`; the items' states are always
    current) while newer ones are computed; 202 until they were computed once."""

    @extend_schema(
        parameters=[RETRY_AFTER_HEADER],
        responses={200: RoundProgressOutput(many=True), **PENDING_RESPONSES},
    )
    def get(self, request: Request, study_id: int) -> Response:
        study = _membership(request, study_id, SEE_ALL).study
        rows, figures = study_dashboard_as_of(study=study)
        if pending := pending_response(figures):
            return pending
        data = [
            {
                "round": row.round,
                "unassigned": row.unassigned,
                "in_progress": row.in_progress,
                "complete": row.complete,
                "duplicates_left_out": row.duplicates,
                "annotators": [vars(a) for a in row.annotators],
                "unsure": {f.key: f.count for f in row.unsure.facets},
                **as_of(figures),
            }
            for row in rows
        ]
        return Response(RoundProgressOutput(data, many=True).data)
