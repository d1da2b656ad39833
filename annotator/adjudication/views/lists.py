"""Study-level pages for owners and adjudicators: the disagreement queue, the re-labeling queue,
the overview of every item, and the decision rules."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Membership

from .. import services
from ..forms import MajorityForm, QueueFilterForm
from ..models import AdjudicationSettings
from ..paging import IdsFirstPaginator

PAGE_SIZE = 50


def _filters(request: HttpRequest, membership: Membership) -> QueueFilterForm:
    schema = codebook_schema(membership.study.codebook_version)
    return QueueFilterForm(request.GET or None, study=membership.study, schema=schema)


def queue_query(request: HttpRequest) -> str:
    """The queue's filters as a query string, carried from the queue to each item and back."""
    kept = {k: request.GET[k] for k in ("facet", "round") if request.GET.get(k, "").isdigit()}
    return f"?{urlencode(kept)}" if kept else ""


def queue(request: HttpRequest, study_id: int) -> HttpResponse:
    """Undecided complete items, lowest agreement first, with how many remain."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    form = _filters(request, membership)
    ids = services.queue_ids(study=membership.study, **form.filters())
    page = Paginator(ids, PAGE_SIZE).get_page(request.GET.get("page"))
    shown = services.queue_entries(list(page.object_list))
    names = {f.key: f.name for f in codebook_schema(membership.study.codebook_version).facets}
    context = {
        "study": membership.study,
        "membership": membership,
        "form": form,
        "page": page,
        # each entry with the names of the facets marked unsure: why an agreed item is here
        "entries": [(e, [names.get(k, k) for k in e.unsure_facets]) for e in shown],
        "query": queue_query(request),
    }
    if getattr(request, "htmx", False):
        return render(request, "adjudication/queue.html#queue-list", context)
    return render(request, "adjudication/queue.html", context)


def queue_next(request: HttpRequest, study_id: int) -> HttpResponse:
    """The first item of the (filtered) queue, or the queue page when nothing is left."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    form = _filters(request, membership)
    item = services.next_in_queue(study=membership.study, **form.filters())
    query = queue_query(request)
    if item is None:
        messages.success(request, "The queue is empty: every complete item has a decision.")
        return redirect(reverse("adjudication:queue", args=[study_id]) + query)
    return redirect(reverse("adjudication:item", args=[item.pk]) + query)


def relabel(request: HttpRequest, study_id: int) -> HttpResponse:
    """Items whose labels use a category a later codebook version split."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    items = services.relabel_queue(study=membership.study)
    page = IdsFirstPaginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"study": membership.study, "membership": membership, "page": page}
    return render(request, "adjudication/relabel.html", context)


def items(request: HttpRequest, study_id: int) -> HttpResponse:
    """Every item of the study: labeling state, agreement, decision source, release."""
    membership = membership_or_404(request, study_id, SEE_ALL)
    form = _filters(request, membership)
    rows = services.item_overview(study=membership.study, round_id=form.filters()["round_id"])
    page = IdsFirstPaginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    rules = AdjudicationSettings.objects.filter(study=membership.study).first()
    initial = {
        "majority_rule": bool(rules and rules.majority_rule),
        "blind": bool(rules and rules.blind),
        "fast_label_seconds": rules.fast_label_seconds if rules else 0,
    }
    context = {
        "study": membership.study,
        "membership": membership,
        "form": form,
        "page": page,
        "majority_form": MajorityForm(initial=initial),
        "remaining": len(services.queue_ids(study=membership.study)),
    }
    return render(request, "adjudication/items.html", context)


@require_POST
def decision_rules(request: HttpRequest, study_id: int) -> HttpResponse:
    """The majority rule, blind adjudication and the fast-label flag (owner)."""
    membership = membership_or_404(request, study_id, {Membership.Role.OWNER})
    form = MajorityForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(
            f"{form[n].label}: {' '.join(map(str, e))}" for n, e in form.errors.items()
        )
        messages.error(request, f"Nothing was changed. {problems}")
        return redirect("adjudication:items", study_id)
    enabled = bool(form.cleaned_data.get("majority_rule"))
    blind = bool(form.cleaned_data.get("blind"))
    fast = form.cleaned_data.get("fast_label_seconds") or 0
    try:
        decided = services.set_majority_rule(study=membership.study, enabled=enabled)
    except services.AdjudicationError as error:
        messages.error(request, str(error))
        return redirect("adjudication:items", study_id)
    services.set_blind_options(study=membership.study, blind=blind, fast_label_seconds=fast)
    state = "on" if enabled else "off"
    blindness = "on" if blind else "off"
    flag = f"labels under {fast} s flagged" if fast else "no fast-label flag"
    messages.success(
        request,
        f"Majority rule {state}: {decided} items decided automatically. Blind adjudication "
        f"{blindness}; {flag}.",
    )
    return redirect("adjudication:items", study_id)
