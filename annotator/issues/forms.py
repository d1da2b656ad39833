from django import forms
from django.core.files.uploadedfile import UploadedFile

from annotator.upload_handling import UploadRefused, accept_upload

from .formats import FORMATS


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="GitHub REST issues or comments (JSON array), JSON Lines, "
        "`gh issue list --json` output, or CSV."
    )
    format = forms.ChoiceField(
        choices=[("auto", "detect automatically"), *((f, f) for f in FORMATS)], initial="auto"
    )
    repository = forms.RegexField(
        regex=r"^[\w.-]+/[\w.-]+$",
        required=False,
        help_text="OWNER/NAME, for files whose records do not name their repository.",
        error_messages={"invalid": "Give the repository as OWNER/NAME."},
    )

    def clean_file(self) -> UploadedFile:
        uploaded = self.cleaned_data["file"]
        try:
            accept_upload(uploaded, "issues")  # size, name and every byte: annotator/uploads.py
        except UploadRefused as error:
            raise forms.ValidationError(f"{error}. Nothing was imported.") from None
        return uploaded


class SyncForm(forms.Form):
    repository = forms.RegexField(
        regex=r"^[\w.-]+/[\w.-]+$",
        help_text="OWNER/NAME on GitHub, e.g. deepspeedai/DeepSpeed.",
        error_messages={"invalid": "Give the repository as OWNER/NAME."},
    )
    since = forms.DateTimeField(
        required=False,
        help_text="Optional: fetch only what changed since then. Empty: since the last sync.",
    )
    periodic = forms.BooleanField(
        required=False,
        label="Keep in sync",
        help_text="Re-sync it periodically so a running study sees edits and new comments.",
    )
