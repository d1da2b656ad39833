"""REST API for exports and analysis: start an export, read it, download its file and card,
read the analysis tables. Owners and adjudicators only; anyone else gets 404 (an export holds
every annotator's labels). Prior labels in: inspect a workbook, import it as a round of a new
study or of one the caller owns (the wizard's services, all or nothing)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from django.http import FileResponse, Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.adjudication.models import Decision
from annotator.dispatch import with_queue_notice
from annotator.figures import (
    PENDING_RESPONSES,
    RETRY_AFTER_HEADER,
    FiguresAsOfOutput,
    NotComputedYet,
    as_of,
    pending_response,
)
from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.models import Membership, Study
from annotator.upload_handling import UploadRefused
from taxonomy_app.models import CodebookVersion, Facet

from .analysis import AnalysisParameterError
from .dataset import ANALYSIS_FILTERS, run_analysis
from .forms import PSEUDONYMISE_ONLY, accept_prior_file
from .huggingface import LICENSES
from .interop import FORMATS, inspect_doccano, inspect_labelstudio
from .models import PACKAGES, ExportJob
from .prior import (
    PROPOSE,
    PriorImportError,
    PriorImportResult,
    PriorMapping,
    Review,
    import_prior_labels,
    review_prior_labels,
)
from .rows import ExportFilterError
from .services import start_export_job
from .spreadsheets import DUPLICATE_RULES, SpreadsheetError, inspect_workbook
from .views import download_response

ANALYSIS_PARAMETERS = (*ANALYSIS_FILTERS, "stage", "level")


def _study(request: Request, study_id: int) -> Study:
    return membership_or_404(request, study_id, SEE_ALL).study


def _job(request: Request, pk: int) -> ExportJob:
    job = ExportJob.objects.filter(pk=pk).first()
    if job is None:
        raise Http404
    _study(request, job.study_id)
    return job


class ExportInput(serializers.Serializer):
    format = serializers.ChoiceField(choices=ExportJob.Format.values, default="csv")
    table = serializers.ChoiceField(choices=ExportJob.Table.values, default="final")
    scope = serializers.ChoiceField(
        choices=ExportJob.Scope.values,
        default="all",
        help_text="all: every item passing the filters (undecided ones with empty labels); "
        "decided: only items with a decision",
    )
    round = serializers.IntegerField(required=False, min_value=1, help_text="round number")
    # Named like Field.source, which the stubs take for an override (djangorestframework-stubs
    # #158); the serializer's metaclass moves declared fields off the class.
    source = serializers.ChoiceField(choices=Decision.Source.values, required=False)  # type: ignore[assignment]
    screening = serializers.SlugField(required=False, help_text="screening category code")
    repository = serializers.CharField(required=False, max_length=201, help_text="OWNER/NAME")
    pseudonymise = serializers.BooleanField(
        default=False,
        help_text="huggingface and replication only: annotators as A01…, GitHub users as "
        "U0001…, stable per study; the mapping stays on the server",
    )
    license = serializers.ChoiceField(
        choices=[license for license, _ in LICENSES],
        default="cc-by-4.0",
        help_text="the labels' licence in the dataset card (huggingface, replication)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("pseudonymise") and attrs.get("format") not in PACKAGES:
            raise ValidationError({"pseudonymise": PSEUDONYMISE_ONLY})
        return attrs


class ExportOutput(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "study",
            "format",
            "table",
            "scope",
            "filters",
            "pseudonymise",
            "license",
            "status",
            "error",
            "total_rows",
            "rows_written",
            "size_bytes",
            "created_at",
            "started_at",
            "finished_at",
            "download_url",
        ]

    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.SUCCEEDED:
            return None
        return f"/api/exports/{job.pk}/download/"


class ExportListCreateApi(APIView):
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
        format, table, scope = values.pop("format"), values.pop("table"), values.pop("scope")
        packaging = {"pseudonymise": values.pop("pseudonymise"), "license": values.pop("license")}
        try:
            job = start_export_job(
                study=study,
                format=format,
                table=table,
                scope=scope,
                **packaging,
                filters=values,
                user=request.user,
            )
        except ExportFilterError as error:
            raise ValidationError({"detail": str(error)}) from None
        data = with_queue_notice(ExportOutput(job).data, job)
        return Response(data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(APIView):
    @extend_schema(responses=ExportOutput)
    def get(self, request: Request, pk: int) -> Response:
        return Response(ExportOutput(_job(request, pk)).data)


class ExportDownloadApi(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request: Request, pk: int) -> FileResponse:
        job = _job(request, pk)
        if job.status != ExportJob.Status.SUCCEEDED or not job.file:
            raise Http404
        return download_response(job)


class ExportCardApi(APIView):
    @extend_schema(responses={(200, "text/markdown"): OpenApiTypes.STR})
    def get(self, request: Request, pk: int) -> HttpResponse:
        job = _job(request, pk)
        if job.status != ExportJob.Status.SUCCEEDED:
            raise Http404
        return HttpResponse(job.card, content_type="text/markdown; charset=utf-8")


class TableOutput(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    note = serializers.CharField(help_text="how its shares count (multi-choice facets, levels)")
    header = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField()),
        help_text="cells under the header: counts, shares in percent (null: no issue), codes",
    )


class FlowLinkOutput(serializers.Serializer):
    column = serializers.IntegerField(help_text="index of the source facet in `columns`")
    source = serializers.CharField()  # type: ignore[assignment]  # as ExportInput.source
    target = serializers.CharField()
    issues = serializers.IntegerField()


class FlowOutput(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField(), help_text="facet keys")
    links = FlowLinkOutput(many=True)


class AnalysisOutput(FiguresAsOfOutput):
    study = serializers.IntegerField()
    filters = serializers.DictField(child=serializers.CharField())
    stage = serializers.CharField(allow_null=True, help_text="the stage code, null: every stage")
    levels = serializers.DictField(
        child=serializers.CharField(), help_text="hierarchical facet → 'leaf' or its level"
    )
    decided = serializers.IntegerField(help_text="decided items counted (within the stage)")
    tables = TableOutput(many=True)
    flow = FlowOutput()


class AnalysisApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "level",
                str,
                required=False,
                description="'leaf' (default) or a level number (1 = top) of the hierarchical "
                "facets; a facet with fewer levels stops at its leaves",
            ),
            OpenApiParameter(
                "stage", str, required=False, description="a stage code: every table within it"
            ),
            OpenApiParameter("round", int, required=False, description="round number"),
            OpenApiParameter(
                "source",
                str,
                required=False,
                enum=Decision.Source.values,
                description="decision source",
            ),
            OpenApiParameter("screening", str, required=False, description="screening code"),
            OpenApiParameter("repository", str, required=False, description="OWNER/NAME"),
            RETRY_AFTER_HEADER,
        ],
        responses={200: AnalysisOutput, **PENDING_RESPONSES},
    )
    def get(self, request: Request, study_id: int) -> Response:
        """Every analysis table of the study's agreed dataset (the rows the final export
        writes) at the chosen level, for every stage or one, and the flow's links. On a large
        study the counts may be a little older than the data (`as_of`, `stale`) while newer
        ones are computed; 202 until they were computed once."""
        study = _study(request, study_id)
        params = request.query_params
        query = {k: str(params.get(k, "")) for k in ANALYSIS_PARAMETERS if params.get(k)}
        try:
            result = run_analysis(study, query)
        except ExportFilterError as error:
            raise ValidationError({"detail": str(error)}) from None
        except AnalysisParameterError as error:
            raise ValidationError({error.parameter: [str(error)]}) from None
        except NotComputedYet as pending:
            return cast(Response, pending_response(pending.figures))
        levels = {k: "leaf" if v is None else str(v) for k, v in result.levels.items()}
        tables = [
            {"id": t.id, "title": t.title, "note": t.note, "header": t.header, "rows": t.values()}
            for t in result.tables
        ]
        links = [
            {"column": i, "source": a, "target": b, "issues": n}
            for i, a, b, n in result.flow_links()
        ]
        body = {
            "study": study.pk,
            "filters": result.filters,
            "stage": result.stage or None,
            "levels": levels,
            "decided": result.decided,
            "tables": tables,
            "flow": {"columns": result.flow_columns, "links": links},
            **as_of(result.figures),
        }
        return Response(body)


# Prior labels in: the wizard's two ends as two calls. `inspect` reads the workbook's shape;
# `import` takes the mapping the wizard's map and review steps produce and calls the same
# `prior.review_prior_labels` / `prior.import_prior_labels` as its confirm step (all or nothing).


class PriorWorkbookInput(serializers.Serializer):
    file = serializers.FileField(
        help_text=".xlsx, a sheet per annotator (plus Final); or a Label Studio JSON export "
        "(format labelstudio); or a doccano JSONL export (format doccano)"
    )
    # A CharField, not a ChoiceField: the export's `format` enum is another choice set, and
    # drf-spectacular would have to name two enums "Format".
    format = serializers.CharField(
        default="xlsx", help_text="the file's format: xlsx, labelstudio or doccano"
    )

    def validate_format(self, value: str) -> str:
        if value not in FORMATS:
            raise serializers.ValidationError(f"choose {', '.join(FORMATS)}, not {value!r}")
        return value

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        try:
            accept_prior_file(data["file"], data["format"])  # size, sniffing, zip, XML, text
        except UploadRefused as error:
            raise serializers.ValidationError({"file": str(error)}) from None
        return data


class PriorSheetOutput(serializers.Serializer):
    name = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.IntegerField(help_text="data rows that are not entirely blank")
    key_column = serializers.CharField(allow_null=True, help_text="the guessed issue-URL column")
    blank_keys = serializers.ListField(child=serializers.IntegerField())
    duplicate_keys = serializers.ListField(child=serializers.CharField())


class PriorInspectOutput(serializers.Serializer):
    format = serializers.CharField(help_text="xlsx, labelstudio or doccano")
    sheets = PriorSheetOutput(many=True, help_text="xlsx only (empty for the other formats)")
    key_column = serializers.CharField(
        allow_null=True,
        help_text="the first sheet's key guess; Label Studio / doccano: the data_key guess",
    )
    units = serializers.IntegerField(required=False, help_text="tasks or lines (not xlsx)")
    data_keys = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="candidate data keys"
    )
    label_sources = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Label Studio from_names; doccano label prefixes ('label': unprefixed)",
    )
    annotators = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="completed_by / user values"
    )


class PriorMappingInput(serializers.Serializer):
    """The JSON `mapping` field: what the wizard's map and review steps collect."""

    key_column = serializers.CharField(required=False, default="", help_text="xlsx: required")
    data_key = serializers.CharField(
        required=False,
        default="",
        help_text="Label Studio / doccano: the field naming the issue (a dotted path such as "
        "meta.html_url, or repository+number); required for those formats",
    )
    sheet_to_annotator = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="xlsx: sheet → annotator (required). Label Studio / doccano: completed_by or "
        "user → annotator name, '' leaves one out; empty reads every annotator under their id",
    )
    column_to_facet = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="xlsx: column → facet. Label Studio: from_name → facet. doccano: label prefix "
        "→ facet, and 'label' → the facet of unprefixed labels. '' leaves one out (not xlsx)",
    )
    predictions = serializers.ChoiceField(
        choices=["ignore", "rater"],
        default="ignore",
        help_text="Label Studio: read each prediction's model_version as a rater",
    )
    final_sheet = serializers.CharField(required=False, allow_null=True, default=None)
    final_column_to_facet = serializers.DictField(
        child=serializers.CharField(), required=False, allow_null=True, default=None
    )
    separators = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField(trim_whitespace=False)),
        required=False,
        default=None,
        help_text="facet → separators of a multi-value cell; default: ' & ' and ' / ' for every "
        "multi-choice facet, as the wizard",
    )
    duplicates = serializers.ChoiceField(
        choices=list(DUPLICATE_RULES),
        default="first",
        help_text="a key repeated in a sheet: keep its first row, its last, or drop every row "
        "of it (per sheet; each row left out is listed in the response)",
    )
    users = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        default=dict,
        help_text="not taken: each annotator of the workbook becomes a pseudonymous rater of "
        "the study (s<study>-rater-<name>); staff link a rater to a person's account with their "
        "consent (manage.py link_rater)",
    )
    values = serializers.DictField(
        child=serializers.DictField(child=serializers.CharField(allow_blank=True)),
        required=False,
        default=dict,
        help_text=f"facet → raw value → category code, {PROPOSE!r} (propose it) or '' (ignore)",
    )
    study = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="a study you own gets a new round"
    )
    study_name = serializers.CharField(required=False, default="", max_length=200)
    codebook_version = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="a new study's published version"
    )

    def validate_users(self, users: dict[str, str]) -> dict[str, str]:
        if users:  # the same answer whatever the names: it tells nothing about accounts
            raise serializers.ValidationError(
                "imported annotators become pseudonymous raters of the study; staff link a "
                "rater to an account with its owner's consent (manage.py link_rater)"
            )
        return users

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        required = "This field is required."
        if self.context.get("format", "xlsx") == "xlsx":
            needed = ("key_column", "sheet_to_annotator", "column_to_facet")
            missing = {f: [required] for f in needed if not data[f]}
            if missing:
                raise serializers.ValidationError(missing)
            if "" in data["column_to_facet"].values():
                raise serializers.ValidationError({"column_to_facet": "name a facet per column"})
        else:
            missing = {f: [required] for f in ("data_key", "column_to_facet") if not data[f]}
            if missing:
                raise serializers.ValidationError(missing)
        if not data["study"] and not (data["study_name"] and data["codebook_version"]):
            raise serializers.ValidationError(
                "give a study, or a study_name and codebook_version for a new study"
            )
        return data


