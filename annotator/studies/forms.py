"""Forms of the study pages; they check shapes, the services check the rules."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from annotator.issues.models import Repository
from annotator.params import BIGINT_MAX, INT_MAX
from taxonomy_app.models import CodebookVersion

from .models import Membership, Round, Study


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = ["name", "codebook_version", "overlap_k", "guidelines"]
        widgets = {"guidelines": forms.Textarea(attrs={"rows": 8})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        version = self.fields["codebook_version"]
        assert isinstance(version, forms.ModelChoiceField)
        version.queryset = CodebookVersion.objects.filter(
            status=CodebookVersion.Status.PUBLISHED
        ).select_related("codebook")
        overlap = self.fields["overlap_k"]
        assert isinstance(overlap, forms.IntegerField)
        overlap.min_value = 1


class StudyEditForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = [
            "name",
            "overlap_k",
            "guidelines",
            "route_unsure_to_adjudication",
            "gold_in_agreement",
        ]
        widgets = {"guidelines": forms.Textarea(attrs={"rows": 12})}


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.ANNOTATOR)
    create = forms.BooleanField(required=False, label="Create a new account")


class InviteForm(forms.Form):
    role = forms.ChoiceField(
        choices=[(r, label) for r, label in Membership.Role.choices if r != "owner"],
        initial=Membership.Role.ANNOTATOR,
    )
    max_uses = forms.IntegerField(
        label="Uses",
        required=False,
        min_value=1,
        initial=1,
        help_text="How many people may join by it; empty: no limit.",
    )
    days = forms.IntegerField(
        label="Expires after (days)",
        required=False,
        min_value=1,
        max_value=365,
        help_text="Empty: the default (STUDIES_INVITATION_DAYS).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["days"].initial = settings.STUDIES_INVITATION_DAYS


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


NEW_ROUND = {
    "new-main": Round.Kind.MAIN,
    "new-calibration": Round.Kind.CALIBRATION,
    "new-training": Round.Kind.TRAINING,
}


class SelectionForm(forms.Form):
    q = forms.CharField(
        required=False,
        label="Keyword query",
        help_text="Full-text, web-search syntax: distributed OR parallel OR nccl OR zero",
    )
    repository = forms.ModelChoiceField(
        Repository.objects.all(), required=False, empty_label="All repositories"
    )
    state = forms.ChoiceField(
        required=False, choices=[("", "Any state"), ("open", "Open"), ("closed", "Closed")]
    )
    label = forms.CharField(required=False, help_text="a GitHub label, e.g. bug")
    kind = forms.ChoiceField(
        required=False,
        initial="issue",
        choices=[("issue", "Issues only"), ("", "Issues and PRs"), ("pr", "Pull requests only")],
    )
    since = forms.DateField(required=False, label="Opened from")
    until = forms.DateField(required=False, label="Opened until")
    round = forms.ChoiceField(choices=[])
    sample_size = forms.IntegerField(
        required=False, min_value=1, max_value=INT_MAX, help_text="empty: take every matching issue"
    )
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=BIGINT_MAX, help_text="empty: a random seed"
    )
    stratify = forms.BooleanField(
        required=False, initial=True, label="Stratify the sample by repository"
    )
    reliability_share = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=99,
        label="Reliability sample (%)",
        help_text="Main rounds: this share of the items, stratified by repository, goes to k "
        "annotators and the rest to one. Empty: every item to k.",
    )
    reliability_seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=BIGINT_MAX,
        label="Reliability sample seed",
        help_text="empty: a random seed (recorded)",
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        open_rounds = study.rounds.filter(closed_at=None)  # a closed round takes no issues
        rounds = [(str(r.pk), f"Round {r.number} ({r.kind})") for r in open_rounds]
        new = [
            ("new-main", "A new main round"),
            ("new-calibration", "A new calibration round"),
            ("new-training", "A new training round (gold answers shown after each submit)"),
        ]
        choice = self.fields["round"]
        assert isinstance(choice, forms.ChoiceField)
        choice.choices = [*rounds, *new]

    def filters(self) -> dict[str, str]:
        data = self.cleaned_data
        values = {key: data.get(key) for key in ("q", "state", "label", "kind", "since", "until")}
        values["repository"] = data["repository"].pk if data.get("repository") else ""
        return {k: str(v) for k, v in values.items() if v not in (None, "")}


class SkipForm(forms.Form):
    REASONS = [
        ("not enough information", "Not enough information to judge"),
        ("not about this codebook", "Outside the codebook (not a bug of this kind)"),
        ("conflict of interest", "Conflict of interest"),
        ("other", "Other (say why)"),
    ]
    reason = forms.ChoiceField(choices=REASONS)
    detail = forms.CharField(required=False, max_length=250)

    def text(self) -> str:
        detail = self.cleaned_data.get("detail", "").strip()
        reason = self.cleaned_data["reason"]
        return f"{reason}: {detail}" if detail else reason
