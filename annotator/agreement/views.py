"""The agreement report: per facet coefficients with intervals, trend, per-category table,
annotator-pair heatmap, confusion matrices whose cells open the items behind them.

Owners and adjudicators only (labels of several annotators are shown side by side); anyone
else gets 404, as on the studies pages. Every page reads the stored JSON: its query count does
not depend on the number of items.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import floatformat
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from annotator.dispatch import warn_if_waiting
from annotator.params import optional_int
from annotator.studies.access import MANAGERS, SEE_ALL, membership_or_404
from annotator.studies.models import Item, Membership, Round, Study
from annotator.studies.rounds import asked_round

from . import stats
from .discussion import after_discussion
from .headline import headline_context
from .labels import load_label_table
from .models import AgreementRun, CalibrationPass
from .planning import plan_rows
from .report import facet_view, label_text, method_sentences, trend_chart
from .services import (
    AgreementError,
    calibration_verdict,
    mark_calibration_passed,
    set_threshold,
    start_agreement_run,
    study_threshold,
)
from .summary import conventions_of


def study_report(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's latest run (or a prompt to start one), with the trend and every run."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    run = AgreementRun.objects.filter(study_id=study_id).select_related("round").first()
    return _render_report(request, membership, run)


def run_report(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(AgreementRun.objects.select_related("round"), pk=run_id)
    membership = membership_or_404(request, run.study_id, SEE_ALL)
    if getattr(request, "htmx", False):
        response = render(request, "agreement/report.html#run-status", {"run": run})
        if run.is_finished:
            response.status_code = HttpResponseStopPolling.status_code
            response["HX-Refresh"] = "true"  # the finished run's report replaces the bar
        return response
    return _render_report(request, membership, run)


def _render_report(
    request: HttpRequest, membership: Membership, run: AgreementRun | None
) -> HttpResponse:
    study = membership.study
    threshold = study_threshold(study)
    latest = AgreementRun.objects.filter(study=study).latest_per_round()
    passes = {p.round_id: p for p in CalibrationPass.objects.filter(round__study=study)}
    context: dict[str, Any] = {
        "study": study,
        "membership": membership,
        "run": run,
        "threshold": threshold,
        "rounds": Round.objects.filter(study=study),
        # the list shows no figures: each run's result and inputs stay in the database
        "recent": AgreementRun.objects.filter(study=study)
        .select_related("round")
        .defer("result", "inputs")[:10],
        "trend": trend_chart(latest, threshold),
        "passed_runs": {p.run_id for p in passes.values()},
        "passed": passes.get(run.round_id) if run and run.round_id else None,
        "after_discussion": after_discussion(study),
        "headline": headline_context(study, run),
    }
    if run is not None and run.result:
        context["facets"] = [facet_view(f, threshold) for f in run.result["facets"]]
        context["plan"] = plan_rows(run.result["facets"])
        context["verdict"] = calibration_verdict(run, threshold)
        context["conventions"] = conventions_of(run.result)
        context["method"] = method_sentences(run.inputs, run.result)
    return render(request, "agreement/report.html", context)


@require_POST
def start_run(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, SEE_ALL)
    round_id = optional_int(request.POST.get("round"), name="round")  # a 400 naming it
    chosen = (
        Round.objects.filter(study=membership.study, pk=round_id) if round_id is not None else None
    )
    round = chosen.first() if chosen is not None else None
    if chosen is not None and round is None:
        raise Http404("No such round")
    run = start_agreement_run(study=membership.study, round=round, user=request.user)
    warn_if_waiting(request, run)
    return redirect(run)


@require_POST
def update_threshold(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, MANAGERS)
    try:
        set_threshold(study=membership.study, threshold=float(request.POST.get("threshold", "")))
    except (ValueError, AgreementError) as error:
        messages.error(request, f"Threshold not changed: {error}")
    return redirect("agreement:study", study_id)


@require_POST
def pass_calibration(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(AgreementRun.objects.select_related("round", "study"), pk=run_id)
    membership_or_404(request, run.study_id, MANAGERS)
    try:
        mark_calibration_passed(run=run, user=request.user)
    except AgreementError as error:
        messages.error(request, f"Not passed: {error}")
    else:
        messages.success(request, f"Round {run.round.number if run.round else ''} passed.")
    return redirect(run)


def confusion_cell(request: HttpRequest, run_id: int, facet: str, i: int, j: int) -> HttpResponse:
    """The items behind one confusion-matrix cell, read from the current labels (one query for
    the labels, one for the items)."""
    run = get_object_or_404(
        AgreementRun.objects.select_related("codebook_version", "study"), pk=run_id
    )
    membership_or_404(request, run.study_id, SEE_ALL)
    stored = run.facet_result(facet)
    labels = stored["confusion"]["labels"] if stored else []
    if not (0 <= i < len(labels) and 0 <= j < len(labels)):
        raise Http404("No such cell")
    table = load_label_table(
        study_id=run.study_id,
        version=run.codebook_version,
        round_id=run.round_id,
        facet_keys=[facet],
    )
    current = table.facets[0]
    a, b = (_value(labels[i]), _value(labels[j]))
    rows = stats.units_with_pair(current.table, a, b)
    ids = [int(current.items[r]) for r in rows]
    items = Item.objects.filter(pk__in=ids).select_related("issue__repository", "round")
    context = {
        "run": run,
        "study": run.study,
        "facet": stored,
        "a": label_text(labels[i]),
        "b": label_text(labels[j]),
        "items": items,
    }
    return render(request, "agreement/confusion_cell.html", context)


def _value(label: Any) -> Any:
    return frozenset(label) if isinstance(label, list) else label


# --- per-annotator diagnostics ----------------------------------------------------------------
def annotator_diagnostics(request: HttpRequest, study_id: int) -> HttpResponse:
    """Per-annotator diagnostics of one round (`?round=N`, default the last): the study's owner
    and staff only, since it sets every annotator's figures side by side (404 otherwise, an
    annotator included). `?format=csv` downloads the per-annotator table.

    The figures are those the round's latest agreement run stored, shown with when it computed
    them and a button that starts a new run of the round (owners); nothing is recomputed per
    view, so the page costs the same at any size."""
    from .annotators import page_facets
    from .annotators_service import diagnostics_csv, stored_round_diagnostics

    study, can_start = _owner_or_staff_study(request, study_id)
    asked = asked_round(study, request.GET.get("round"))
    rounds = asked.rounds
    round = asked.last if asked.number is None else asked.round
    if round is None:
        raise Http404("No such round")
    stored = stored_round_diagnostics(round)
    report = stored.report
    if request.GET.get("format") == "csv":
        if report is None:
            raise Http404("No diagnostics computed for this round yet")
        response = HttpResponse(diagnostics_csv(report), content_type="text/csv; charset=utf-8")
        name = f"study-{study.pk}-round-{round.number}-annotators.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    context = {
        "study": study,
        "round": round,
        "rounds": rounds,
        "report": report,
        "computed_by": stored.run,
        "pending": stored.pending,
        "can_start": can_start,
        "facets": _with_curve_text(page_facets(report)) if report is not None else [],
    }
    return render(request, "agreement/annotators.html", context)


def _with_curve_text(facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each annotator's learning curve as the page writes it (each window's first and last
    position and its agreement, windows joined by "; "), built once here: a round of 10,000
    items has thousands of windows per annotator and facet, which the template's filter would
    format one by one. The agreements take few distinct values (shares of 5 to 9 items), each
    formatted once by the same `floatformat`."""
    formatted: dict[float, str] = {}

    def text(w: dict[str, Any]) -> str:
        value = w["agreement"]
        if value not in formatted:
            formatted[value] = floatformat(value, 2)
        return f"{w['first']}\N{EN DASH}{w['last']}: {formatted[value]}"

    for facet in facets:
        for row in facet["annotators"]:
            row["curve_text"] = "; ".join(text(w) for w in row["learning_curve"])
    return facets


def _owner_or_staff_study(request: HttpRequest, study_id: int) -> tuple[Study, bool]:
    """The study, and whether the person may start a run of it (as `start_run` allows: an
    owner or adjudicator of the study, staff included)."""
    user = request.user
    if user.is_authenticated and user.is_staff:
        study = get_object_or_404(Study.objects.select_related("codebook_version"), pk=study_id)
        owner = Membership.objects.filter(study=study, user_id=user.pk, role__in=SEE_ALL)
        return study, owner.exists()
    return membership_or_404(request, study_id, MANAGERS).study, True
