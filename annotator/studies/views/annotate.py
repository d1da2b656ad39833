"""The annotate page and its htmx endpoints: next item, autosave, submit, skip, propose.

Every view here loads the assignment filtered by `annotator=request.user`: an annotator reaches
only their own assignments, so their own labels are the only ones these pages ever read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator.issues.models import IssueRevision
from annotator.issues.rendering import markdown_html
from annotator.params import int_or

from .. import services, sql
from ..access import membership_or_404, own_assignment_or_404
from ..codebook import CodebookSchema, codebook_schema
from ..errors import LabelErrors, StudyError
from ..forms import SkipForm
from ..models import Annotation, AnnotationLabel, Assignment, Membership
from ..services.gold import gold_after_submit
from ..services.progress import annotator_share, annotator_shares
from .facets import facets_html

# The round's size behind the annotator's share on the annotate page may be this many seconds
# old (their own count is exact): summing a large round on every page view costs more than the
# rest of the page. The page shows no figure of the round itself: an annotator sees their own.
ROUND_SIZE_MAX_AGE = 30


@lru_cache(maxsize=1)
def skip_fields() -> SafeString:
    """The skip form's fields, rendered once: the same on every page, and Django's form
    rendering (widget templates) cost about a third of the page's rendering."""
    html = render_to_string("studies/annotate.html#skip-fields", {"skip_form": SkipForm()})
    return mark_safe(html)  # rendered and escaped by the template engine


def annotate_next(request: HttpRequest, study_id: int) -> HttpResponse:
    """Resume the open assignment, or take the next item; "all done" when none is left."""
    membership = membership_or_404(request, study_id, {Membership.Role.ANNOTATOR})
    assignment = services.next_assignment(study=membership.study, annotator=request.user)
    if assignment is None:
        return render(request, "studies/all_done.html", {"study": membership.study})
    return redirect(assignment)


