"""Who reaches the machine-rater pages and routes, and when the feature is there at all.

The study's owner declares raters, estimates and starts runs, and reads calls (a rater's runs
spend the owner's model budget). Everyone else gets 404, as on the other owner pages. Without a
server (no LLM_BASE_URL) and no rater declared, the feature is absent: no link, every route 404.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest
from rest_framework.request import Request

from annotator.studies.access import MANAGERS, membership_or_404
from annotator.studies.models import Membership

from .models import MachineCall, MachineRater, MachineRun


def feature_on(study_id: int) -> bool:
    """A server is configured, or the study already has a rater (with its own base URL, or
    declared while LLM_BASE_URL was set): its records stay readable."""
    return bool(settings.LLM_BASE_URL) or MachineRater.objects.filter(study_id=study_id).exists()


def owner_or_404(request: HttpRequest | Request, study_id: int) -> Membership:
    membership = membership_or_404(request, study_id, MANAGERS)
    if not feature_on(study_id):
        raise Http404("No machine raters: set LLM_BASE_URL")
    return membership


def rater_or_404(request: HttpRequest | Request, rater_id: int) -> MachineRater:
    rater = MachineRater.objects.select_related("study__codebook_version").filter(pk=rater_id)
    found = rater.first()
    if found is None:
        raise Http404("No such machine rater")
    owner_or_404(request, found.study_id)
    return found


def run_or_404(request: HttpRequest | Request, run_id: int) -> MachineRun:
    run = MachineRun.objects.select_related("rater__study", "round").filter(pk=run_id).first()
    if run is None:
        raise Http404("No such machine run")
    owner_or_404(request, run.rater.study_id)
    return run


def call_or_404(request: HttpRequest | Request, call_id: int) -> MachineCall:
    found = MachineCall.objects.select_related("rater__study", "item__issue__repository", "run")
    call = found.filter(pk=call_id).first()
    if call is None:
        raise Http404("No such machine call")
    owner_or_404(request, call.rater.study_id)
    return call
