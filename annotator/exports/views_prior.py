"""The prior-labels wizard: upload → map sheets and columns → review values → confirm.

The file is a workbook, a Label Studio JSON export or a doccano JSONL export (the format is
chosen on upload); the map step differs (sheets and columns, or the data key and the
from_names / label prefixes), the review and confirm steps are the same.

Nothing but the uploaded file (kept under MEDIA_ROOT/prior-labels/) and the session's wizard
state is written before the confirm step, which calls `prior.import_prior_labels` once.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import messages
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotator.studies.models import Membership, Study
from annotator.upload_handling import store_upload
from taxonomy_app.models import CodebookVersion, Facet

from .forms import UploadForm, upload_kind
from .interop import LabelFileInfo, inspect_doccano, inspect_labelstudio
from .prior import (
    IGNORE,
    PROPOSE,
    PriorImportError,
    PriorImportResult,
    PriorMapping,
    Review,
    import_prior_labels,
)
from .prior import review_prior_labels as review_labels
from .spreadsheets import SheetInfo, SpreadsheetError, WorkbookInfo, inspect_workbook

SESSION = "prior_labels"
DUPLICATES = [
    ("first", "keep its first row"),
    ("last", "keep its last row"),
    ("drop", "drop every row of it"),
]
ROLES = [
    ("annotator", "an annotator's sheet"),
    ("final", "the final (agreed) sheet"),
    ("ignore", "ignore"),
]


def _state(request: HttpRequest, token: str) -> dict[str, Any]:
    state = request.session.get(SESSION, {}).get(token)
    if state is None:
        raise Http404("This import has expired; upload the workbook again")
    return dict(state)


def _save(request: HttpRequest, token: str, state: dict[str, Any] | None) -> None:
    wizard = dict(request.session.get(SESSION, {}))
    if state is None:
        wizard.pop(token, None)
    else:
        wizard[token] = state
    request.session[SESSION] = wizard


def _version(state: dict[str, Any]) -> CodebookVersion:
    if state.get("study"):
        return Study.objects.get(pk=state["study"]).codebook_version
    return CodebookVersion.objects.get(pk=state["version"])


@require_http_methods(["GET", "POST"])
def prior_upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        token = secrets.token_urlsafe(12)
        upload, format = form.cleaned_data["file"], form.cleaned_data["format"]
        name = store_upload(upload, directory="prior-labels", kind_name=upload_kind(format))
        try:
            state = _inspect(form, name, format)
        except SpreadsheetError as error:  # LabelFileError too
            default_storage.delete(name)
            form.add_error("file", str(error))
        else:
            _save(request, token, state)
            return redirect("exports:prior_map", token=token)
    status = 400 if form.errors else 200
    return render(request, "exports/prior_upload.html", {"form": form}, status=status)


def _inspect(form: UploadForm, name: str, format: str) -> dict[str, Any]:
    path = default_storage.path(name)
    if format == "labelstudio":
        return _label_file_state(form, name, inspect_labelstudio(path))
    if format == "doccano":
        return _label_file_state(form, name, inspect_doccano(path, form.cleaned_data["file"].name))
    return _upload_state(form, name, inspect_workbook(path))


def _target_state(form: UploadForm, name: str) -> dict[str, Any]:
    study, version = form.cleaned_data["study"], form.cleaned_data["codebook_version"]
    return {
        "file": name,
        "filename": form.cleaned_data["file"].name,
        "format": form.cleaned_data["format"],
        "study": study.pk if study else None,
        "study_name": form.cleaned_data["study_name"],
        "version": version.pk if version else None,
    }


def _upload_state(form: UploadForm, name: str, info: WorkbookInfo) -> dict[str, Any]:
    """The wizard's state after the upload: the stored file, the target and the sheets."""
    return {**_target_state(form, name), "sheets": [_sheet_state(s) for s in info.sheets]}


def _label_file_state(form: UploadForm, name: str, info: LabelFileInfo) -> dict[str, Any]:
    """The state after a Label Studio or doccano upload: fields, label sources, annotators."""
    return {
        **_target_state(form, name),
        "units": info.units,
        "fields": list(info.fields),
        "key_field": info.key_field,
        "label_sources": list(info.label_sources),
        "annotators": list(info.annotators),
    }


def _sheet_state(sheet: SheetInfo) -> dict[str, Any]:
    return {
        "name": sheet.name,
        "columns": list(sheet.columns),
        "rows": sheet.rows,
        "key": sheet.key_column,
    }


