"""Export pages: start an export, watch its progress, download the file and its card."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotator.dispatch import warn_if_waiting
from annotator.job_pages import job_status_page
from annotator.studies.access import MANAGERS, membership_or_404
from annotator.studies.models import Membership
from annotator.uploads import content_disposition

from .access import job_for_export, study_for_export
from .forms import ExportForm
from .models import ExportJob, Pseudonym
from .rows import ExportFilterError
from .services import start_export_job

CONTENT_TYPES = {
    "csv": "text/csv",
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "labelstudio": "application/json",
    "huggingface": "application/zip",
    "replication": "application/zip",
}


@require_http_methods(["GET", "POST"])
def export_start(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for_export(request, study_id)
    form = ExportForm(request.POST or None, study=study)
    if request.method == "POST" and form.is_valid():
        try:
            job = start_export_job(
                study=study,
                format=form.cleaned_data["format"],
                table=form.cleaned_data["table"],
                filters=form.filters(),
                scope=form.scope(),
                user=request.user,
                pseudonymise=form.cleaned_data["pseudonymise"],
                license=form.cleaned_data["license"],
            )
        except ExportFilterError as error:
            form.add_error(None, str(error))
        else:
            warn_if_waiting(request, job)
            return redirect(job)
    jobs = ExportJob.objects.filter(study=study).select_related("created_by")[:10]
    is_owner = Membership.objects.filter(
        study=study, user=request.user.pk, role=Membership.Role.OWNER
    ).exists()
    context = {"study": study, "form": form, "jobs": jobs, "is_owner": is_owner}
    return render(request, "exports/export.html", context, status=400 if form.errors else 200)


def export_job(request: HttpRequest, pk: int) -> HttpResponse:
    job = job_for_export(request, pk)
    return job_status_page(request, "exports/export_job.html", "export-status", job)


def export_download(request: HttpRequest, pk: int) -> FileResponse:
    job = job_for_export(request, pk)
    if job.status != ExportJob.Status.SUCCEEDED or not job.file:
        raise Http404("This export has no file")
    return download_response(job)


def download_response(job: ExportJob) -> FileResponse:
    """The export file as an attachment; its name passes `content_disposition` like every
    download's (annotator/uploads.py), whatever a future name is made of."""
    response = FileResponse(job.file.open("rb"), content_type=CONTENT_TYPES[job.format])
    response["Content-Disposition"] = content_disposition(job.filename)
    return response


def export_card(request: HttpRequest, pk: int) -> HttpResponse:
    job = job_for_export(request, pk)
    if job.status != ExportJob.Status.SUCCEEDED:
        raise Http404("This export has no card")
    response = HttpResponse(job.card, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = content_disposition(f"{job.filename}.md")
    return response


def pseudonyms(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's pseudonym codes and whom they stand for: the study's owners only (the
    mapping pseudonymised exports leave out)."""
    study = membership_or_404(request, study_id, MANAGERS).study
    rows = Pseudonym.objects.filter(study=study).order_by("kind", "pk")
    return render(request, "exports/pseudonyms.html", {"study": study, "pseudonyms": rows})
