from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from .raters import RATER_NAME, RESERVED_MESSAGE
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


class SignupForm(UserCreationForm):
    """A new account on an invitation link (annotator/studies/views/studies.py, join): user
    name, password twice (checked by AUTH_PASSWORD_VALIDATORS), optional e-mail for password
    resets. It validates only: the studies service creates the account and the membership."""

    email = forms.EmailField(
        required=False, help_text="Optional: where a password reset link can be sent."
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_username(self) -> str:
        # None when the name is taken (Django's form has recorded that error already), though
        # typed str.
        username: str = super().clean_username()
        if username and RATER_NAME.match(username):
            raise forms.ValidationError(RESERVED_MESSAGE)
        return username


class GitHubTokenForm(forms.Form):
    """A GitHub token pasted on the account page; never rendered back (render_value=False)."""

    token = forms.CharField(
        label="GitHub token",
        max_length=255,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="A personal access token (classic or fine-grained) that can read the "
        "repositories you sync; for private ones, give it the repo scope.",
    )
