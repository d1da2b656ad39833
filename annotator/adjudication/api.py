"""REST API for adjudication: the queue, decisions, discussion, release and history.

Labels travel as `{facet key: [category code, …]}`, as in the studies API. The blind rules hold
as on the pages: queue, decisions and history are for owners and adjudicators; an annotator
reads an item's decision and thread (with the others' labels) only once their own annotation is
submitted and the owner has released the item; everyone else gets 404.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
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
from annotator.params import INT_MAX
from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.api import AnnotationOutput
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, Item, Membership

from . import services
from .blind import name_changes, names_for
from .models import Comment, Decision, DecisionLabel, ItemAgreement

Role = Membership.Role


def _membership(
    request: Request, study_id: int, roles: Collection[str] | None = None
) -> Membership:
    return membership_or_404(request, study_id, roles)


def _item(
    request: Request, item_id: int, roles: Collection[str] | None = None
) -> tuple[Item, Membership]:
    item = Item.objects.select_related("study__codebook_version").filter(pk=item_id).first()
    if item is None:
        raise Http404
    return item, _membership(request, item.study_id, roles)


def _discussable(request: Request, item_id: int) -> tuple[Item, Membership]:
    item, membership = _item(request, item_id)
    if not services.may_discuss(item=item, user=request.user, membership=membership):
        raise Http404
    return item, membership


def _labels_by_id(item: Item, labels: dict[str, list[str]]) -> dict[int, list[int]]:
    """{facet key: [code]} → {facet id: [category id]}; unknown keys or codes: LabelErrors."""
    facets = {f.key: f for f in codebook_schema(item.study.codebook_version).facets}
    errors = {key: "no such facet" for key in labels if key not in facets}
    out: dict[int, list[int]] = {}
    for key, codes in labels.items():
        if key in facets:
            ids = {c.code: c.id for c in facets[key].categories}
            if bad := [code for code in codes if code not in ids]:
                errors[key] = f"no such category {', '.join(map(repr, bad))}"
            out[facets[key].id] = [ids[code] for code in codes if code in ids]
    if errors:
        raise services.LabelErrors(errors)
    return out


def _annotations(queryset: QuerySet[Annotation]) -> QuerySet[Annotation]:
    labels = AnnotationLabel.objects.select_related("facet", "category")
    return queryset.select_related("assignment__annotator").prefetch_related(
        Prefetch("labels", labels)
    )


def _decisions(queryset: QuerySet[Decision]) -> QuerySet[Decision]:
    labels = DecisionLabel.objects.select_related("facet", "category")
    return queryset.select_related("decided_by").prefetch_related(Prefetch("labels", labels))


# --- serializers ------------------------------------------------------------------------------
class QueueEntryOutput(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    round = serializers.IntegerField(source="item.round.number")
    issue = serializers.CharField(source="item.issue.__str__")
    title = serializers.CharField(source="item.issue.title")
    agreement = serializers.FloatField(source="value")
    disagreeing_facets = serializers.SerializerMethodField()
    unsure_facets = serializers.ListField(
        child=serializers.CharField(),
        help_text="keys of the facets an annotator marked unsure (why an item the annotators "
        "agree on can wait here)",
    )

    def get_disagreeing_facets(self, entry: ItemAgreement) -> list[str]:
        return [facet.key for facet in entry.disagreeing_facets.all()]


class DecisionOutput(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    source = serializers.CharField()  # type: ignore[assignment]  # the API's name; shadows Field.source
    reason = serializers.CharField()
    comment = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    confidence = serializers.ChoiceField(
        choices=Decision.Confidence.choices,
        allow_null=True,
        help_text="the adjudicator's confidence: 1 low, 2 medium, 3 high (null: not said)",
    )
    version = serializers.IntegerField()
    updated_at = serializers.DateTimeField()
    labels = serializers.SerializerMethodField()

    def get_labels(self, decision: Decision) -> dict[str, list[str]]:
        labels: dict[str, list[str]] = {}
        for label in decision.labels.all():
            labels.setdefault(label.facet.key, []).append(label.category.code)
        return labels


class DecisionInput(serializers.Serializer):
    labels = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="facet key → category codes",
    )
    reason = serializers.ChoiceField(choices=Decision.Reason.choices)
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    confidence = serializers.ChoiceField(
        choices=Decision.Confidence.choices,
        required=False,
        allow_null=True,
        default=None,
        help_text="how sure you are: 1 low, 2 medium, 3 high (optional)",
    )
    version = serializers.IntegerField(
        min_value=0, help_text="the decision version you read (0: none yet); 409 if it changed"
    )


class DiscussionCommentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField(source="author.username")
    body = serializers.CharField()
    created_at = serializers.DateTimeField()


class CommentInput(serializers.Serializer):
    body = serializers.CharField(max_length=10_000)


class DiscussionOutput(serializers.Serializer):
    item = serializers.IntegerField()
    released_at = serializers.DateTimeField(allow_null=True)
    annotations = AnnotationOutput(many=True)
    comments = DiscussionCommentOutput(many=True)


class HistoryChangeOutput(serializers.Serializer):
    subject = serializers.CharField()
    user = serializers.CharField(
        source="shown_user",
        allow_null=True,
        help_text="who made the change (null: automatic); a hidden annotator reads as "
        "'Annotator A'… while the study's adjudication is blind and the item undecided",
    )
    at = serializers.DateTimeField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


# --- views ------------------------------------------------------------------------------------
class QueueApi(generics.ListAPIView):
    """The disagreement queue, lowest agreement first (`count` is how many remain); filter with
    `?facet=<key>` (the annotators differ in it, or one marked it unsure) and
    `?round=<number>`. Owners and adjudicators."""

    serializer_class = QueueEntryOutput

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = cast(Sequence[int], self.paginate_queryset(self._ids()) or [])
        entries = services.queue_entries([int(pk) for pk in page])
        return self.get_paginated_response(self.get_serializer(entries, many=True).data)

    def _ids(self) -> Sequence[int]:
        """The queue's entry ids in order (services.queue_ids, kept per state of the study)."""
        study = _membership(self.request, self.kwargs["study_id"], SEE_ALL).study
        facet_id = None
        if facet := self.request.query_params.get("facet"):
            facets = codebook_schema(study.codebook_version).facets
            facet_id = next((f.id for f in facets if f.key == facet), None)
            if facet_id is None:
                return []
        round_id = None
        if (number := self.request.query_params.get("round", "")).isdigit():
            if int(number) > INT_MAX:  # no round has it; the database would refuse the value
                return []
            round_id = study.rounds.filter(number=int(number)).values_list("pk", flat=True).first()
            if round_id is None:
                return []
        return services.queue_ids(study=study, facet_id=facet_id, round_id=round_id)


