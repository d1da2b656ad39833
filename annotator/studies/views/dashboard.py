"""Pages for owners and adjudicators: the progress dashboard and an item with every label."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotator.adjudication.blind import name_annotations, names_for

from ..access import SEE_ALL, membership_or_404, signed_in
from ..models import Annotation, AnnotationLabel, GoldAnswer, Item, Membership
from ..services.gold import gold_accuracy
from ..services.progress import RoundRow, study_dashboard_as_of
from ..services.unsure import UnsureFigures


def dashboard(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, SEE_ALL)
    rows, figures = study_dashboard_as_of(study=membership.study)
    context: dict[str, Any] = {
        "study": membership.study,
        "membership": membership,
        "rounds": [_with_unsure(row, row.unsure) for row in rows],
        "figures": figures,
    }
    # The poll (every 15 s, or every few seconds while a job computes the annotators' tables)
    # refreshes the figures, not the accuracy.
    if getattr(request, "htmx", False):
        return render(request, "studies/dashboard.html#dashboard-figures", context)
    context["accuracy"] = gold_accuracy(study=membership.study)
    return render(request, "studies/dashboard.html", context)


def _with_unsure(row: RoundRow, unsure: UnsureFigures) -> tuple[Any, ...]:
    """A round's figures, its unsure marks, and each annotator's row with their count of
    annotations marked unsure."""
    annotators = [(a, unsure.by_annotator.get(a.username, 0)) for a in row.annotators]
    return row, unsure, annotators


def item_detail(request: HttpRequest, item_id: int) -> HttpResponse:
    """An item with the annotations the viewer may see (Annotation.objects.visible_to): all of
    them for owners and adjudicators; for an annotator, their own, and others' only once the
    item is released for discussion and their own is submitted."""
    items = Item.objects.select_related("issue__repository", "round", "study").filter(pk=item_id)
    item = items.first()
    if item is None:
        raise Http404("No such item")
    membership = Membership.objects.filter(study=item.study_id, user=signed_in(request)).first()
    if membership is None:
        raise Http404("No such item")
    annotations = (
        Annotation.objects.filter(assignment__item=item)
        .visible_to(request.user, membership)
        .select_related("assignment__annotator")
        .prefetch_related(
            Prefetch("labels", AnnotationLabel.objects.select_related("facet", "category"))
        )
    )
    if not membership.sees_all_labels and not annotations:
        raise Http404("No such item")
    shown = list(annotations)
    name_annotations(shown, names_for(item, request.user))
    # The gold answer is for owners and adjudicators only: an annotator meets it on the
    # feedback page of a training round, after their own submit, and nowhere else.
    gold = GoldAnswer.objects.filter(item=item).first() if membership.sees_all_labels else None
    context = {"item": item, "annotations": shown, "membership": membership, "gold": gold}
    context["machine"] = _machine_labels(item, membership, request)
    return render(request, "studies/item_detail.html", context)


def _machine_labels(item: Item, membership: Membership, request: HttpRequest) -> object:
    """A machine rater's answers for owners and adjudicators once the humans are done
    (annotator/machine/visibility.py); None for an annotator."""
    from annotator.machine.visibility import item_machine_labels

    return item_machine_labels(item, membership, request.session)