class PriorImportInput(PriorWorkbookInput):
    mapping = serializers.JSONField(help_text="a JSON object: see PriorMappingInput")


class PriorSkippedRowOutput(serializers.Serializer):
    sheet = serializers.CharField()
    row = serializers.IntegerField(help_text="as Excel numbers it (the header is row 1)")
    key = serializers.CharField(allow_null=True, help_text="null: the row had no key")
    reason = serializers.CharField()


class PriorFinalOnlyOutput(serializers.Serializer):
    key = serializers.CharField()
    row = serializers.IntegerField()


class PriorLeftOutValueOutput(serializers.Serializer):
    value = serializers.CharField()
    mapped_to = serializers.ChoiceField(choices=["ignore", "propose"])
    cells = serializers.IntegerField(help_text="annotators' cells holding the value")


class PriorLeftOutOutput(serializers.Serializer):
    values = PriorLeftOutValueOutput(many=True)
    ratings_removed = serializers.IntegerField(
        help_text="ratings of the facet left with no label (missing in agreement)"
    )


class PriorImportOutput(serializers.Serializer):
    study = serializers.IntegerField()
    round = serializers.IntegerField(help_text="the created round's id")
    round_number = serializers.IntegerField()
    items = serializers.IntegerField()
    created_issues = serializers.IntegerField()
    annotations = serializers.IntegerField()
    labels = serializers.IntegerField()
    decisions = serializers.IntegerField()
    proposals = serializers.IntegerField()
    left_out = serializers.IntegerField(help_text="values ignored or proposed, in all sheets")
    placeholders = serializers.ListField(
        child=serializers.CharField(), help_text="the raters this import added to the study"
    )
    duplicates = serializers.ChoiceField(choices=list(DUPLICATE_RULES))
    skipped = PriorSkippedRowOutput(many=True, help_text="every row left out, and why")
    final_only = PriorFinalOnlyOutput(
        many=True, help_text="keys of the final sheet no annotator labelled: not imported"
    )
    left_out_by_facet = serializers.DictField(
        child=PriorLeftOutOutput(), help_text="facet → the values written as no label"
    )


