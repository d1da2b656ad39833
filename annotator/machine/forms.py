"""The forms of the machine-rater pages: declaring a rater, starting a run."""

from __future__ import annotations

from typing import Any

from django import forms

from annotator.studies.models import Round, Study


class RaterForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="how the rater is named in reports")
    model = forms.CharField(max_length=200, help_text="the model id the server knows")
    base_url = forms.URLField(
        required=False,
        max_length=500,
        label="Base URL",
        assume_scheme="http",  # local servers (vLLM, Ollama, llama.cpp) speak plain HTTP
        help_text="empty: the server's LLM_BASE_URL (e.g. http://127.0.0.1:8080/v1)",
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    top_p = forms.FloatField(required=False, min_value=0, max_value=1, label="top_p")
    max_tokens = forms.IntegerField(required=False, min_value=1, max_value=100_000)
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    samples = forms.IntegerField(
        initial=1, min_value=1, max_value=20, help_text="answers per item (k)"
    )
    token_budget = forms.IntegerField(
        initial=6000, min_value=200, max_value=1_000_000, help_text="tokens of the issue thread"
    )

    def service_arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        parameters = {
            key: data[key]
            for key in ("temperature", "top_p", "max_tokens", "seed")
            if data.get(key) is not None
        }
        return {
            "name": data["name"],
            "model": data["model"],
            "base_url": data.get("base_url") or "",
            "parameters": parameters,
            "samples": data["samples"],
            "token_budget": data["token_budget"],
        }


class RunForm(forms.Form):
    round = forms.ModelChoiceField(queryset=Round.objects.none(), empty_label=None)
    sample_size = forms.IntegerField(
        required=False, min_value=1, label="Sample of items", help_text="empty: every item"
    )
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=2**31 - 1, help_text="empty: drawn and recorded"
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["round"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = Round.objects.filter(study=study).order_by("-number")
        field.label_from_instance = _round_label  # type: ignore[method-assign,assignment]


def _round_label(round: Round) -> str:
    return f"Round {round.number} ({round.kind})"
