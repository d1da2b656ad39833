from __future__ import annotations

from django import forms

from .services import MAX_DAYS, NAME_LENGTH


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_LENGTH, help_text="What uses it, e.g. 'analysis notebook'."
    )
    days = forms.IntegerField(
        label="Expires after (days)",
        required=False,
        min_value=1,
        max_value=MAX_DAYS,
        help_text="Empty: never expires (revoke it when done).",
    )
