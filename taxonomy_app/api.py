"""REST API for codebooks: one view per operation, each calling the same services as the pages.

Reading is open to every authenticated user; changing a codebook needs its owner (see
Codebook.can_edit). Refusals of the codebook's rules answer 400 with `detail`; attempts to change
a published version answer 409.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Prefetch, QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from . import serializers as s
from . import services
from .errors import CodebookError, PublishedVersionError
from .formats import CodebookFormatError
from .models import Category, Codebook, CodebookVersion, Facet
from .refi_qda import name_from_filename

T = TypeVar("T")


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "published"


def run(service: Callable[..., T], **kwargs: Any) -> T:
    """Call a service, turning its refusals into API errors."""
    try:
        return service(**kwargs)
    except PublishedVersionError as error:
        raise Conflict(str(error)) from error
    except (CodebookError, CodebookFormatError) as error:
        raise ValidationError({"detail": str(error)}) from error


def require_owner(request: Request, codebook: Codebook) -> None:
    if not codebook.can_edit(request.user):
        raise PermissionDenied("only the codebook's owner can change it")


def valid(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


def versions_with_tree() -> QuerySet[CodebookVersion]:
    return CodebookVersion.objects.prefetch_related(
        Prefetch("facets__categories", queryset=Category.objects.order_by("order", "pk"))
    )


def category_in(facet_or_category: Facet | Category, pk: int | None) -> Category | None:
    """A category of the same facet, or a 400 naming the field."""
    if pk is None:
        return None
    facet_id = getattr(facet_or_category, "facet_id", facet_or_category.pk)
    found = Category.objects.filter(pk=pk, facet_id=facet_id).first()
    if found is None:
        raise ValidationError({"detail": f"category {pk} is not in this facet"})
    return found


# Codebooks and versions ------------------------------------------------------------------------


class CodebookListApi(generics.ListAPIView):
    """Codebooks with a summary of their versions."""

    serializer_class = s.CodebookOutput
    queryset = Codebook.objects.prefetch_related("versions")


class CodebookDetailApi(generics.RetrieveAPIView):
    serializer_class = s.CodebookOutput
    queryset = Codebook.objects.prefetch_related("versions")


def _json_parsers() -> list[type[BaseParser]]:
    parsers: Any = api_settings.DEFAULT_PARSER_CLASSES  # classes; the stubs say strings
    return [parser for parser in parsers if parser.media_type == "application/json"]


class CodebookImportApi(generics.GenericAPIView):
    """Import a JSON, YAML or REFI-QDA (.qdc) codebook file as a new codebook or the next
    version of one. A malformed file answers 400 naming the element and field, and writes
    nothing."""

    # The project's JSON parser (REST_FRAMEWORK, which may bound a body's depth), not DRF's own.
    parser_classes = [MultiPartParser, FormParser, *_json_parsers()]
    serializer_class = s.ImportInput

    @extend_schema(request=s.ImportInput, responses={201: s.VersionOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = valid(s.ImportInput, request)
        if data.get("codebook"):
            require_owner(request, data["codebook"])
        upload = data.get("file")
        version = run(
            services.import_codebook,
            data=upload.read() if upload else data["content"],
            fmt=data["format"],
            codebook=data.get("codebook"),
            publish=data["publish"],
            user=request.user,
            name=name_from_filename(upload.name) if upload else "",
        )
        version = versions_with_tree().get(pk=version.pk)
        return Response(s.VersionOutput(version).data, status=status.HTTP_201_CREATED)


class DraftStartApi(generics.GenericAPIView):
    """The codebook's draft: the existing one, or a new copy of its latest published version."""

    serializer_class = s.VersionSummaryOutput
    queryset = Codebook.objects.all()

    @extend_schema(request=None, responses={201: s.VersionSummaryOutput})
    def post(self, request: Request, pk: int) -> Response:
        codebook = self.get_object()
        require_owner(request, codebook)
        draft = run(services.start_draft, codebook=codebook, user=request.user)
        return Response(s.VersionSummaryOutput(draft).data, status=status.HTTP_201_CREATED)


class VersionDetailApi(generics.RetrieveAPIView):
    """A version with its facets and their categories."""

    serializer_class = s.VersionOutput

    def get_queryset(self) -> QuerySet[CodebookVersion]:
        return versions_with_tree()


class VersionPublishApi(generics.GenericAPIView):
    serializer_class = s.PublishInput
    queryset = CodebookVersion.objects.select_related("codebook")

    @extend_schema(request=s.PublishInput, responses={200: s.VersionSummaryOutput})
    def post(self, request: Request, pk: int) -> Response:
        version = self.get_object()
        require_owner(request, version.codebook)
        data = valid(s.PublishInput, request)
        run(
            services.publish_version,
            version=version,
            changelog=data["changelog"],
            user=request.user,
        )
        return Response(s.VersionSummaryOutput(version).data)


class VersionDiffApi(generics.GenericAPIView):
    """What changed against the published version this one was started from, with the number
    of labels each change touches."""

    serializer_class = s.DiffOutput
    queryset = CodebookVersion.objects.select_related("codebook", "based_on")

    def get(self, request: Request, pk: int) -> Response:
        diff = services.diff_version(version=self.get_object(), viewer=request.user)
        data = s.DiffOutput(diff).data
        return Response({**data, "summary": diff.summary()})


