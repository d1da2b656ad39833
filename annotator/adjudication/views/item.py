"""One item: the adjudicate page and its decision (optimistic locking), the release for
discussion, the history, and the discussion thread (blind until released)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator.issues.models import IssueComment
from annotator.issues.rendering import markdown_html
from annotator.studies.access import SEE_ALL
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, AnnotationLabel, Item, Membership

from .. import services
from ..access import item_or_404
from ..blind import name_annotations, name_changes, name_comments, names_for
from ..comparison import compare
from ..forms import CommentForm, DecisionForm
from ..models import AdjudicationSettings, Comment, Decision, DecisionLabel
from .lists import queue_query


def _annotations(item: Item, user: Any, membership: Membership) -> list[Annotation]:
    labels = AnnotationLabel.objects.select_related("facet", "category")
    return list(
        Annotation.objects.filter(assignment__item=item, status=Annotation.Status.SUBMITTED)
        .visible_to(user, membership)
        .select_related("assignment__annotator")
        .prefetch_related(Prefetch("labels", labels))
        .order_by("assignment__assigned_at", "pk")
    )


def _decision(item: Item) -> Decision | None:
    labels = DecisionLabel.objects.select_related("facet", "category")
    return (
        Decision.objects.filter(item=item)
        .select_related("decided_by")
        .prefetch_related(Prefetch("labels", labels))
        .first()
    )


def _decision_form(item: Item, rows: list[Any], decision: Decision | None) -> DecisionForm:
    """Start from the decision, else from what every annotator agreed on."""
    initial: dict[str, Any] = {"version": decision.version if decision else 0}
    if decision is not None:
        initial.update(
            reason=decision.reason, comment=decision.comment, confidence=decision.confidence
        )
        for label in decision.labels.all():
            initial.setdefault(f"facet-{label.facet_id}", []).append(label.category_id)
    else:
        initial.update({f"facet-{r.facet.id}": r.agreed for r in rows if r.agreed})
    for row in rows:
        key = f"facet-{row.facet.id}"
        if not row.facet.is_multi and isinstance(initial.get(key), list):
            initial[key] = initial[key][0]
    return _form(item, rows, initial=initial)


def _form(item: Item, rows: list[Any], **kwargs: Any) -> DecisionForm:
    differs = {r.facet.id for r in rows if r.differs}
    schema = codebook_schema(item.study.codebook_version)
    return DecisionForm(schema=schema, differs=differs, **kwargs)


def _page_context(request: HttpRequest, item: Item, membership: Membership) -> dict[str, Any]:
    schema = codebook_schema(item.study.codebook_version)
    annotations = _annotations(item, request.user, membership)
    rows = compare(schema, annotations)
    decision = _decision(item)
    rules = AdjudicationSettings.objects.filter(study=item.study_id).first()
    fast = rules.fast_label_seconds if rules else 0
    blind = bool(rules and rules.blind)
    names = names_for(item, request.user, blind=blind, decided=decision is not None)
    name_annotations(annotations, names)
    for annotation in annotations:  # shown beside the annotator's name
        annotation.fast = bool(fast) and annotation.seconds_spent < fast  # type: ignore[attr-defined]
    return {
        "item": item,
        "study": item.study,
        "membership": membership,
        "issue": item.issue,
        "annotations": annotations,
        "revised": any(a.revision for a in annotations),
        "rows": rows,
        "decision": decision,
        "form": _decision_form(item, rows, decision),
        "query": queue_query(request),
        "history": name_changes(services.item_history(item=item), names),
        "comment_count": Comment.objects.filter(item=item).count(),
        "names_hidden": names.hidden,
        "fast_label_seconds": fast,
    }


def adjudicate(request: HttpRequest, item_id: int) -> HttpResponse:
    """The issue, each annotator's labels side by side, and the final decision (keyboard:
    static/js/adjudicate.js)."""
    item, membership = item_or_404(request, item_id, SEE_ALL)
    context = _page_context(request, item, membership)
    comments = IssueComment.objects.filter(issue=item.issue_id).only("author", "body", "created_at")
    context.update(
        body_html=markdown_html(item.issue.body),
        issue_comments=[(c, markdown_html(c.body)) for c in comments],
        remaining=services.disagreement_queue(study=item.study).count(),
        machine=_machine_labels(item, membership, request),
    )
    return render(request, "adjudication/adjudicate.html", context)


def _machine_labels(item: Item, membership: Membership, request: HttpRequest) -> object:
    """A machine rater's answers, shown beside the humans' once they are all in and unless
    hidden (annotator/machine/visibility.py); they never enter the decision form."""
    from annotator.machine.visibility import item_machine_labels

    return item_machine_labels(item, membership, request.session)


@require_POST
def decide(request: HttpRequest, item_id: int) -> HttpResponse:
    item, membership = item_or_404(request, item_id, SEE_ALL)
    context = _page_context(request, item, membership)
    form = _form(item, context["rows"], data=request.POST)
    status = 400
    if form.is_valid():
        try:
            services.adjudicate_item(
                item=item,
                user=request.user,
                labels=form.labels(),
                reason=form.cleaned_data["reason"],
                comment=form.cleaned_data["comment"],
                version=form.cleaned_data["version"],
                confidence=form.cleaned_data.get("confidence"),
            )
            return _go_next(request, item)
        except services.LabelErrors as error:
            form.show_errors(error.errors)
        except services.DecisionConflict as error:
            # The first write is kept: show it (fresh form, new version) with the message.
            context = _page_context(request, item, membership)
            form, status = context["form"], 409
            context["conflict"] = str(error)
    context["form"] = form
    if getattr(request, "htmx", False):
        # htmx swaps 2xx answers only; the form comes back in place with its message.
        return render(request, "adjudication/adjudicate.html#decision-form", context)
    context.update(body_html=markdown_html(item.issue.body), issue_comments=[], remaining=None)
    return render(request, "adjudication/adjudicate.html", context, status=status)


def _go_next(request: HttpRequest, item: Item) -> HttpResponse:
    """After a decision: the next item of the queue with the same filters, or the queue."""
    query = request.GET.urlencode()
    url = reverse("adjudication:next", args=[item.study_id]) + (f"?{query}" if query else "")
    messages.success(request, f"Decision saved for {item.issue}.")
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(url)
    return redirect(url)


@require_POST
def release(request: HttpRequest, item_id: int) -> HttpResponse:
    """Release the item for discussion (owner)."""
    item, _ = item_or_404(request, item_id, {Membership.Role.OWNER})
    if services.release_item(item=item):
        messages.success(request, f"{item.issue} is open for discussion.")
    following = request.POST.get("next", "")
    if following.startswith("/") and not following.startswith("//"):
        return redirect(following)
    return redirect("adjudication:discussion", item.pk)


def history(request: HttpRequest, item_id: int) -> HttpResponse:
    item, membership = item_or_404(request, item_id, SEE_ALL)
    changes = name_changes(services.item_history(item=item), names_for(item, request.user))
    context = {"item": item, "membership": membership, "history": changes}
    return render(request, "adjudication/history.html", context)


def discussion(request: HttpRequest, item_id: int) -> HttpResponse:
    """The item's thread, with the labels the viewer may see. Annotators reach it only once
    their own annotation is submitted and the item is released (404 before: blindness)."""
    item, membership = item_or_404(request, item_id)
    if not services.may_discuss(item=item, user=request.user, membership=membership):
        raise Http404("No such item")
    form = CommentForm()
    if request.method == "POST":
        form = CommentForm(request.POST)
        if form.is_valid():
            try:
                services.post_comment(
                    item=item,
                    user=request.user,
                    membership=membership,
                    body=form.cleaned_data["body"],
                )
                form = CommentForm()
            except services.AdjudicationError as error:
                form.add_error("body", str(error))
    comments = list(Comment.objects.filter(item=item).select_related("author"))
    annotations = _annotations(item, request.user, membership)
    decision = _decision(item)
    names = names_for(item, request.user, decided=decision is not None)
    name_annotations(annotations, names)
    name_comments(comments, names)
    context = {
        "item": item,
        "membership": membership,
        "form": form,
        "comments": [(c, markdown_html(c.body)) for c in comments],
        "annotations": annotations,
        "decision": decision,
        "names_hidden": names.hidden,
    }
    if getattr(request, "htmx", False):
        return render(request, "adjudication/discussion.html#thread", context)
    return render(request, "adjudication/discussion.html", context)
