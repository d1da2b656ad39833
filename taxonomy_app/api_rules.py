"""REST API for a version's label rules: list and add (a draft's owner), remove."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from . import serializers as s
from .api import require_owner, run, valid
from .models import CodebookVersion, LabelRule
from .services.rules import add_rule, delete_rule


class RuleListApi(generics.ListCreateAPIView):
    """The label rules of a version, in order; POST adds one to a draft. A rule that does not
    fit the draft (unknown facet, a category of another facet, …) answers 400 naming the field."""

    serializer_class = s.RuleOutput
    pagination_class = None

    def get_queryset(self) -> QuerySet[LabelRule]:
        rules = LabelRule.objects.filter(version_id=self.kwargs["pk"])
        return rules.select_related("facet", "when_facet").order_by("order", "pk")

    @extend_schema(request=s.RuleInput, responses={201: s.RuleOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        version = get_object_or_404(
            CodebookVersion.objects.select_related("codebook"), pk=kwargs["pk"]
        )
        require_owner(request, version.codebook)
        rule = run(add_rule, version=version, **valid(s.RuleInput, request))
        return Response(s.RuleOutput(rule).data, status=status.HTTP_201_CREATED)


class RuleDetailApi(generics.RetrieveDestroyAPIView):
    serializer_class = s.RuleOutput
    queryset = LabelRule.objects.select_related("facet", "when_facet", "version__codebook")

    @extend_schema(responses={204: None})
    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rule = self.get_object()
        require_owner(request, rule.version.codebook)
        run(delete_rule, rule=rule)
        return Response(status=status.HTTP_204_NO_CONTENT)
