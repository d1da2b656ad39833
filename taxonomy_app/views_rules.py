"""Label rules of a draft (add, remove) and the page listing the submitted annotations that
break a new version's rules."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from . import views
from .errors import CodebookError
from .forms import RuleForm, add_service_error
from .models import CodebookVersion, LabelRule
from .services.rules import add_rule, delete_rule, rule_breaks_as_of


@require_POST
def rule_add(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    views.require_owner(request, version.codebook)
    form = RuleForm(request.POST, facets=list(version.facets.all()))
    if form.is_valid():
        try:
            add_rule(
                version=version,
                kind=form.cleaned_data["kind"],
                facet=form.cleaned_data["facet"],
                when_facet=form.cleaned_data["when_facet"] or None,
                when_categories=form.codes("when_categories"),
                categories=form.codes("categories"),
                max_choices=form.cleaned_data["max_choices"],
            )
        except CodebookError as error:
            add_service_error(form, error)
        else:
            messages.success(request, "Added the rule.")
            return redirect(f"{version.get_absolute_url()}#rules")
    return views.version_detail(request, pk, rule_form=form)


@require_POST
def rule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(LabelRule.objects.select_related("version__codebook"), pk=pk)
    views.require_owner(request, rule.version.codebook)
    try:
        delete_rule(rule=rule)
    except CodebookError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, "Removed the rule.")
    return redirect(f"{rule.version.get_absolute_url()}#rules")


def version_rule_breaks(request: HttpRequest, pk: int) -> HttpResponse:
    """The submitted annotations breaking this version's rules, with counts per rule: of the
    studies the signed-in user owns only (nobody else's labels are counted or listed).
    `?rule=N&page=P` turns rule N's list (from 1) to page P; the others show their first."""
    version = get_object_or_404(
        CodebookVersion.objects.select_related("codebook", "based_on"), pk=pk
    )
    rule, page = _number(request.GET.get("rule")), _number(request.GET.get("page"))
    pages = {rule - 1: page} if rule and page else {}
    breaks, figures = rule_breaks_as_of(version=version, viewer=request.user, pages=pages)
    context = {
        "version": version,
        "breaks": breaks or [],
        "counting": breaks is None,  # counted by a job for the first time (figures says so)
        "figures": figures,
        "total": sum(b.count for b in breaks or []),
        "poll_url": request.get_full_path(),
    }
    # While a job counts a large label store's breaks, the page polls the region alone.
    if getattr(request, "htmx", False):
        return render(request, "taxonomy_app/rule_breaks.html#rule-breaks", context)
    return render(request, "taxonomy_app/rule_breaks.html", context)


def _number(value: str | None) -> int | None:
    """A page or rule number of the query string (from 1); None for anything else."""
    text = (value or "").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) < 1:
        return None
    return int(text)
