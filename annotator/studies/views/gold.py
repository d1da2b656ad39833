"""Gold answers: the owner's form on an item, and the feedback a training round shows an
annotator right after they submit (never before: services/gold.py `feedback`)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotator.params import int_or

from ..access import MANAGERS, membership_or_404
from ..codebook import CodebookSchema, codebook_schema
from ..errors import LabelErrors, StudyError
from ..models import Assignment, GoldAnswer, Item
from ..services import gold


def _owned_item(request: HttpRequest, item_id: int) -> Item:
    item = Item.objects.select_related("study__codebook_version", "round", "issue").filter(
        pk=item_id
    )
    found = item.first()
    if found is None:
        raise Http404("No such item")
    membership_or_404(request, found.study_id, MANAGERS)
    return found


def gold_rows(
    schema: CodebookSchema, chosen: dict[str, list[str]], errors: dict[str, str]
) -> list[dict[str, Any]]:
    """One row per facet for the gold form: its categories with the chosen codes selected."""
    return [
        {
            "facet": facet,
            "error": errors.get(facet.key, ""),
            "options": [(c, c.code in chosen.get(facet.key, [])) for c in facet.categories],
        }
        for facet in schema.facets
    ]


def _decision_codes(item: Item) -> dict[str, list[str]]:
    """The item's final labels as {facet key: codes}, to start a gold answer from."""
    decision = getattr(item, "decision", None)
    if decision is None:
        return {}
    out: dict[str, list[str]] = {}
    for key, code in decision.labels.values_list("facet__key", "category__code"):
        out.setdefault(key, []).append(code)
    return out


@require_http_methods(["GET", "POST"])
def gold_edit(request: HttpRequest, item_id: int) -> HttpResponse:
    """Set, replace or remove an item's gold answer (owners)."""
    item = _owned_item(request, item_id)
    schema = codebook_schema(item.study.codebook_version)
    current = GoldAnswer.objects.filter(item=item).first()
    errors: dict[str, str] = {}
    message = ""
    chosen = current.labels if current else _decision_codes(item)
    rationale = current.rationale if current else ""
    if request.method == "POST":
        # "—" (no category) posts an empty value: no label, not an invalid one.
        labels = {
            f.id: [int_or(v, -1) for v in request.POST.getlist(f"facet-{f.id}") if v != ""]
            for f in schema.facets
        }
        rationale = request.POST.get("rationale", "")
        try:
            gold.set_gold(item=item, user=request.user, labels=labels, rationale=rationale)
        except LabelErrors as error:
            errors = error.errors
            message = "Some facets need attention (marked below)."
        except StudyError as error:
            message = str(error)
        else:
            messages.success(request, "Gold answer saved.")
            return redirect(reverse("studies:item", args=[item.pk]))
        ids = {c.id: c.code for f in schema.facets for c in f.categories}
        chosen = {f.key: [ids[c] for c in labels[f.id] if c in ids] for f in schema.facets}
    context = {
        "item": item,
        "study": item.study,
        "gold": current,
        "rows": gold_rows(schema, chosen, errors),
        "rationale": rationale,
        "message": message,
        "from_decision": request.method == "GET" and current is None and bool(chosen),
    }
    return render(request, "studies/gold_edit.html", context, status=400 if message else 200)


@require_http_methods(["GET", "POST"])
def gold_delete(request: HttpRequest, item_id: int) -> HttpResponse:
    """Remove an item's gold answer, after a confirmation page."""
    item = _owned_item(request, item_id)
    if request.method == "GET":
        current = GoldAnswer.objects.filter(item=item).first()
        context = {"item": item, "study": item.study, "gold": current}
        return render(request, "studies/gold_delete.html", context)
    try:
        removed = gold.clear_gold(item=item)
    except StudyError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, "Gold answer removed." if removed else "The item had none.")
    return redirect(reverse("studies:item", args=[item.pk]))


def feedback(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The annotator's labels beside the gold answer and its rationale, once they submitted
    the item of a training round; 404 before (or for any other assignment)."""
    assignment = (
        Assignment.objects.select_related(
            "item__study__codebook_version", "item__issue__repository", "item__round"
        )
        .filter(pk=assignment_id, annotator_id=request.user.pk)
        .first()
    )
    shown = gold.feedback(assignment) if assignment is not None else None
    if shown is None:
        raise Http404("No feedback for this assignment")
    context = {
        "feedback": shown,
        "item": shown.assignment.item,
        "study": shown.assignment.item.study,
    }
    return render(request, "studies/feedback.html", context)
