"""Analysis pages: the shares, cross-tables and flow chart of a study's final dataset; every
count links to its issues, every table downloads as CSV. Owners and adjudicators only."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from annotator.studies.models import Item
from annotator.uploads import content_disposition

from .access import study_for_export
from .analysis import Cell, Table, analysis_tables, flow_facets, flow_links, study_final_labels
from .flow import flow_svg
from .rows import ExportFilterError

FILTERS = ("round", "screening", "repository")


def _filters(request: HttpRequest) -> dict[str, str]:
    return {k: request.GET[k].strip() for k in FILTERS if request.GET.get(k, "").strip()}


class IssuesLink(Protocol):
    def __call__(self, labels: tuple[tuple[str, str], ...], repository: str = "") -> str: ...


def _issues_url(study_id: int, filters: dict[str, str]) -> IssuesLink:
    base = reverse("exports:analysis_issues", args=[study_id])

    def url(labels: tuple[tuple[str, str], ...], repository: str = "") -> str:
        params = [("label", f"{f}:{c}") for f, c in labels]
        params += [(k, v) for k, v in filters.items() if k != "repository"]
        if repository or filters.get("repository"):
            params.append(("repository", repository or filters["repository"]))
        return f"{base}?{urlencode(params)}"

    return url


def analysis(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for_export(request, study_id)
    filters = _filters(request)
    try:
        data = study_final_labels(study, filters)
    except ExportFilterError as error:
        context = {"study": study, "error": str(error), "filters": filters}
        return render(request, "exports/analysis.html", context, status=400)
    tables = analysis_tables(data)
    wanted = request.GET.get("download")
    if wanted:
        table = next((t for t in tables if t.id == wanted), None)
        if table is not None:
            response = HttpResponse(table.csv(), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = content_disposition(f"{study.pk}-{table.id}.csv")
            return response
    link = _issues_url(study.pk, filters)
    columns = flow_facets(data)
    svg = flow_svg(
        columns,
        flow_links(data, columns),
        href=lambda f, c: link(((f, c),)),
        names=lambda f, c: data.book.names.get(f, {}).get(c, c),
    )
    rows = [(t, _linked_rows(t, link)) for t in tables]
    context = {
        "study": study,
        "tables": rows,
        "flow": mark_safe(svg),
        "flow_columns": columns,
        "filters": filters,
        "decided": len(data.codes),
        "query": urlencode(filters),
    }
    return render(request, "exports/analysis.html", context)


def _linked_rows(table: Table, link: IssuesLink) -> list[list[tuple[Cell, str]]]:
    """Each cell with the URL of the issues it counts ("" for a cell that counts none)."""
    return [
        [(cell, link(cell.labels, cell.repository) if cell.labels else "") for cell in row]
        for row in table.rows
    ]


def _label(value: str) -> tuple[str, str]:
    facet, _, code = value.partition(":")
    return facet, code


def analysis_issues(request: HttpRequest, study_id: int) -> HttpResponse:
    """The decided issues carrying every `label=facet:code` given (a code matches its
    descendants too), in the repository if given: what a count of the analysis counted."""
    study = study_for_export(request, study_id)
    filters = _filters(request)
    labels = [_label(v) for v in request.GET.getlist("label") if ":" in v]
    try:
        data = study_final_labels(study, {k: v for k, v in filters.items() if k != "repository"})
    except ExportFilterError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain")
    ids = data.items_with(labels, filters.get("repository", ""))
    items = Item.objects.filter(pk__in=ids).select_related("issue__repository", "round")
    items = items.order_by("round__number", "issue__repository", "issue__number")
    context = {
        "study": study,
        "items": items,
        "labels": labels,
        "filters": filters,
        "query": urlencode(filters),
    }
    return render(request, "exports/analysis_issues.html", context)