class DecisionListApi(generics.ListAPIView):
    """Every decision of the study (owners and adjudicators), in the items' order. `count` is
    exact up to 10,000 decisions and the database's estimate past that (`count_is_estimate`)."""

    serializer_class = DecisionOutput
    # Counting 100,000 decisions joined to their items took 110 to 145 ms on each page.
    pagination_class = EstimatedPagination
    keyset = ("item__round_id", "item__position", "item_id")  # the items' order (Item.Meta)

    def get_queryset(self) -> QuerySet[Decision]:
        study = _membership(self.request, self.kwargs["study_id"], SEE_ALL).study
        return _decisions(Decision.objects.filter(item__study=study)).order_by(*self.keyset)


class DecisionApi(APIView):
    @extend_schema(responses={200: DecisionOutput, 404: None})
    def get(self, request: Request, item_id: int) -> Response:
        """The item's decision: owners and adjudicators; its annotators after release."""
        item, _ = _discussable(request, item_id)
        decision = _decisions(Decision.objects.filter(item=item)).first()
        if decision is None:
            raise Http404
        return Response(DecisionOutput(decision).data)

    @extend_schema(request=DecisionInput, responses={200: DecisionOutput, 409: None})
    def put(self, request: Request, item_id: int) -> Response:
        """Decide the item (owners and adjudicators). 409 when the decision changed since the
        `version` you read; the first write is kept."""
        item, _ = _item(request, item_id, SEE_ALL)
        data = DecisionInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            labels = _labels_by_id(item, values["labels"])
            services.adjudicate_item(
                item=item,
                user=request.user,
                labels=labels,
                reason=values["reason"],
                comment=values["comment"],
                version=values["version"],
                confidence=values["confidence"],
            )
        except services.LabelErrors as error:
            raise ValidationError({"labels": error.errors}) from error
        except services.DecisionConflict as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(DecisionOutput(_decisions(Decision.objects.filter(item=item)).get()).data)


