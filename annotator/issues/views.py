from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
from django_htmx.middleware import HtmxDetails

from annotator.dispatch import warn_if_waiting
from annotator.job_pages import job_status_page
from annotator.paging import EstimatedPaginator

from . import models as issue_models
from .access import require_importer
from .forms import ImportForm
from .models import ISSUE_FILTERS, ImportJob, Issue, IssueComment, Repository
from .rendering import render_markdown
from .search import pending_issue_count
from .services import start_import_job

PAGE_SIZE = 25


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails  # set by django_htmx's middleware


def issue_list(request: HtmxHttpRequest) -> HttpResponse:
    filters = _filters(request)
    issues = Issue.objects.for_list().matching(filters)
    page = EstimatedPaginator(issues, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "ranked": issues.is_ranked(),
        "rank_window": issue_models.RANK_WINDOW,
        "not_searchable": pending_issue_count() if filters["q"] else 0,
        "filters": filters,
        "repositories": Repository.objects.all(),
        "query_string": _query_string(request, drop="page"),
    }
    template = "issues/issue_list.html"
    if request.htmx.target == "issue-results":
        template += "#issue-results"
    return render(request, template, context)


def issue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    issue = get_object_or_404(
        Issue.objects.select_related("repository").prefetch_related(
            Prefetch("comments", queryset=IssueComment.objects.order_by("created_at", "pk"))
        ),
        pk=pk,
    )
    comments = [(comment, render_markdown(comment.body)) for comment in issue.comments.all()]
    return render(
        request,
        "issues/issue_detail.html",
        {
            "issue": issue,
            "body_html": render_markdown(issue.body),
            "comments": comments,
            "revisions": issue.revisions.select_related("replaced_by").order_by("-replaced_at"),
        },
    )


@require_http_methods(["GET", "POST"])
def import_upload(request: HttpRequest) -> HttpResponse:
    require_importer(request.user)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        job = start_import_job(
            uploaded=form.cleaned_data["file"],
            format=form.cleaned_data["format"],
            repository=form.cleaned_data["repository"],
            user=request.user,
        )
        warn_if_waiting(request, job)
        return redirect(job)
    jobs = ImportJob.objects.select_related("created_by")[:10]
    status = 400 if form.errors else 200
    return render(request, "issues/import.html", {"form": form, "jobs": jobs}, status=status)


def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require_importer(request.user)
    job = get_object_or_404(ImportJob, pk=pk)
    return job_status_page(request, "issues/import_detail.html", "import-status", job)


def _filters(request: HttpRequest) -> dict[str, str]:
    return {key: request.GET.get(key, "").strip() for key in ISSUE_FILTERS}


def _query_string(request: HttpRequest, drop: str) -> str:
    params = request.GET.copy()
    params.pop(drop, None)
    return params.urlencode()


# --- GitHub sync ----------------------------------------------------------------------------
from annotator.accounts.services import has_github_token  # noqa: E402

from .forms import SyncForm  # noqa: E402
from .models import SyncJob, SyncState  # noqa: E402
from .sync import start_sync_job  # noqa: E402


@require_http_methods(["GET", "POST"])
def sync_start(request: HttpRequest) -> HttpResponse:
    require_importer(request.user)
    form = SyncForm(request.POST or None, initial={"repository": request.GET.get("repository")})
    if request.method == "POST" and form.is_valid():
        job = start_sync_job(
            repository=form.cleaned_data["repository"],
            since=form.cleaned_data["since"],
            periodic=form.cleaned_data["periodic"],
            user=request.user,
        )
        warn_if_waiting(request, job)
        return redirect(job)
    context = {
        "form": form,
        "jobs": SyncJob.objects.select_related("created_by")[:10],
        "states": SyncState.objects.select_related("repository"),
        "own_token": has_github_token(request.user),
    }
    return render(request, "issues/sync.html", context, status=400 if form.errors else 200)


def sync_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require_importer(request.user)
    job = get_object_or_404(SyncJob, pk=pk)
    return job_status_page(request, "issues/sync_detail.html", "sync-status", job)
