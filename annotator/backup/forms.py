from __future__ import annotations

from django import forms


class RestoreUploadForm(forms.Form):
    archive = forms.FileField(
        label="Backup archive",
        help_text="a .zip made by “Download backup” or `manage.py dump_study`",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )


class RestoreConfirmForm(forms.Form):
    prefer_existing_issues = forms.BooleanField(
        required=False,
        label="Keep this server's copy of issues that changed since the backup",
        help_text="otherwise an issue or comment that differs here stops the restore",
    )
