"""Who may export and analyse: a study's owners and adjudicators only. Annotators never, since
an export holds everyone's labels (the blind rules); non-members get 404 like everywhere."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.models import Membership, Study

from .models import ExportJob


def study_for_export(request: HttpRequest, study_id: int) -> Study:
    return membership_or_404(request, study_id, SEE_ALL).study


def job_for_export(request: HttpRequest, pk: int) -> ExportJob:
    job = get_object_or_404(ExportJob.objects.select_related("study"), pk=pk)
    allowed = Membership.objects.filter(study=job.study, user=request.user.pk, role__in=SEE_ALL)
    if not allowed.exists():
        raise Http404("No such export")
    return job