class MappingForm(forms.Form):
    def __init__(self, *args: Any, state: dict[str, Any], facets: list[Facet], **kw: Any) -> None:
        super().__init__(*args, **kw)
        sheets = state["sheets"]
        columns = sorted({c for s in sheets for c in s["columns"]})
        guess = next((s["key"] for s in sheets if s["key"]), None)
        self.fields["key_column"] = forms.ChoiceField(
            choices=[(c, c) for c in columns], initial=guess, help_text="the issue URL column"
        )
        for i, sheet in enumerate(sheets):
            final = sheet["name"].strip().casefold() == "final"
            self.fields[f"role_{i}"] = forms.ChoiceField(
                choices=ROLES,
                label=f"Sheet “{sheet['name']}” ({sheet['rows']} rows) is",
                initial="final" if final else "annotator",
            )
        self.fields["duplicates"] = forms.ChoiceField(
            choices=DUPLICATES,
            initial="first",
            label="A key repeated in a sheet",
            help_text="per sheet; every row left out is listed on the next page and kept with "
            "the import",
        )
        choices = [("", "— not a facet —"), *((f.key, f.name) for f in facets)]
        for i, column in enumerate(columns):
            self.fields[f"column_{i}"] = forms.ChoiceField(
                choices=choices,
                required=False,
                label=f"Column “{column}” holds",
                initial=_guess_facet(column, facets),
            )
        self.columns = columns
        self.multi = [f.key for f in facets if f.kind == Facet.Kind.MULTI]


class LabelFileMappingForm(forms.Form):
    """The map step for a Label Studio or doccano file: which field names the issue, which
    facet each from_name (doccano: each label prefix, or unprefixed labels) holds."""

    def __init__(self, *args: Any, state: dict[str, Any], facets: list[Facet], **kw: Any) -> None:
        super().__init__(*args, **kw)
        fields = list(state["fields"])
        if "repository" in fields and "number" in fields:
            fields.append("repository+number")
        self.fields["data_key"] = forms.ChoiceField(
            choices=[(f, f) for f in fields],
            initial=state["key_field"],
            label="The field naming the issue",
            help_text="a GitHub issue URL, OWNER/NAME#N, or repository+number",
        )
        labelstudio = state["format"] == "labelstudio"
        choices = [("", "— leave out —"), *((f.key, f.name) for f in facets)]
        self.sources = list(state["label_sources"])
        for i, source in enumerate(self.sources):
            if labelstudio:
                label = f"Label Studio control “{source}” (from_name) holds"
            elif source == "label":
                label = "Labels without a facet: prefix hold"
            else:
                label = f"Labels “{source}:…” hold"
            self.fields[f"source_{i}"] = forms.ChoiceField(
                choices=choices,
                required=False,
                label=label,
                initial=_guess_facet(source, facets),
            )
        self.fields["duplicates"] = forms.ChoiceField(
            choices=DUPLICATES,
            initial="first",
            label="An issue one annotator labelled twice",
            help_text="every task or line left out is listed on the next page",
        )
        if labelstudio:
            self.fields["predictions"] = forms.ChoiceField(
                choices=[
                    ("ignore", "ignore them"),
                    ("rater", "read each model_version as a rater"),
                ],
                initial="ignore",
                label="Predictions in the file",
            )


def _label_file_mapping(form: LabelFileMappingForm, state: dict[str, Any]) -> dict[str, Any]:
    data = form.cleaned_data
    to_facet = {s: data[f"source_{i}"] for i, s in enumerate(form.sources)}
    return {
        "format": state["format"],
        "key_column": data["data_key"],
        "data_key": data["data_key"],
        "sheet_to_annotator": {},
        "column_to_facet": to_facet,
        "final_sheet": None,
        "final_column_to_facet": None,
        "separators": {},
        "duplicates": data["duplicates"],
        "predictions": data.get("predictions") or "ignore",
        "source_name": state["filename"],
    }


def _guess_facet(column: str, facets: list[Facet]) -> str:
    text = column.casefold().removesuffix(" final").strip()
    for f in facets:
        if text in {f.key.casefold(), f.name.casefold()}:
            return f.key
    return ""


def _mapping(form: MappingForm, state: dict[str, Any]) -> dict[str, Any]:
    data = form.cleaned_data
    to_facet = {c: data[f"column_{i}"] for i, c in enumerate(form.columns) if data[f"column_{i}"]}
    annotators, final = {}, None
    for i, sheet in enumerate(state["sheets"]):
        role = data[f"role_{i}"]
        if role == "annotator":
            annotators[sheet["name"]] = sheet["name"]
        elif role == "final":
            final = sheet["name"]
    columns_of = {s["name"]: set(s["columns"]) for s in state["sheets"]}
    shared = {c: f for c, f in to_facet.items() if all(c in columns_of[s] for s in annotators)}
    in_final = {c: f for c, f in to_facet.items() if final and c in columns_of[final]}
    mapping = {
        "key_column": data["key_column"],
        "sheet_to_annotator": annotators,
        "column_to_facet": shared,
        "final_sheet": final,
        "final_column_to_facet": in_final or None,
        "separators": {f: [" & ", " / "] for f in form.multi},
        "duplicates": data["duplicates"],
    }
    return mapping


