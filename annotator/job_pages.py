"""The page of a background job, polled by htmx until the job ends (imports, syncs, exports,
backups share it; each template defines the status partial its page polls)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseStopPolling

from .jobs import Job


def job_status_page(request: HttpRequest, template: str, partial: str, job: Job) -> HttpResponse:
    """The whole page; to htmx's polling, only the status partial — answered with 286 once the
    job has ended, which tells htmx to stop polling (the partial shown is the final one)."""
    if not getattr(request, "htmx", False):
        return render(request, template, {"job": job})
    response = render(request, f"{template}#{partial}", {"job": job})
    if job.is_finished:
        response.status_code = HttpResponseStopPolling.status_code
    return response
