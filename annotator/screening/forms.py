"""Forms of the screening pages: a new screening round's plan, the audit, the included issues'
selection into a later round."""

from __future__ import annotations

from typing import Any

from django import forms

from annotator.studies.models import Round, Study

from .models import DEFAULT_MODEL, MODELS
from .services import default_relevant, relevant_categories

SEED_MAX = 2**63 - 1


class PlanForm(forms.Form):
    relevant_category = forms.ChoiceField(
        label="Relevant means", help_text="the category a screener chooses for an issue to keep"
    )
    prioritised = forms.BooleanField(
        required=False,
        initial=True,
        label="Prioritised: the model's most likely relevant issue next",
        help_text="off: the seeded random order throughout",
    )
    model = forms.ChoiceField(choices=[(m, m) for m in MODELS], initial=DEFAULT_MODEL)
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=SEED_MAX, help_text="empty: a random seed"
    )
    retrain_every = forms.IntegerField(
        min_value=1, max_value=10_000, initial=10, label="Retrain after every N decisions"
    )
    target_recall = forms.FloatField(
        min_value=0.5, max_value=0.999, initial=0.95, label="Target recall"
    )
    alpha = forms.FloatField(min_value=0.001, max_value=0.2, initial=0.05, label="Alpha")
    looks = forms.IntegerField(
        min_value=1,
        max_value=100,
        initial=1,
        label="Declared looks",
        help_text="how often the test will be read; each reading at alpha / looks",
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["relevant_category"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            (str(c.pk), f"{c.facet.name}: {c.name}") for c in relevant_categories(study)
        ]
        default = default_relevant(study)
        if default is not None:
            field.initial = str(default.pk)


class AuditForm(forms.Form):
    size = forms.IntegerField(min_value=1, label="Audit size (items)")
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=SEED_MAX, help_text="empty: a random seed"
    )


class IncludeForm(forms.Form):
    round = forms.ChoiceField(label="Into")
    sample_size = forms.IntegerField(
        required=False,
        min_value=1,
        label="Random sample of",
        help_text="empty: every included issue",
    )
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=SEED_MAX, help_text="empty: a random seed"
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rounds = study.rounds.filter(closed_at=None).exclude(kind=Round.Kind.SCREENING)
        field = self.fields["round"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            *[(str(r.pk), f"Round {r.number} ({r.kind})") for r in rounds],
            ("new-main", "A new main round"),
        ]