class DiscussionApi(APIView):
    def _out(self, request: Request, item: Item, membership: Membership) -> dict[str, Any]:
        annotations = Annotation.objects.filter(
            assignment__item=item, status=Annotation.Status.SUBMITTED
        ).visible_to(request.user, membership)
        comments = Comment.objects.filter(item=item).select_related("author")
        data = DiscussionOutput(
            {
                "item": item.pk,
                "released_at": item.released_at,
                "annotations": _annotations(annotations).order_by("pk"),
                "comments": comments,
            }
        ).data
        names = names_for(item, request.user)  # blind adjudication: pseudonyms until decided
        for annotation in data["annotations"]:
            annotation["annotator"] = names.of_name(annotation["annotator"])
        for comment in data["comments"]:
            comment["author"] = names.of_name(comment["author"])
        return data

    @extend_schema(responses=DiscussionOutput)
    def get(self, request: Request, item_id: int) -> Response:
        """The thread and the labels: for annotators only after their submit and the release."""
        item, membership = _discussable(request, item_id)
        return Response(self._out(request, item, membership))

    @extend_schema(request=CommentInput, responses={201: DiscussionOutput})
    def post(self, request: Request, item_id: int) -> Response:
        item, membership = _discussable(request, item_id)
        data = CommentInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            body = data.validated_data["body"]
            services.post_comment(item=item, user=request.user, membership=membership, body=body)
        except services.AdjudicationError as error:
            raise ValidationError({"body": str(error)}) from error
        return Response(self._out(request, item, membership), status=status.HTTP_201_CREATED)


class ReleaseApi(APIView):
    @extend_schema(request=None, responses={200: None})
    def post(self, request: Request, item_id: int) -> Response:
        """Release the item for discussion (owner)."""
        item, _ = _item(request, item_id, {Role.OWNER})
        services.release_item(item=item)
        released = Item.objects.values_list("released_at", flat=True).get(pk=item.pk)
        return Response({"item": item.pk, "released_at": released})


class HistoryApi(generics.ListAPIView):
    """Every change to the item's annotations and decision, oldest first (owners and
    adjudicators)."""

    serializer_class = HistoryChangeOutput
    pagination_class = None

    def get_queryset(self) -> Any:
        item, _ = _item(self.request, self.kwargs["item_id"], SEE_ALL)
        return name_changes(services.item_history(item=item), names_for(item, self.request.user))


class DisagreementAnalyticsOutput(FiguresAsOfOutput):
    study = serializers.IntegerField()
    round = serializers.IntegerField(allow_null=True, help_text="round number; null: every")
    sources = serializers.DictField(help_text="decisions by source, per round and in total")
    reasons_by_facet = serializers.DictField(
        help_text="adjudicated decisions by reason under each facet disagreed on"
    )
    confused_pairs = serializers.ListField(
        child=serializers.DictField(), help_text="per round and facet, the top pairs"
    )
    time_to_resolution = serializers.DictField(help_text="seconds, adjudicated items")


class DisagreementAnalyticsApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("round", int, description="round number; default: every"),
            RETRY_AFTER_HEADER,
        ],
        responses={200: DisagreementAnalyticsOutput, **PENDING_RESPONSES},
    )
    def get(self, request: Request, study_id: int) -> Response:
        """The disagreement analytics page's figures (owners and adjudicators); names no
        annotator. On a large study they may be a little older than the data (`as_of`,
        `stale`) while newer ones are computed; 202 until they were computed once."""
        from .analytics import disagreement_analytics_as_of, round_of

        study = _membership(request, study_id, SEE_ALL).study
        round, _ = round_of(study, request.query_params.get("round"))
        figures = disagreement_analytics_as_of(study=study, round=round)
        return pending_response(figures) or Response({**figures.value, **as_of(figures)})
