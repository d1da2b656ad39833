"""The machine-rater pages: a study's raters (declare one), a rater (estimate, start a run),
a run (progress bar while it runs, counts, invalid-answer rate, calls with provenance), a call
(the prompt sent and the raw answer), and the toggle that hides machine labels on item pages.
Owners only (access.py), except the toggle, which adjudicators use too."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from annotator.dispatch import warn_if_waiting
from annotator.studies.access import SEE_ALL, membership_or_404

from . import services
from .access import call_or_404, owner_or_404, rater_or_404, run_or_404
from .forms import RaterForm, RunForm
from .models import MachineRater
from .visibility import hidden_key, humans_done

CALLS_SHOWN = 500


def raters(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's machine raters, and the form to declare one."""
    membership = owner_or_404(request, study_id)
    form = RaterForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid() and not (services.configured() or form.cleaned_data["base_url"]):
            form.add_error("base_url", "LLM_BASE_URL is not set on this server: give a base URL")
        elif form.is_valid():
            try:
                rater = services.declare_rater(
                    study=membership.study, user=request.user, **form.service_arguments()
                )
            except services.MachineError as error:
                form.add_error(None, str(error))
            else:
                messages.success(request, f"Machine rater {rater.name!r} declared.")
                return redirect("machine:rater", rater.pk)
    context = {
        "study": membership.study,
        "raters": MachineRater.objects.filter(study=membership.study),
        "form": form,
        "configured": services.configured(),
    }
    return render(request, "machine/raters.html", context, status=status)


def rater_detail(request: HttpRequest, rater_id: int) -> HttpResponse:
    """A rater: its settings, the cost estimate of a run (`?round=…&sample_size=…`), the
    form that starts a run, and its runs."""
    rater = rater_or_404(request, rater_id)
    form = RunForm(request.GET or None, study=rater.study)
    estimate = None
    if request.GET and form.is_valid():
        data = form.cleaned_data
        estimate = services.estimate(rater, data["round"], data.get("sample_size"))
    return render(request, "machine/rater.html", _rater_context(rater, form, estimate))


def _rater_context(rater: MachineRater, form: RunForm, estimate: Any) -> dict[str, Any]:
    return {
        "rater": rater,
        "study": rater.study,
        "form": form,
        "estimate": estimate,
        "configured": services.configured(rater),
        "runs": rater.runs.select_related("round"),
    }


@require_POST
def start(request: HttpRequest, rater_id: int) -> HttpResponse:
    rater = rater_or_404(request, rater_id)
    form = RunForm(request.POST, study=rater.study)
    if form.is_valid():
        data = form.cleaned_data
        try:
            run = services.start_run(
                rater=rater,
                round=data["round"],
                sample_size=data.get("sample_size"),
                seed=data.get("seed"),
                user=request.user,
            )
        except services.MachineError as error:
            form.add_error(None, str(error))
        else:
            warn_if_waiting(request, run)
            return redirect("machine:run", run.pk)
    context = _rater_context(rater, form, None)
    return render(request, "machine/rater.html", context, status=400)


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run's page; to htmx's polling, only its status (286 once it has ended)."""
    run = run_or_404(request, run_id)
    context: dict[str, Any] = {"job": run, "run": run, "rater": run.rater, "study": run.rater.study}
    if getattr(request, "htmx", False):
        response = render(request, "machine/run.html#run-status", context)
        if run.is_finished:
            response.status_code = HttpResponseStopPolling.status_code
            response["HX-Refresh"] = "true"  # the calls table of the finished run
        return response
    calls = run.calls.select_related("item__issue__repository").order_by("pk")
    context.update(calls=calls[:CALLS_SHOWN], calls_total=calls.count(), shown=CALLS_SHOWN)
    return render(request, "machine/run.html", context)


def call_detail(request: HttpRequest, call_id: int) -> HttpResponse:
    """One call: what was sent (the full prompt, its SHA-256, how the thread was cut) and,
    once the item's human labels are all in, what came back."""
    call = call_or_404(request, call_id)
    context = {
        "call": call,
        "rater": call.rater,
        "study": call.rater.study,
        "answer_shown": humans_done(call.item),
    }
    return render(request, "machine/call.html", context)


@require_POST
def labels_shown(request: HttpRequest, study_id: int) -> HttpResponse:
    """Hide (or show again) the machine labels on this study's item pages, for this person."""
    membership_or_404(request, study_id, SEE_ALL)
    request.session[hidden_key(study_id)] = request.POST.get("hide") == "1"
    target = request.POST.get("next", "")
    # A path on this site only: anything else (another host, a bare word) goes to the study.
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, {request.get_host()}
    ):
        target = reverse("studies:detail", args=[study_id])
    return HttpResponseRedirect(target)