class PriorImportError400(serializers.Serializer):
    detail = serializers.CharField()
    unmatched = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="facet → raw values still to map, propose or ignore",
    )


@contextmanager
def _saved(upload: Any) -> Iterator[Path]:
    """The upload as a file on disk (the services read a path), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="prior-labels-") as folder:
        path = Path(folder) / "workbook.xlsx"  # openpyxl reads by the extension
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        yield path


class PriorInspectApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": PriorWorkbookInput}, responses=PriorInspectOutput
    )
    def post(self, request: Request) -> Response:
        data = PriorWorkbookInput(data=request.data)
        data.is_valid(raise_exception=True)
        format, upload = data.validated_data["format"], data.validated_data["file"]
        with _saved(upload) as path:
            try:
                if format == "xlsx":
                    info = inspect_workbook(path)
                elif format == "labelstudio":
                    found = inspect_labelstudio(path)
                else:
                    found = inspect_doccano(path, upload.name)
            except SpreadsheetError as error:  # LabelFileError too
                raise ValidationError({"file": str(error)}) from None
        if format != "xlsx":
            body = {"format": format, "sheets": [], "key_column": found.key_field}
            body |= {"units": found.units, "data_keys": list(found.fields)}
            body |= {"label_sources": list(found.label_sources)}
            return Response(body | {"annotators": list(found.annotators)})
        sheets = [asdict(s) for s in info.sheets]
        guess = next((s.key_column for s in info.sheets if s.key_column), None)
        return Response({"format": "xlsx", "sheets": sheets, "key_column": guess})


class PriorImportApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": PriorImportInput},
        responses={201: PriorImportOutput, 400: PriorImportError400},
    )
    def post(self, request: Request) -> Response:
        data = PriorImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        format = data.validated_data["format"]
        given = PriorMappingInput(data=data.validated_data["mapping"], context={"format": format})
        if not given.is_valid():
            raise ValidationError({"mapping": given.errors})
        options = given.validated_data
        study, version = self._target(request, options)
        upload = data.validated_data["file"]
        mapping = prior_mapping(options, version, format=format, source_name=upload.name)
        with _saved(upload) as path:
            try:
                review = review_prior_labels(path=path, mapping=mapping, version=version)
            except (SpreadsheetError, PriorImportError) as error:
                raise ValidationError({"detail": str(error)}) from None
            try:
                result = import_prior_labels(
                    path=path,
                    mapping=mapping,
                    choices=options["values"],
                    user=request.user,
                    study=study,
                    study_name=options["study_name"],
                    codebook_version=None if study else version,
                    filename=upload.name,
                )
            except (SpreadsheetError, PriorImportError) as error:
                body: dict[str, Any] = {"detail": str(error)}
                unmatched = _unmatched(review, options["values"])
                if unmatched:
                    body["unmatched"] = unmatched
                return Response(body, status=status.HTTP_400_BAD_REQUEST)
        return Response(_result(result), status=status.HTTP_201_CREATED)

    def _target(
        self, request: Request, options: dict[str, Any]
    ) -> tuple[Study | None, CodebookVersion]:
        if options["study"]:
            study = (
                Study.objects.filter(
                    pk=options["study"],
                    memberships__user=request.user.pk,
                    memberships__role=Membership.Role.OWNER,
                )
                .select_related("codebook_version")
                .first()
            )
            if study is None:
                raise Http404
            return study, study.codebook_version
        version = CodebookVersion.objects.filter(
            pk=options["codebook_version"], status="published"
        ).first()
        if version is None:
            raise ValidationError({"mapping": {"codebook_version": "no such published version"}})
        return None, version


def prior_mapping(
    options: dict[str, Any], version: CodebookVersion, *, format: str, source_name: str
) -> PriorMapping:
    """The PriorMapping of validated PriorMappingInput `options` for a file of `format` (the
    API and `manage.py import_prior_labels`)."""
    separators = options["separators"]
    if separators is None and format == "xlsx":
        multi = Facet.objects.filter(version=version, kind=Facet.Kind.MULTI)
        separators = {key: [" & ", " / "] for key in multi.values_list("key", flat=True)}
    return PriorMapping(
        key_column=options["key_column"] or options["data_key"],
        sheet_to_annotator=options["sheet_to_annotator"],
        column_to_facet=options["column_to_facet"],
        final_sheet=options["final_sheet"] if format == "xlsx" else None,
        final_column_to_facet=options["final_column_to_facet"] if format == "xlsx" else None,
        separators=separators or {},
        duplicates=options["duplicates"],
        format=format,
        data_key=options["data_key"],
        predictions=options["predictions"],
        source_name=source_name,
    )


def _unmatched(review: Review, choices: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for facet, matching in review.matchings.items():
        given = choices.get(facet, {})
        values = [u.value for u in matching.unmatched if u.value not in given]
        if values:
            out[facet] = values
    return out


def _result(result: PriorImportResult) -> dict[str, Any]:
    return {
        "study": result.study.pk,
        "round": result.round.pk,
        "round_number": result.round.number,
        "items": result.items,
        "created_issues": result.created_issues,
        "annotations": result.annotations,
        "labels": result.labels,
        "decisions": result.decisions,
        "proposals": result.proposals,
        "left_out": result.left_out,
        "placeholders": result.placeholders,
        "duplicates": result.record["duplicates"],
        "skipped": result.record["skipped"],
        "final_only": result.record["final_only"],
        "left_out_by_facet": result.record["left_out"],
    }
