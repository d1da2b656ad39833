"""The annotate page and its htmx endpoints: next item, autosave, submit, skip, propose.

Every view here loads the assignment filtered by `annotator=request.user`: an annotator reaches
only their own assignments, so their own labels are the only ones these pages ever read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator.issues.models import Issue, IssueComment, Repository
from annotator.sql import Columns, table
from taxonomy_app.models import CodebookVersion

from .. import services
from ..codebook import CodebookSchema, codebook_schema
from ..errors import LabelErrors, StudyError
from ..forms import SkipForm
from ..models import Annotation, AnnotationLabel, Assignment, Item, Membership, Round, Study
from ..services.progress import annotator_progress, round_progress
from .access import markdown_html, membership_or_404
from .facets import facets_html

# The round's figure on the annotate page may be this many seconds old (the annotator's own is
# exact): summing a large round on every page view costs more than the rest of the page.
ROUND_PROGRESS_MAX_AGE = 5


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


def _assignment_or_404(
    request: HttpRequest, assignment_id: int, *, page: bool = True
) -> Assignment:
    """The caller's own assignment with what the page shows (its item, issue, repository,
    round, study, codebook version and annotation), or (`page=False`) only what a write needs:
    its item, study and codebook version. The rare answer that shows the form again loads the
    rest lazily.

    Hand-written SQL (queries.Columns): these run on every request of the labeling loop, and
    composing them with the ORM cost more than running them. The page's eight tables are read
    in two queries of five and three: PostgreSQL plans one eight-table join in ~4 ms here, two
    small ones in ~0.6 ms together (planning grows steeply with the number of tables)."""
    with connection.cursor() as cursor:
        parts = _PAGE if page else _WRITE
        cursor.execute(_select(parts), [assignment_id, request.user.pk])
        row = cursor.fetchone()
        if row is None:
            raise Http404("No such assignment")
        assignment, item, *rest = _build(parts, row)
        Assignment.item.field.set_cached_value(assignment, item)
        if page:
            issue, repository, annotation = rest
            Issue.repository.field.set_cached_value(issue, repository)
            Item.issue.field.set_cached_value(item, issue)
            Assignment.annotation.related.set_cached_value(assignment, annotation)
            if annotation is not None:
                Annotation.assignment.field.set_cached_value(annotation, assignment)
            cursor.execute(_select(_ROUND), [item.round_id])
            round, *rest = _build(_ROUND, cursor.fetchone())
            Round.study.field.set_cached_value(round, rest[0])
            Item.round.field.set_cached_value(item, round)
        study, version = rest
        Study.codebook_version.field.set_cached_value(study, version)
        Item.study.field.set_cached_value(item, study)
    return assignment


_PAGE = (
    Columns(Assignment, "a"),
    Columns(Item, "i"),
    Columns(Issue, "s", defer={"raw", "search_vector"}),
    Columns(Repository, "r"),
    Columns(Annotation, "n"),
)
_ROUND = (Columns(Round, "o"), Columns(Study, "t"), Columns(CodebookVersion, "v"))
_WRITE = (
    Columns(Assignment, "a"),
    Columns(Item, "i"),
    Columns(Study, "t"),
    Columns(CodebookVersion, "v"),
)
_JOINS = {
    _PAGE: "{a} JOIN {i} ON i.id = a.item_id JOIN {s} ON s.id = i.issue_id"
    " JOIN {r} ON r.id = s.repository_id LEFT JOIN {n} ON n.assignment_id = a.id"
    " WHERE a.id = %s AND a.annotator_id = %s",
    _ROUND: "{o} JOIN {t} ON t.id = o.study_id JOIN {v} ON v.id = t.codebook_version_id"
    " WHERE o.id = %s",
    _WRITE: "{a} JOIN {i} ON i.id = a.item_id JOIN {t} ON t.id = i.study_id"
    " JOIN {v} ON v.id = t.codebook_version_id WHERE a.id = %s AND a.annotator_id = %s",
}


@lru_cache(maxsize=8)
def _select(parts: tuple[Columns, ...]) -> str:
    columns = ", ".join(part.sql() for part in parts)
    tables = {part.alias: part.table() for part in parts}
    return f"SELECT {columns} FROM " + _JOINS[parts].format(**tables)


_COMMENT = Columns(IssueComment, "c", defer={"raw", "content_hash", "key", "issue"})


def _comments(issue_id: int) -> list[IssueComment]:
    """The issue's comments in thread order, with what the page shows."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_COMMENT.sql()} FROM {_COMMENT.table()} WHERE c.issue_id = %s"
            " ORDER BY c.created_at, c.id",
            [issue_id],
        )
        return [_COMMENT.build(row, 0) for row in cursor.fetchall()]


def _build(parts: tuple[Columns, ...], row: Any) -> list[Any]:
    built, start = [], 0
    for part in parts:
        built.append(part.build(row, start))
        start += len(part.fields)
    return built


