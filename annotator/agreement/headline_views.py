"""The declared-headline page: the study's declaration, its changes, and the form to declare
(owners). annotator/agreement/headline.py records and describes declarations."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotator.studies.access import MANAGERS, SEE_ALL, membership_or_404
from annotator.studies.codebook import codebook_schema

from . import headline
from .models import HeadlineDeclaration
from .services import study_threshold


class HeadlineForm(forms.Form):
    coefficient = forms.ChoiceField(
        choices=HeadlineDeclaration.Coefficient.choices,
        help_text="The one coefficient the study reports as its reliability figure.",
    )
    facets = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        help_text="The facets it is reported for.",
    )
    threshold = forms.FloatField(
        min_value=0,
        max_value=1,
        help_text="Each declared facet must reach it with the lower bound of its 95% interval.",
    )
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Required for a change: why the headline changes. The earlier declaration "
        "stays on the report and the dataset card beside it.",
    )

    def __init__(self, *args: object, facet_choices: list[tuple[str, str]], **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["facets"].choices = facet_choices  # type: ignore[attr-defined]


@require_http_methods(["GET", "POST"])
def headline_page(request: HttpRequest, study_id: int) -> HttpResponse:
    """GET: owners and adjudicators read the declaration; POST: an owner declares."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    study = membership.study
    facets = [(f.key, f.name) for f in codebook_schema(study.codebook_version).facets]
    declared = headline.declarations(study)
    initial: dict[str, object] = {"coefficient": "krippendorff_alpha"}
    initial["threshold"] = study_threshold(study)
    if declared:  # the form starts from the current declaration
        current = declared[-1]
        initial = {"coefficient": current.coefficient, "facets": current.facets}
        initial["threshold"] = current.threshold
    form = HeadlineForm(initial=initial, facet_choices=facets)
    status = 200
    if request.method == "POST":
        membership = membership_or_404(request, study_id, MANAGERS)
        form = HeadlineForm(request.POST, facet_choices=facets)
        if form.is_valid():
            data = form.cleaned_data
            try:
                headline.declare_headline(
                    study=study,
                    user=request.user,
                    coefficient=data["coefficient"],
                    facets=data["facets"],
                    threshold=data["threshold"],
                    reason=data["reason"],
                )
            except headline.HeadlineError as error:
                form.add_error(None, str(error))
            else:
                messages.success(request, "Headline declared; the report and the card show it.")
                return redirect("agreement:headline", study_id)
        status = 400
    context = {
        "study": study,
        "membership": membership,
        "form": form,
        "declared": declared,
        "lines": headline.history_lines(declared),
        "started": headline.labeling_started(study),
    }
    return render(request, "agreement/headline.html", context, status=status)