@require_http_methods(["GET", "POST"])
def prior_map(request: HttpRequest, token: str) -> HttpResponse:
    state = _state(request, token)
    facets = list(Facet.objects.filter(version=_version(state)).order_by("order", "pk"))
    if state.get("format", "xlsx") != "xlsx":
        return _label_file_map(request, token, state, facets)
    form = MappingForm(request.POST or None, state=state, facets=facets)
    if request.method == "POST" and form.is_valid():
        mapping = _mapping(form, state)
        if not mapping["sheet_to_annotator"] or not mapping["column_to_facet"]:
            form.add_error(None, "Map at least one annotator sheet and one column to a facet.")
        else:
            _save(request, token, {**state, "mapping": mapping})
            return redirect("exports:prior_review", token=token)
    context = {"form": form, "state": state, "token": token}
    return render(request, "exports/prior_map.html", context, status=400 if form.errors else 200)


def _label_file_map(
    request: HttpRequest, token: str, state: dict[str, Any], facets: list[Facet]
) -> HttpResponse:
    form = LabelFileMappingForm(request.POST or None, state=state, facets=facets)
    if request.method == "POST" and form.is_valid():
        mapping = _label_file_mapping(form, state)
        if not any(mapping["column_to_facet"].values()):
            form.add_error(None, "Map at least one from_name or label prefix to a facet.")
        else:
            _save(request, token, {**state, "mapping": mapping})
            return redirect("exports:prior_review", token=token)
    context = {"form": form, "state": state, "token": token}
    return render(request, "exports/prior_map.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def prior_review(request: HttpRequest, token: str) -> HttpResponse:
    state = _state(request, token)
    if "mapping" not in state:
        return redirect("exports:prior_map", token=token)
    mapping = PriorMapping(**state["mapping"])
    path = Path(default_storage.path(state["file"]))
    error = ""
    try:
        review = review_labels(path=path, mapping=mapping, version=_version(state))
    except (SpreadsheetError, PriorImportError) as failure:
        failed = {"state": state, "token": token, "error": str(failure)}
        return render(request, "exports/prior_review.html", failed, status=400)
    if request.method == "POST":
        choices = _choices(request, review)
        try:
            result = _confirm(request, state, path, mapping, choices)
        except PriorImportError as failure:
            error = str(failure)
        else:
            default_storage.delete(state["file"])
            _save(request, token, None)
            messages.success(request, _summary(result))
            return redirect(result.study)
    context: dict[str, Any] = {
        "state": state,
        "token": token,
        "review": review,
        "error": error,
        "propose": PROPOSE,
        "ignore": IGNORE,
        "skipped": review.labels.skipped,
        "final_only": review.labels.final_only(mapping.final_sheet),
        "facets": [(f, m, review.categories[f]) for f, m in review.matchings.items()],
    }
    return render(request, "exports/prior_review.html", context, status=400 if error else 200)


def _summary(result: PriorImportResult) -> str:
    proposals = f", {result.proposals} proposals" if result.proposals else ""
    skipped, only = len(result.record["skipped"]), len(result.record["final_only"])
    unit = {"labelstudio": "tasks or annotations", "doccano": "lines"}
    left_out = f", {skipped} {unit.get(result.record.get('format', ''), 'rows')} left out"
    left_out = left_out if skipped else ""
    final = f", {only} keys of the final sheet alone not imported" if only else ""
    return (
        f"Imported round {result.round.number} (closed): {result.items} items, "
        f"{result.annotations} annotations, {result.decisions} decisions{proposals}"
        f"{left_out}{final}; the study page lists them."
    )


def _choices(request: HttpRequest, review: Review) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for facet, matching in review.matchings.items():
        for n, unmatched in enumerate(matching.unmatched):
            value = request.POST.get(f"value_{facet}_{n}")
            if value is not None:
                out.setdefault(facet, {})[unmatched.value] = value
    return out


def _confirm(
    request: HttpRequest,
    state: dict[str, Any],
    path: Path,
    mapping: PriorMapping,
    choices: dict[str, dict[str, str]],
) -> PriorImportResult:
    study = None
    if state.get("study"):
        study = Study.objects.filter(
            pk=state["study"],
            memberships__user=request.user.pk,
            memberships__role=Membership.Role.OWNER,
        ).first()
        if study is None:
            raise Http404("No such study")
    return import_prior_labels(
        path=path,
        mapping=mapping,
        choices=choices,
        user=request.user,
        study=study,
        study_name=state.get("study_name", ""),
        codebook_version=None if study else CodebookVersion.objects.get(pk=state["version"]),
        filename=state["filename"],
    )