def annotate(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment_or_404(request, assignment_id)
    comments = _comments(assignment.item.issue_id)
    context = _form_context(assignment, _saved_labels(assignment), {})
    context.update(
        issue=assignment.item.issue,
        body_html=markdown_html(assignment.item.issue.body),
        comments=[(c, markdown_html(c.body)) for c in comments],
        my_progress=annotator_progress(round_id=assignment.item.round_id, annotator=request.user),
        round_progress=round_progress(
            round_id=assignment.item.round_id, max_age=ROUND_PROGRESS_MAX_AGE
        ),
        skip_fields=skip_fields(),
    )
    return render(request, "studies/annotate.html", context)


def _annotation(assignment: Assignment) -> Annotation | None:
    try:
        return assignment.annotation
    except Annotation.DoesNotExist:
        return None


def _saved_labels(assignment: Assignment) -> dict[int, list[int]]:
    labels: dict[int, list[int]] = {}
    annotation = _annotation(assignment)
    if annotation is None:
        return labels
    labels_table = table(AnnotationLabel)
    with connection.cursor() as cursor:  # in SQL, as the page's other reads (see above)
        cursor.execute(
            f"SELECT facet_id, category_id FROM {labels_table} WHERE annotation_id = %s",
            [annotation.pk],
        )
        for facet, category in cursor.fetchall():
            labels.setdefault(facet, []).append(category)
    return labels


def _form_context(
    assignment: Assignment, labels: dict[int, list[int]], errors: dict[str, str]
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
        "facets_html": facets_html(schema, labels, errors, propose_url),
        "errors": errors,
        "changed_since_labeled": bool(changed and submitted_at and changed > submitted_at),
    }


def _posted_labels(request: HttpRequest, schema: CodebookSchema) -> dict[int, list[int]]:
    """Category ids by facet id from `facet-<id>` fields; a non-number becomes -1 (invalid)."""
    return {
        f.id: [int(v) if v.isdigit() else -1 for v in request.POST.getlist(f"facet-{f.id}")]
        for f in schema.facets
    }


def _work(request: HttpRequest, assignment: Assignment) -> dict[str, Any]:
    schema = codebook_schema(assignment.item.study.codebook_version)
    seconds = request.POST.get("seconds", "0")
    return {
        "assignment": assignment,
        "user": request.user,
        "labels": _posted_labels(request, schema),
        "notes": request.POST.get("notes", "")[:5000],
        "seconds_spent": int(seconds) if seconds.isdigit() else 0,
    }


@require_POST
def save_draft(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment_or_404(request, assignment_id, page=False)
    context: dict[str, Any] = {"saved_at": None, "error": None}
    try:
        services.save_draft(**_work(request, assignment))
        context["saved_at"] = timezone.now()
    except StudyError as error:
        context["error"] = str(error)
    return render(request, "studies/annotate.html#save-status", context)


@require_POST
def submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment_or_404(request, assignment_id, page=False)
    work = _work(request, assignment)
    try:
        services.submit_annotation(**work)
    except LabelErrors as error:
        return _form_again(request, assignment, work["labels"], error.errors, "")
    except StudyError as error:
        return _form_again(request, assignment, work["labels"], {}, str(error))
    return _go_next(request, assignment)


def _form_again(
    request: HttpRequest,
    assignment: Assignment,
    labels: dict[int, list[int]],
    errors: dict[str, str],
    message: str,
) -> HttpResponse:
    context = _form_context(assignment, labels, errors)
    context["message"] = message or "Some facets need attention (marked below)."
    if getattr(request, "htmx", False):
        # htmx swaps 2xx answers only; the form comes back with its errors in place.
        return render(request, "studies/annotate.html#annotate-form", context)
    context.update(
        issue=assignment.item.issue, body_html="", comments=[], skip_fields=skip_fields()
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
    assignment = _assignment_or_404(request, assignment_id)
    form = SkipForm(request.POST)
    try:
        if not form.is_valid():
            raise StudyError("choose a reason for skipping")
        services.skip_assignment(assignment=assignment, user=request.user, reason=form.text())
    except StudyError as error:
        return _form_again(request, assignment, _saved_labels(assignment), {}, str(error))
    return _go_next(request, assignment)


@require_POST
def propose(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = _assignment_or_404(request, assignment_id)
    facet = request.POST.get("facet", "")
    prefix = f"propose-{facet}-"
    context: dict[str, Any] = {"facet_id": facet, "proposal": None, "error": None}
    try:
        parent = request.POST.get(prefix + "parent", "")
        context["proposal"] = services.propose_category(
            assignment=assignment, user=request.user,
            facet_id=int(facet) if facet.isdigit() else 0,
            name=request.POST.get(prefix + "name", ""),
            rationale=request.POST.get(prefix + "rationale", ""),
            parent_id=int(parent) if parent.isdigit() else None,
        )  # fmt: skip
    except StudyError as error:
        context["error"] = str(error)
    return render(request, "studies/annotate.html#proposal-result", context)


def my_items(request: HttpRequest, study_id: int) -> HttpResponse:
    """The annotator's own assignments, with "changed since labeled" where the issue changed
    after they submitted."""
    membership = membership_or_404(request, study_id, {Membership.Role.ANNOTATOR})
    assignments = (
        Assignment.objects.filter(item__study=membership.study, annotator=request.user)
        .select_related("item__issue__repository", "item__round", "annotation")
        .order_by("-assigned_at", "-pk")
    )
    return render(
        request, "studies/my_items.html", {"study": membership.study, "assignments": assignments}
    )