def annotate(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment_or_404(request.user, assignment_id)
    comments = sql.issue_comments(assignment.item.issue_id)
    context = _form_context(assignment, _saved_labels(assignment), {}, _saved_unsure(assignment))
    issue = assignment.item.issue
    labeled = _labeled_text(assignment) if context["changed_since_labeled"] else None
    context.update(
        issue=issue,
        title=labeled.title if labeled else issue.title,
        body_html=markdown_html(labeled.body if labeled else issue.body),
        labeled_revision=labeled,
        current_body_html=markdown_html(issue.body) if labeled else "",
        comments=[(c, markdown_html(c.body)) for c in comments],
        my_share=annotator_share(
            round_id=assignment.item.round_id, annotator=request.user, max_age=ROUND_SIZE_MAX_AGE
        ),
        skip_fields=skip_fields(),
        **_guidelines(assignment),
    )
    return render(request, "studies/annotate.html", context)


def _labeled_text(assignment: Assignment) -> IssueRevision | None:
    """The issue's text when the annotator submitted their labels, if an import or a sync has
    replaced it since (the first revision kept after the submit holds it)."""
    annotation = _annotation(assignment)
    if annotation is None or annotation.submitted_at is None:
        return None
    return (
        IssueRevision.objects.filter(
            issue_id=assignment.item.issue_id, replaced_at__gt=annotation.submitted_at
        )
        .order_by("replaced_at", "pk")
        .first()
    )


def _guidelines(assignment: Assignment) -> dict[str, Any]:
    """The guidelines drawer: the study's guidelines (memoised rendering) and the address of
    the codebook's guideline page, which the drawer loads when first opened."""
    study = assignment.item.study
    return {
        "guidelines_html": markdown_html(study.guidelines) if study.guidelines else "",
        "codebook_guideline_url": reverse("taxonomy:guideline", args=[study.codebook_version_id]),
    }


def _annotation(assignment: Assignment) -> Annotation | None:
    try:
        return assignment.annotation
    except Annotation.DoesNotExist:
        return None


def _saved_labels(assignment: Assignment) -> dict[int, list[int]]:
    """The annotation's labels: after discussion, its revision (the blind labels stay apart)."""
    annotation = _annotation(assignment)
    if annotation is None:
        return {}
    if annotation.revision:
        schema = codebook_schema(assignment.item.study.codebook_version)
        codes = annotation.revision["labels"]
        return {
            f.id: [c.id for c in f.categories if c.code in codes.get(f.key, ())]
            for f in schema.facets
            if f.key in codes
        }
    return sql.annotation_labels(annotation.pk)


def _saved_unsure(assignment: Assignment) -> list[str]:
    annotation = _annotation(assignment)
    if annotation is None:
        return []
    if annotation.revision:
        return list(annotation.revision.get("unsure", []))
    return list(annotation.unsure)


def _form_context(
    assignment: Assignment,
    labels: dict[int, list[int]],
    errors: dict[str, str],
    unsure: list[str],
) -> dict[str, Any]:
    schema = codebook_schema(assignment.item.study.codebook_version)
    annotation = _annotation(assignment)
    changed = assignment.item.issue.changed_at
    submitted_at = annotation.submitted_at if annotation else None
    propose_url = reverse("studies:propose", args=[assignment.pk])
    return {
        "assignment": assignment,
        "study": assignment.item.study,
        "annotation": annotation,
        "facets_html": facets_html(schema, labels, errors, propose_url, unsure),
        "errors": errors,
        "changed_since_labeled": bool(changed and submitted_at and changed > submitted_at),
        # A re-submit now is a revision beside the blind labels (services.submit_annotation).
        "revising": bool(assignment.item.released_at and annotation and annotation.submitted_at),
    }


def _posted_labels(request: HttpRequest, schema: CodebookSchema) -> dict[int, list[int]]:
    """Category ids by facet id from `facet-<id>` fields; a non-number becomes -1 (invalid)."""
    return {
        f.id: [int_or(v, -1) for v in request.POST.getlist(f"facet-{f.id}")] for f in schema.facets
    }


def _work(request: HttpRequest, assignment: Assignment) -> dict[str, Any]:
    schema = codebook_schema(assignment.item.study.codebook_version)
    seconds = request.POST.get("seconds", "0")
    return {
        "assignment": assignment,
        "user": request.user,
        "labels": _posted_labels(request, schema),
        "notes": request.POST.get("notes", "")[:5000],
        "seconds_spent": int_or(seconds, 0),
        "unsure": request.POST.getlist("unsure")[:100],  # facet keys; the service checks them
    }


@require_POST
def save_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment_or_404(request.user, assignment_id, page=False)
    context: dict[str, Any] = {"saved_at": None, "error": None}
    try:
        services.save_draft(**_work(request, assignment))
        context["saved_at"] = timezone.now()
    except StudyError as error:
        context["error"] = str(error)
    return render(request, "studies/annotate.html#save-status", context)


@require_POST
def submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment_or_404(request.user, assignment_id, page=False)
    work = _work(request, assignment)
    try:
        services.submit_annotation(**work)
    except LabelErrors as error:
        return _form_again(request, assignment, work, error.errors, "")
    except StudyError as error:
        return _form_again(request, assignment, work, {}, str(error))
    if gold_after_submit(assignment.item_id):
        url = reverse("studies:feedback", args=[assignment.pk])
        return HttpResponseClientRedirect(url) if getattr(request, "htmx", False) else redirect(url)
    return _go_next(request, assignment)


def _form_again(
    request: HttpRequest,
    assignment: Assignment,
    work: dict[str, Any],
    errors: dict[str, str],
    message: str,
) -> HttpResponse:
    """The form again with `work`'s labels and unsure marks (what was posted, or the saved
    draft's), `errors` by facet key and `message` above the facets."""
    context = _form_context(assignment, work["labels"], errors, work["unsure"])
    context["message"] = message or "Some facets need attention (marked below)."
    if getattr(request, "htmx", False):
        # htmx swaps 2xx answers only; the form comes back with its errors in place.
        return render(request, "studies/annotate.html#annotate-form", context)
    context.update(
        issue=assignment.item.issue,
        body_html="",
        comments=[],
        skip_fields=skip_fields(),
        **_guidelines(assignment),
    )
    return render(request, "studies/annotate.html", context, status=400)


def _go_next(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """After a submit or skip: straight to the next item (one request less than a redirect to
    the next-item view), or to the study's "all done" view."""
    study = assignment.item.study
    following = services.next_assignment(study=study, annotator=request.user)
    url = (
        following.get_absolute_url()
        if following is not None
        else reverse("studies:annotate_next", args=[study.pk])
    )
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(url)
    return redirect(url)


@require_POST
def skip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment_or_404(request.user, assignment_id)
    form = SkipForm(request.POST)
    try:
        if not form.is_valid():
            raise StudyError("choose a reason for skipping")
        services.skip_assignment(assignment=assignment, user=request.user, reason=form.text())
    except StudyError as error:
        saved = {"labels": _saved_labels(assignment), "unsure": _saved_unsure(assignment)}
        return _form_again(request, assignment, saved, {}, str(error))
    return _go_next(request, assignment)


@require_POST
def propose(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment_or_404(request.user, assignment_id)
    facet = request.POST.get("facet", "")
    prefix = f"propose-{facet}-"
    context: dict[str, Any] = {"facet_id": facet, "proposal": None, "error": None}
    try:
        parent = request.POST.get(prefix + "parent", "")
        context["proposal"] = services.propose_category(
            assignment=assignment,
            user=request.user,
            facet_id=int_or(facet, 0),
            name=request.POST.get(prefix + "name", ""),
            rationale=request.POST.get(prefix + "rationale", ""),
            parent_id=int_or(parent, 0) or None,
        )
    except StudyError as error:
        context["error"] = str(error)
    return render(request, "studies/annotate.html#proposal-result", context)


MY_ITEMS_PER_PAGE = 100


def my_items(request: HttpRequest, study_id: int) -> HttpResponse:
    """The annotator's own assignments, newest first, each with their own labels (a draft's
    too), "changed since labeled" where the issue changed after they submitted, and their share
    of each round."""
    membership = membership_or_404(request, study_id, {Membership.Role.ANNOTATOR})
    study = membership.study
    # The shares' pass over the annotator's assignments also counts them: the pager's length
    # costs no COUNT of its own. A page walks the index assignment_history (newest first).
    shares, held = annotator_shares(study=study, annotator=request.user)
    assignments = (
        Assignment.objects.filter(item__study=study, annotator_id=request.user.pk)
        .select_related("item__issue__repository", "item__round", "annotation")
        .defer(*(f"item__issue__{name}" for name in ("body", "raw", "search_vector")))
        .order_by("-assigned_at", "-pk")
    )
    paginator = Paginator(assignments, MY_ITEMS_PER_PAGE)
    paginator.count = held
    page = paginator.get_page(request.GET.get("page"))
    labels = _labels_of([a.pk for a in page.object_list])
    rows = [(a, labels.get(a.pk, [])) for a in page.object_list]
    context = {"study": study, "page": page, "rows": rows, "shares": shares}
    return render(request, "studies/my_items.html", context)


def _labels_of(assignment_ids: list[int]) -> dict[int, list[tuple[str, list[str]]]]:
    """(facet name, category names) in the codebook's order, by assignment: one query."""
    rows = (
        AnnotationLabel.objects.filter(annotation__assignment_id__in=assignment_ids)
        .order_by("annotation_id", "facet__order", "facet_id", "category__order", "category_id")
        .values_list("annotation__assignment_id", "facet__name", "category__name")
    )
    out: dict[int, list[tuple[str, list[str]]]] = {}
    for assignment, facet, category in rows:
        facets = out.setdefault(assignment, [])
        if not facets or facets[-1][0] != facet:
            facets.append((facet, []))
        facets[-1][1].append(category)
    return out
