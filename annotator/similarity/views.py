"""Pages: the owner's near-duplicate review (groups, side by side, marks with confirmation and
undo), the pass's progress page, and the similar-issues panel (an htmx partial)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Prefetch, prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.dispatch import warn_if_waiting
from annotator.issues.models import Issue, Repository
from annotator.issues.rendering import render_markdown
from annotator.job_pages import job_status_page
from annotator.studies.access import MANAGERS, membership_or_404, signed_in
from annotator.studies.models import Item, Membership

from .models import DuplicateGroup, DuplicateMark, DuplicateMember, DuplicatePair, DuplicatePass
from .services import (
    SimilarityError,
    group_queryset,
    latest_pass,
    mark_issue,
    marks_by_issue,
    sees_all_similar,
    similar_issues,
    start_duplicate_pass,
    withdraw_mark,
)

PAGE_SIZE = 20
# The issues of a group shown at once (on the list, and per page side by side), and the pairs
# the list names of each group.
SHOWN = 12


def _owner(request: HttpRequest, study_id: int) -> Membership:
    return membership_or_404(request, study_id, MANAGERS)


def duplicates(request: HttpRequest, study_id: int) -> HttpResponse:
    """The groups found by the latest passes, largest similarity first (only those touching
    the study with ?in_study=1), each with its issues, similarities and the study's marks."""
    membership = _owner(request, study_id)
    study = membership.study
    in_study = request.GET.get("in_study") == "1"
    repository_id = _int(request.GET.get("repository"))
    repository = Repository.objects.filter(pk=repository_id).first() if repository_id else None
    groups = group_queryset(repository=repository, study=study if in_study else None)
    page = Paginator(groups, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = _group_rows(study, list(page.object_list))
    context = {
        "study": study,
        "page": page,
        "rows": rows,
        "in_study": in_study,
        "repository": repository,
        "repositories": Repository.objects.all(),
        "job": latest_pass(),
        "marks": DuplicateMark.objects.filter(study=study)
        .select_related("issue__repository", "duplicate_of__repository", "decided_by")
        .order_by("-decided_at", "-pk")[:20],
    }
    template = "similarity/duplicates.html"
    if getattr(request, "htmx", False) and request.htmx.target == "duplicate-groups":  # type: ignore[attr-defined]
        template += "#duplicate-groups"
    return render(request, template, context)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _members(study: Any) -> Any:
    """A group's members as the pages list them: the issues in the study first, then by id,
    each with its repository and whether the study holds it (`in_study`); never the raw JSON."""
    held = Item.objects.filter(study=study, issue_id=OuterRef("issue_id"))
    return (
        DuplicateMember.objects.select_related("issue__repository")
        .defer("issue__raw")
        .annotate(in_study=Exists(held))
        .order_by("-in_study", "issue_id")
    )


def _pairs() -> Any:
    """Pairs as the pages list them, the most similar first."""
    return (
        DuplicatePair.objects.select_related("issue_a", "issue_b")
        .only(*_PAIR_FIELDS)
        .order_by("-similarity", "pk")
    )


def _rows(
    study: Any, shown: list[tuple[DuplicateGroup, list[Any], list[DuplicatePair]]]
) -> list[dict[str, Any]]:
    """Each group with the members (as `_members` gives them) and pairs shown of it, and the
    study's current marks on them (one query)."""
    marks = marks_by_issue(study, [m.issue_id for _, members, _ in shown for m in members])
    return [
        {
            "group": group,
            "issues": [
                {"issue": m.issue, "mark": marks.get(m.issue_id), "in_study": m.in_study}
                for m in members
            ],
            "pairs": pairs,
            "more_issues": group.size - len(members),
        }
        for group, members, pairs in shown
    ]


def _group_rows(study: Any, groups: list[DuplicateGroup]) -> list[dict[str, Any]]:
    """The list's rows: each group with its first SHOWN members and its SHOWN most similar
    pairs, in a query each whatever the number and size of the groups (a pass over a template
    filed thousands of times makes groups of thousands)."""
    prefetch_related_objects(
        groups,
        Prefetch("members", _members(study).defer("issue__body")[:SHOWN], to_attr="shown"),
        Prefetch("pairs", _pairs()[:SHOWN], to_attr="shown_pairs"),
    )
    return _rows(study, [(g, g.shown, g.shown_pairs) for g in groups])  # type: ignore[attr-defined]


# What the pages show of a pair: its similarity, signature flag and its two issues' numbers.
_PAIR_FIELDS = (
    "group",
    "issue_a",
    "issue_b",
    "similarity",
    "same_signature",
    "issue_a__number",
    "issue_b__number",
)


def duplicate_group(request: HttpRequest, study_id: int, group_id: int) -> HttpResponse:
    """A group's issues side by side, each with the marks the owner can give it."""
    membership = _owner(request, study_id)
    group = get_object_or_404(DuplicateGroup, pk=group_id)
    members = _members(membership.study).filter(group=group)
    page = Paginator(members, SHOWN).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    ids = [m.issue_id for m in shown]
    pairs = list(_pairs().filter(group=group, issue_a__in=ids, issue_b__in=ids))
    row = _rows(membership.study, [(group, shown, pairs)])[0]
    for entry in row["issues"]:
        entry["body"] = render_markdown(entry["issue"].body or "")
    # Past the first page, each issue can also be marked a duplicate of the group's first.
    lead = None if page.number == 1 else members.first()
    return render(
        request,
        "similarity/duplicate_group.html",
        {"study": membership.study, "row": row, "group": group, "page": page, "lead": lead},
    )


@require_http_methods(["GET", "POST"])
def mark(request: HttpRequest, study_id: int) -> HttpResponse:
    """GET asks to confirm marking an issue a duplicate (it leaves the study's selections,
    agreement, counts and exports); POST records a mark. `next` returns to the group."""
    membership = _owner(request, study_id)
    study = membership.study
    data = request.POST if request.method == "POST" else request.GET
    back = _back(data.get("next"), study.pk)
    if request.method == "GET":
        if not data.get("issue") or not data.get("duplicate_of"):
            return redirect(back)  # nothing to confirm: back to the groups
        issue = get_object_or_404(
            Issue.objects.select_related("repository"), pk=_int(data.get("issue")) or 0
        )
        other = get_object_or_404(
            Issue.objects.select_related("repository"), pk=_int(data.get("duplicate_of")) or 0
        )
        template = "similarity/mark_confirm.html"
        if getattr(request, "htmx", False):
            template += "#mark-confirm"
        context = {"study": study, "issue": issue, "other": other, "back": back}
        return render(request, template, context)
    try:
        done = mark_issue(
            study=study,
            issue=data.get("issue", ""),
            decision=data.get("decision", ""),
            duplicate_of=data.get("duplicate_of") or None,
            include=data.get("include") == "on",
            user=request.user,
        )
    except SimilarityError as error:
        messages.error(request, str(error))
        return redirect(back)
    messages.success(request, f"Recorded: {_mark_text(done)}.")
    return redirect(back)


def _mark_text(mark: DuplicateMark) -> str:
    if mark.decision == DuplicateMark.Decision.DISTINCT:
        return f"{mark.issue} is distinct"
    kept = " (included anyway)" if mark.include else ", left out of this study"
    return f"{mark.issue} duplicates {mark.duplicate_of}{kept}"


def _back(value: str | None, study_id: int) -> str:
    default = reverse("similarity:duplicates", args=[study_id])
    if value and value.startswith(f"/similarity/studies/{study_id}/") and "//" not in value:
        return value
    return default


@require_POST
def undo(request: HttpRequest, study_id: int, mark_id: int) -> HttpResponse:
    membership = _owner(request, study_id)
    try:
        done = withdraw_mark(study=membership.study, mark_id=mark_id, user=request.user)
    except SimilarityError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Undone: {_mark_text(done)}.")
    return redirect(_back(request.POST.get("next"), membership.study.pk))


@require_POST
def start_pass(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = _owner(request, study_id)
    repository = None
    if value := request.POST.get("repository"):
        repository = Repository.objects.filter(pk=_int(value) or 0).first()
        if repository is None:
            messages.error(request, f"field 'repository': no repository with id {value!r}")
            return redirect("similarity:duplicates", study_id)
    job = start_duplicate_pass(repository=repository, study=membership.study, user=request.user)
    warn_if_waiting(request, job)
    return redirect("similarity:pass", job.pk)


def pass_detail(request: HttpRequest, pass_id: int) -> HttpResponse:
    """A pass's progress (polled), then its counts. Its starter and staff see it, and the
    owners of any study (the pass is over the shared pool)."""
    user = signed_in(request)
    job = get_object_or_404(DuplicatePass.objects.select_related("repository", "study"), pk=pass_id)
    owns = Membership.objects.filter(user=user, role=Membership.Role.OWNER).exists()
    if not (user.is_staff or job.created_by_id == user.pk or owns):
        raise Http404("No such pass")
    return job_status_page(request, "similarity/pass_detail.html", "pass-status", job)


def similar_panel(request: HttpRequest, issue_id: int) -> HttpResponse:
    """The ten most similar issues (the #similar-issues partial; the whole page without htmx).
    Annotators see only those they labeled themselves, with their own labels."""
    user = signed_in(request)
    issue = get_object_or_404(Issue.objects.select_related("repository"), pk=issue_id)
    context = {
        "issue": issue,
        "similar": similar_issues(issue=issue, user=user),
        "sees_all": sees_all_similar(user),
    }
    template = "similarity/similar.html"
    if getattr(request, "htmx", False):
        template += "#similar-issues"
    return render(request, template, context)
