from __future__ import annotations

from typing import Any, cast

from django import forms

from annotator.adjudication.models import Decision
from annotator.studies.models import Study
from annotator.upload_handling import UploadRefused, accept_upload
from taxonomy_app.models import CodebookVersion

from .models import ExportJob


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

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rounds = study.rounds.values_list("number", flat=True)
        round_field = cast(forms.TypedChoiceField, self.fields["round"])
        round_field.choices = [("", "every round"), *((n, f"round {n}") for n in rounds)]

    def scope(self) -> str:
        return ExportJob.Scope.DECIDED if self.cleaned_data["decided_only"] else ExportJob.Scope.ALL

    def filters(self) -> dict[str, Any]:
        keys = ("round", "source", "screening", "repository")
        return {k: self.cleaned_data[k] for k in keys if self.cleaned_data.get(k) not in (None, "")}


class UploadForm(forms.Form):
    """Step 1 of the prior-labels wizard: the workbook and where it goes."""

    file = forms.FileField(help_text=".xlsx, a sheet per annotator (plus Final), a row per issue")
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
        if not data.get("study") and not (data.get("study_name") and data.get("codebook_version")):
            raise forms.ValidationError(
                "Choose a study, or name a new study and choose its codebook version."
            )
        return data

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        try:
            accept_upload(upload, "workbook")  # size, sniffing, zip and XML: annotator/uploads.py
        except UploadRefused as error:
            raise forms.ValidationError(f"{error}. Nothing was imported.") from None
        return upload
