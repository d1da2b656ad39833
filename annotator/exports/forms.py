from __future__ import annotations

from typing import Any, cast

from django import forms

from annotator.adjudication.models import Decision
from annotator.studies.models import Study
from annotator.upload_handling import UploadRefused, accept_upload
from annotator.uploads import display_name
from taxonomy_app.models import CodebookVersion

from .huggingface import LICENSES
from .models import PACKAGES, ExportJob

PSEUDONYMISE_ONLY = (
    "only the Hugging Face folder and the replication package are pseudonymised: choose one "
    "of them, or leave this unticked"
)


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=ExportJob.Format.choices, initial="csv")
    table = forms.ChoiceField(
        choices=ExportJob.Table.choices,
        initial="final",
        help_text="XLSX always holds a sheet per annotator plus Final and Disagreements",
    )
    decided_only = forms.BooleanField(
        required=False,
        label="Decided items only",
        help_text="leave out items without a decision (otherwise rows with empty final labels)",
    )
    round = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    source = forms.ChoiceField(
        choices=[("", "any decision source"), *Decision.Source.choices],
        required=False,
        label="Decision source",
    )
    screening = forms.CharField(
        required=False,
        max_length=80,
        label="Screening verdict",
        help_text="code of the screening category of the decision, e.g. relevant",
    )
    repository = forms.CharField(required=False, max_length=201, help_text="OWNER/NAME")
    pseudonymise = forms.BooleanField(
        required=False,
        label="Pseudonymise",
        help_text="Hugging Face folder and replication package: annotators as A01…, GitHub "
        "users (authors, commenters, @mentions) as U0001…; the mapping stays here",
    )
    license = forms.ChoiceField(
        choices=LICENSES,
        initial="cc-by-4.0",
        required=False,
        label="Licence of the labels",
        help_text="named in the dataset card and CITATION.cff (Hugging Face folder, package)",
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rounds = study.rounds.values_list("number", flat=True)
        round_field = cast(forms.TypedChoiceField, self.fields["round"])
        round_field.choices = [("", "every round"), *((n, f"round {n}") for n in rounds)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("pseudonymise") and data.get("format") not in PACKAGES:
            self.add_error("pseudonymise", PSEUDONYMISE_ONLY)
        data["license"] = data.get("license") or "cc-by-4.0"
        return data

    def scope(self) -> str:
        return ExportJob.Scope.DECIDED if self.cleaned_data["decided_only"] else ExportJob.Scope.ALL

    def filters(self) -> dict[str, Any]:
        keys = ("round", "source", "screening", "repository")
        return {k: self.cleaned_data[k] for k in keys if self.cleaned_data.get(k) not in (None, "")}


PRIOR_FORMATS = [
    ("xlsx", "Spreadsheet (.xlsx: a sheet per annotator plus Final)"),
    ("labelstudio", "Label Studio JSON export (.json)"),
    ("doccano", "doccano JSONL export, text classification (.jsonl)"),
]
# Label Studio and doccano files pass the checks of the "labels" upload kind (its own size
# limit, LABEL_FILE_MAX_BYTES; UTF-8 without NULs, a JSON head that fits the extension:
# annotator/uploads.py) after the extension check here, which names the format.
LABEL_FILE_EXTENSIONS = {
    "labelstudio": (".json",),
    "doccano": (".jsonl", ".ndjson", ".json"),
}


def upload_kind(format: str) -> str:
    """The upload kind (annotator/upload_handling.py) a prior-label file of `format` is."""
    return "workbook" if format == "xlsx" else "labels"


def accept_prior_file(upload: Any, format: str) -> None:
    """Every check a prior-label upload of `format` passes before it is kept or read; raises
    UploadRefused naming the file."""
    if format in LABEL_FILE_EXTENSIONS:
        extensions = LABEL_FILE_EXTENSIONS[format]
        if not (upload.name or "").lower().endswith(extensions):
            label = dict(PRIOR_FORMATS)[format]
            raise UploadRefused(
                f"{display_name(upload.name)}: expected a {label} ({', '.join(extensions)})"
            )
    accept_upload(upload, upload_kind(format))  # size, sniffing, zip and XML: uploads.py


class UploadForm(forms.Form):
    """Step 1 of the prior-labels wizard: the file, its format and where it goes."""

    format = forms.ChoiceField(
        choices=PRIOR_FORMATS, initial="xlsx", required=False, label="File format"
    )
    file = forms.FileField(
        help_text=".xlsx with a sheet per annotator (plus Final) and a row per issue; or a "
        "Label Studio JSON export; or a doccano JSONL export (one file per user, or a user field)"
    )
    study = forms.ModelChoiceField(
        queryset=Study.objects.none(),
        required=False,
        empty_label="— a new study —",
        help_text="an existing study you own gets a new round",
    )
    study_name = forms.CharField(required=False, max_length=200, label="New study's name")
    codebook_version = forms.ModelChoiceField(
        queryset=CodebookVersion.objects.filter(status="published").select_related("codebook"),
        required=False,
        label="New study's codebook version",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        owned = Study.objects.filter(memberships__user=user, memberships__role="owner")
        cast(forms.ModelChoiceField, self.fields["study"]).queryset = owned

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["format"] = data.get("format") or "xlsx"  # a form posted without it: a workbook
        upload, format = data.get("file"), data["format"]
        if upload is not None and format:
            try:
                accept_prior_file(upload, format)
            except UploadRefused as error:
                self.add_error("file", f"{error}. Nothing was imported.")
        if not data.get("study") and not (data.get("study_name") and data.get("codebook_version")):
            raise forms.ValidationError(
                "Choose a study, or name a new study and choose its codebook version."
            )
        return data
