"""Screening pages: a new screening round with its plan, and the round's stopping panel (with
its retrain, audit and "take the included issues" forms). Owners write; adjudicators read the
panel (counts only: no screener's label is on it)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotator.studies.access import MANAGERS, SEE_ALL, membership_or_404
from annotator.studies.models import Membership, Round, Study
from annotator.studies.services import StudyError, create_round

from . import services
from .charts import recall_chart, recall_svg
from .forms import AuditForm, IncludeForm, PlanForm
from .models import RetrainJob, ScreeningPlan
from .panel import Panel, RoundSimulation, screening_panel, simulate_round


def panel_url(round: Round) -> str:
    return reverse("screening:panel", args=[round.study_id, round.number])


@require_http_methods(["GET", "POST"])
def screening_new(request: HttpRequest, study_id: int) -> HttpResponse:
    """A new screening round: its plan and stopping rule, declared before anyone screens."""
    study = membership_or_404(request, study_id, MANAGERS).study
    form = PlanForm(request.POST or None, study=study)
    if request.method == "POST" and form.is_valid():
        try:
            plan = services.start_screening_round(
                study=study, user=request.user, **_plan_values(form.cleaned_data)
            )
        except StudyError as error:
            form.add_error(None, str(error))
        else:
            messages.success(
                request,
                f"Screening round {plan.round.number} declared. Add its candidate issues "
                "(choose it as the round on the selection page).",
            )
            return redirect(panel_url(plan.round))
    return render(request, "screening/screening_new.html", {"study": study, "form": form})


def _plan_values(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "relevant_category": int(data["relevant_category"]),
        "prioritised": data["prioritised"],
        "model": data["model"],
        "seed": data["seed"],
        "retrain_every": data["retrain_every"],
        "target_recall": data["target_recall"],
        "alpha": data["alpha"],
        "looks": data["looks"],
    }


def _plan_or_404(request: HttpRequest, study_id: int, number: int, roles: Any) -> ScreeningPlan:
    return _membership_and_plan(request, study_id, number, roles)[1]


def _membership_and_plan(
    request: HttpRequest, study_id: int, number: int, roles: Any
) -> tuple[Membership, ScreeningPlan]:
    """The caller's membership (one of `roles`) and the plan of the study's screening round
    `number`, with its round, study, relevant category and declarer: two queries; 404 else."""
    membership = membership_or_404(request, study_id, roles)
    plan = (
        ScreeningPlan.objects.select_related(
            "round__study", "relevant_category__facet", "declared_by"
        )
        .filter(
            round__study_id=membership.study_id,
            round__number=number,
            round__kind=Round.Kind.SCREENING,
        )
        .first()
    )
    if plan is None:
        raise Http404("No such screening round")
    return membership, plan


def screening_panel_page(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    """The stopping panel; to htmx's polling, only the retrain status (#retrain-status)."""
    membership, plan = _membership_and_plan(request, study_id, number, SEE_ALL)
    study = plan.round.study
    is_owner = membership.is_owner
    if getattr(request, "htmx", False):
        job = RetrainJob.objects.filter(round=plan.round).order_by("-created_at", "-pk").first()
        response = render(
            request, "screening/panel.html#retrain-status", {"job": job, "plan": plan}
        )
        if job is None or job.is_finished:
            response.status_code = HttpResponseStopPolling.status_code
        return response
    panel = screening_panel(plan)
    simulation, simulation_error, simulation_chart = None, "", ""
    if request.GET.get("simulate"):
        try:
            simulation = simulate_round(plan)
        except ValueError as error:
            simulation_error = str(error)
        else:
            simulation_chart = _simulation_chart(simulation)
    context = {
        "simulation": simulation,
        "simulation_error": simulation_error,
        "simulation_chart": simulation_chart,
        "study": study,
        "plan": plan,
        "panel": panel,
        "job": panel.job,
        "chart": _chart(panel),
        "is_owner": is_owner,
        "audit_form": AuditForm(initial={"size": panel.suggested_audit or 1}),
        "include_form": IncludeForm(study=study, prefix="include") if is_owner else None,
    }
    return render(request, "screening/panel.html", context)


def _chart(panel: Panel) -> str:
    found = panel.relevant_found
    chart = recall_chart(
        [("relevant found", panel.curve)],
        relevant=max(found, 1),
        title="Relevant issues found as screening goes on",
        summary=(
            f"{found} relevant found in {panel.prisma.screened} screened issues; "
            f"{panel.since_last_relevant} screened since the last relevant one"
        ),
        target=False,
    )
    svg = recall_svg(chart).decode("utf-8")
    return mark_safe(svg)


def _simulation_chart(simulation: RoundSimulation) -> str:
    chart = recall_chart(
        [("prioritised", simulation.curve), ("random order", simulation.random_curve)],
        relevant=max(simulation.n_relevant, 1),
        title="Simulated recall on this round's decisions",
        summary=(
            f"WSS@95 {simulation.values['wss@95']:.3f} against "
            f"{simulation.values['random_wss@95']:.3f} in random order, over "
            f"{simulation.n_issues} screened issues"
        ),
    )
    # charts.py escapes every text it writes into the SVG.
    return mark_safe(recall_svg(chart).decode("utf-8"))


@require_POST
def screening_retrain(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    plan = _plan_or_404(request, study_id, number, MANAGERS)
    try:
        services.request_retrain(round=plan.round, user=request.user)
    except StudyError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, "Retrain queued; the panel shows its progress.")
    return redirect(panel_url(plan.round))


@require_POST
def screening_audit(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    plan = _plan_or_404(request, study_id, number, MANAGERS)
    form = AuditForm(request.POST)
    if not form.is_valid():
        messages.error(request, "field 'size': give the audit size, a whole number from 1")
        return redirect(panel_url(plan.round))
    try:
        audit = services.draw_audit(
            round=plan.round,
            size=form.cleaned_data["size"],
            seed=form.cleaned_data["seed"],
            user=request.user,
        )
    except StudyError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"Audit of {audit.size} items drawn from the pool of {audit.pool_size} "
            f"(seed {audit.seed}); its items go to screeners first.",
        )
    return redirect(panel_url(plan.round))


@require_POST
def screening_include(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    plan = _plan_or_404(request, study_id, number, MANAGERS)
    study: Study = plan.round.study
    form = IncludeForm(request.POST, study=study, prefix="include")
    if not form.is_valid():
        messages.error(request, "field 'round': choose the round that takes the issues")
        return redirect(panel_url(plan.round))
    data = form.cleaned_data
    try:
        target = (
            create_round(study=study)
            if data["round"] == "new-main"
            else get_object_or_404(study.rounds, pk=int(data["round"]))
        )
        selection = services.select_included(
            screening_round=plan.round,
            round=target,
            sample_size=data["sample_size"],
            seed=data["seed"],
            user=request.user,
        )
    except StudyError as error:
        messages.error(request, str(error))
        return redirect(panel_url(plan.round))
    messages.success(request, selection.method_text)
    return redirect(study)