class VersionExportApi(generics.GenericAPIView):
    """The version as a JSON, YAML or REFI-QDA codebook file (`…/export/json/`, `…/yaml/` or
    `…/qdc/`), ready to be imported elsewhere (a .qdc into ATLAS.ti, MAXQDA, NVivo, …)."""

    queryset = CodebookVersion.objects.select_related("codebook")

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT})
    def get(self, request: Request, pk: int, fmt: str) -> HttpResponse:
        if fmt not in services.EXPORT_FORMATS:
            raise ValidationError({"detail": "export as json, yaml or qdc"})
        return export_response(self.get_object(), fmt)


CONTENT_TYPES = {"json": "application/json", "yaml": "application/yaml", "qdc": "application/xml"}


def export_response(version: CodebookVersion, fmt: str) -> HttpResponse:
    """The export as a download named after the codebook and version (`slug-vN.fmt`)."""
    text = services.export_version(version=version, fmt=fmt)
    content_type = CONTENT_TYPES[fmt]
    response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
    name = f"{version.codebook.slug}-v{version.number}.{fmt}"
    # Django's builder quotes the name, or sends it as filename*= when it is not plain ASCII.
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


# Facets and categories -------------------------------------------------------------------------


class FacetListApi(generics.ListAPIView):
    serializer_class = s.FacetOutput
    pagination_class = None

    def get_queryset(self) -> QuerySet[Facet]:
        return Facet.objects.filter(version_id=self.kwargs["pk"])


class FacetDetailApi(generics.RetrieveAPIView):
    serializer_class = s.FacetTreeOutput
    queryset = Facet.objects.prefetch_related("categories")

    @extend_schema(request=s.FacetInput, responses={200: s.FacetOutput})
    def put(self, request: Request, pk: int) -> Response:
        facet = get_object_or_404(Facet.objects.select_related("version__codebook"), pk=pk)
        require_owner(request, facet.version.codebook)
        run(services.update_facet, facet=facet, **valid(s.FacetInput, request))
        return Response(s.FacetOutput(facet).data)


class CategoryListApi(generics.ListCreateAPIView):
    """The categories of a facet (flat, with `parent`); POST adds one to a draft."""

    serializer_class = s.CategoryOutput
    pagination_class = None

    def get_queryset(self) -> QuerySet[Category]:
        return Category.objects.filter(facet_id=self.kwargs["pk"]).order_by("order", "pk")

    @extend_schema(request=s.CategoryCreateInput, responses={201: s.CategoryOutput})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        facet = get_object_or_404(
            Facet.objects.select_related("version__codebook"), pk=kwargs["pk"]
        )
        require_owner(request, facet.version.codebook)
        data = valid(s.CategoryCreateInput, request)
        data["parent"] = category_in(facet, data.pop("parent"))
        category = run(services.add_category, facet=facet, user=request.user, **data)
        return Response(s.CategoryOutput(category).data, status=status.HTTP_201_CREATED)


class CategoryApiView(generics.GenericAPIView):
    serializer_class = s.CategoryOutput
    queryset = Category.objects.select_related("facet__version__codebook")

    def owned(self, request: Request) -> Category:
        category = self.get_object()
        require_owner(request, category.facet.version.codebook)
        return category


class CategoryDetailApi(CategoryApiView):
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.CategoryOutput(self.get_object()).data)

    @extend_schema(request=s.CategoryUpdateInput, responses={200: s.CategoryOutput})
    def patch(self, request: Request, pk: int) -> Response:
        category = self.owned(request)
        fields = valid(s.CategoryUpdateInput, request)
        run(services.update_category, category=category, user=request.user, **fields)
        return Response(s.CategoryOutput(category).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        run(services.delete_category, category=self.owned(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class CategoryMoveApi(CategoryApiView):
    """Give a category a new parent (`parent`, null for a root) or swap it with a sibling
    (`direction`: up or down). Moves that would make a cycle are refused."""

    @extend_schema(request=s.MoveInput, responses={200: s.CategoryOutput})
    def post(self, request: Request, pk: int) -> Response:
        category = self.owned(request)
        data = valid(s.MoveInput, request)
        if "direction" in data:
            run(services.reorder_category, category=category, direction=data["direction"])
        else:
            parent = category_in(category, data["parent"])
            run(services.move_category, category=category, parent=parent, user=request.user)
        return Response(s.CategoryOutput(category).data)


class CategoryArchiveApi(CategoryApiView):
    @extend_schema(request=None, responses={200: s.CategoryOutput})
    def post(self, request: Request, pk: int) -> Response:
        category = self.owned(request)
        run(services.archive_category, category=category, user=request.user)
        return Response(s.CategoryOutput(category).data)


class CategoryMergeApi(CategoryApiView):
    """Merge this category into `into`: it is archived, and its labels follow `into`."""

    @extend_schema(request=s.MergeInput, responses={200: s.CategoryOutput})
    def post(self, request: Request, pk: int) -> Response:
        category = self.owned(request)
        target = category_in(category, valid(s.MergeInput, request)["into"])
        run(services.merge_categories, source=category, target=target, user=request.user)
        return Response(s.CategoryOutput(target).data)


class CategorySplitApi(CategoryApiView):
    """Split this category into new ones (`names`) and/or existing ones (`into`). Returns the
    labels that used it: each needs a person to choose its new category."""

    @extend_schema(request=s.SplitInput, responses={200: s.SplitOutput})
    def post(self, request: Request, pk: int) -> Response:
        category = self.owned(request)
        data = valid(s.SplitInput, request)
        into = [category_in(category, pk) for pk in data["into"]]
        result = run(
            services.split_category,
            source=category,
            names=data["names"],
            into=into,
            user=request.user,
        )
        return Response(s.SplitOutput(result).data)
