"""Backup pages: an owner starts a study's backup, watches it and downloads the archive; staff
upload an archive, see what it holds, confirm, and watch the restore.

Who sees what: a backup holds every label of the study, so only its owners start and download
one (annotators and adjudicators get 404, like non-members). A restore creates accounts and
memberships, so it is for staff only (404 for everyone else)."""

from __future__ import annotations

import secrets

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotator.dispatch import warn_if_waiting
from annotator.job_pages import job_status_page
from annotator.studies.access import MANAGERS, membership_or_404
from annotator.studies.models import Membership

from .errors import REFUSALS
from .forms import RestoreConfirmForm, RestoreUploadForm
from .models import BackupJob
from .services import receive_upload, restore_preview, start_backup_job, start_restore_job

PENDING = "backup_restores"  # session key: token → a checked upload awaiting confirmation


@require_POST
def start_backup(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    job = start_backup_job(study=study, user=request.user)
    warn_if_waiting(request, job)
    return redirect(job)


def job_page(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job_for(request, pk)
    return job_status_page(request, "backup/job.html", "backup-status", job)


def download(request: HttpRequest, pk: int) -> FileResponse:
    job = _job_for(request, pk)
    if job.kind != BackupJob.Kind.DUMP or job.status != BackupJob.Status.SUCCEEDED or not job.file:
        raise Http404("This backup has no archive")
    return FileResponse(
        job.file.open("rb"),
        as_attachment=True,
        filename=job.download_name,
        content_type="application/zip",
    )


@require_http_methods(["GET", "POST"])
def restore_upload(request: HttpRequest) -> HttpResponse:
    _staff_or_404(request)
    posted = request.method == "POST"
    form = RestoreUploadForm(request.POST if posted else None, request.FILES if posted else None)
    if request.method == "POST" and form.is_valid():
        try:
            pending = receive_upload(uploaded=form.cleaned_data["archive"])
        except REFUSALS as error:
            form.add_error("archive", f"{error}. Nothing was kept.")
        else:
            token = secrets.token_urlsafe(16)
            request.session[PENDING] = {**request.session.get(PENDING, {}), token: pending}
            return redirect("backup:confirm", token=token)
    status = 400 if form.errors else 200
    return render(request, "backup/restore_upload.html", {"form": form}, status=status)


@require_http_methods(["GET", "POST"])
def restore_confirm(request: HttpRequest, token: str) -> HttpResponse:
    _staff_or_404(request)
    pending = request.session.get(PENDING, {}).get(token)
    if pending is None:
        raise Http404("No such upload")
    form = RestoreConfirmForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            job = start_restore_job(
                pending=pending,
                user=request.user,
                prefer_existing_issues=form.cleaned_data["prefer_existing_issues"],
            )
        except REFUSALS as error:
            form.add_error(None, str(error))
        else:
            request.session[PENDING] = {
                k: v for k, v in request.session[PENDING].items() if k != token
            }
            warn_if_waiting(request, job)
            return redirect(job)
    tables = sorted(pending["tables"].items())
    context = {
        "pending": pending,
        "preview": restore_preview(pending),
        "form": form,
        "token": token,
        "tables": tables,
    }
    return render(
        request, "backup/restore_confirm.html", context, status=400 if form.errors else 200
    )


def _job_for(request: HttpRequest, pk: int) -> BackupJob:
    job = get_object_or_404(BackupJob.objects.select_related("study"), pk=pk)
    if job.kind == BackupJob.Kind.RESTORE:
        _staff_or_404(request)
        return job
    if job.study_id is None or not request.user.is_authenticated:
        raise Http404("No such backup")
    owner = Membership.objects.filter(study_id=job.study_id, user=request.user, role__in=MANAGERS)
    if not owner.exists():
        raise Http404("No such backup")
    return job


def _staff_or_404(request: HttpRequest) -> None:
    if not (request.user.is_authenticated and request.user.is_staff):
        raise Http404("No such page")
