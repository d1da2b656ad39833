"""Forms of the adjudication pages; each renders with `{{ form }}` (includes/form.html)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotator.studies.codebook import CodebookSchema
from annotator.studies.models import Study

from .models import Decision


class QueueFilterForm(forms.Form):
    facet = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Disagreeing in"
    )
    round = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)

    def __init__(self, *args: Any, study: Study, schema: CodebookSchema, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        facet, round_ = self.fields["facet"], self.fields["round"]
        assert isinstance(facet, forms.ChoiceField) and isinstance(round_, forms.ChoiceField)
        facet.choices = [("", "any facet")] + [(f.id, f.name) for f in schema.facets]
        round_.choices = [("", "every round")] + [
            (r.pk, f"round {r.number}") for r in study.rounds.all()
        ]

    def filters(self) -> dict[str, int | None]:
        data = self.cleaned_data if self.is_valid() else {}
        return {"facet_id": data.get("facet"), "round_id": data.get("round")}


class DecisionForm(forms.Form):
    """One field per facet (`facet-<id>`: a select, multiple for a multi-choice facet), the
    reason and a comment; `version` carries the optimistic lock."""

    reason = forms.ChoiceField(
        choices=[("", "— why did they disagree? —"), *Decision.Reason.choices],
        required=False,
        help_text="r: jump here",
    )
    comment = forms.CharField(
        required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2})
    )
    confidence = forms.TypedChoiceField(
        choices=[("", "— not said —"), *Decision.Confidence.choices],
        coerce=int,
        required=False,
        empty_value=None,
        label="Your confidence",
        help_text="How sure you are of this decision (optional; exported with it).",
    )
    version = forms.IntegerField(min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args: Any, schema: CodebookSchema, differs: set[int], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.schema = schema
        facet_fields: dict[str, forms.Field] = {}
        for facet in schema.facets:
            choices = [(c.id, f"{c.code} — {c.path}") for c in facet.categories]
            attrs = {"data-final": facet.id, "data-facet-key": facet.key}
            if facet.is_multi:
                size = min(8, max(2, len(choices)))
                field: forms.Field = forms.TypedMultipleChoiceField(
                    choices=choices,
                    coerce=int,
                    required=False,
                    widget=forms.SelectMultiple(attrs={**attrs, "size": size}),
                )
            else:
                field = forms.TypedChoiceField(
                    choices=[("", "—"), *choices],
                    coerce=int,
                    required=False,
                    empty_value=None,
                    widget=forms.Select(attrs=attrs),
                )
            field.label = f"Final {facet.name}" + (" *" if facet.required else "")
            if facet.id in differs:
                field.help_text = "the annotators differ here"
            facet_fields[f"facet-{facet.id}"] = field
        # facets first, in codebook order, then the reason and comment
        self.fields = {**facet_fields, **self.fields}

    def labels(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for facet in self.schema.facets:
            value = self.cleaned_data.get(f"facet-{facet.id}")
            out[facet.id] = list(value) if isinstance(value, list) else [value] if value else []
        return out

    def show_errors(self, errors: dict[str, str]) -> None:
        """Put the service's errors (by facet key) beside their fields."""
        fields = {f.key: f"facet-{f.id}" for f in self.schema.facets}
        for key, message in errors.items():
            self.add_error(fields.get(key) if key != "reason" else "reason", message)


class CommentForm(forms.Form):
    body = forms.CharField(
        label="Your message",
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 3, "data-autofocus": ""}),
        help_text="Markdown. Everyone in this thread reads it.",
    )


class MajorityForm(forms.Form):
    majority_rule = forms.BooleanField(
        required=False,
        label="Decide by majority (k ≥ 3)",
        help_text="Items where more than half of the annotators agree on every facet are "
        "decided automatically instead of entering the queue.",
    )
    blind = forms.BooleanField(
        required=False,
        label="Blind adjudication",
        help_text="Adjudicators see the annotators as Annotator A, B, C… until the item is "
        "decided (adjudicate, discussion and history pages and the API).",
    )
    fast_label_seconds = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=86_400,
        label="Flag labels faster than (seconds)",
        help_text="The adjudicate page marks an annotation given in fewer seconds. 0: off.",
    )
