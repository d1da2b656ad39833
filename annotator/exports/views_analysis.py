"""Analysis pages: the shares, stage and cross-tables and flow chart of a study's agreed
dataset at a chosen level, for every stage or one; every count links to its issues, every
table downloads as CSV and LaTeX, every chart as SVG and PNG, and the methods paragraph as
Markdown and LaTeX. Owners and adjudicators only."""

from __future__ import annotations

from typing import Protocol, cast
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from annotator.adjudication.models import Decision
from annotator.figures import NotComputedYet
from annotator.studies.models import Study
from annotator.uploads import content_disposition

from .access import study_for_export
from .analysis import (
    SCREENING,
    STAGE,
    AnalysisParameterError,
    Cell,
    Scheme,
    Table,
    distributed_bars,
    share_bars,
)
from .dataset import (
    ANALYSIS_FILTERS,
    Analysis,
    decided_items_with,
    methods_facts,
    run_analysis,
    scheme_of,
    study_repositories,
)
from .flow import flow_svg
from .methods import methods_latex, methods_markdown
from .paper import (
    Bar,
    bar_png,
    bar_svg,
    csv_bytes,
    flow_png,
    latex_bytes,
    table_frame,
    table_indent,
)
from .rows import ExportFilterError, load_codebook

PAGE_PARAMETERS = (*ANALYSIS_FILTERS, "stage")
TABLE_FORMATS = {"csv": "text/csv; charset=utf-8", "tex": "application/x-tex; charset=utf-8"}
CHART_FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
ISSUES_PER_PAGE = 100
METHODS_FORMATS = {"md": "text/markdown; charset=utf-8", "tex": "application/x-tex; charset=utf-8"}


def _query(request: HttpRequest) -> dict[str, str]:
    """The page's parameters that are set: filters, stage and levels."""
    wanted = [k for k in request.GET if k in PAGE_PARAMETERS or k.split("-")[0] == "level"]
    values = {k: str(request.GET.get(k, "")).strip() for k in wanted}
    return {k: v for k, v in values.items() if v}


class IssuesLink(Protocol):
    def __call__(self, labels: tuple[tuple[str, str], ...], repository: str = "") -> str: ...


def _issues_url(study_id: int, filters: dict[str, str], stage: str) -> IssuesLink:
    base = reverse("exports:analysis_issues", args=[study_id])

    def url(labels: tuple[tuple[str, str], ...], repository: str = "") -> str:
        chosen = [*labels, (STAGE, stage)] if stage and (STAGE, stage) not in labels else labels
        params = [("label", f"{f}:{c}") for f, c in chosen]
        params += [(k, v) for k, v in filters.items() if k != "repository"]
        if repository or filters.get("repository"):
            params.append(("repository", repository or filters["repository"]))
        return f"{base}?{urlencode(params)}"

    return url


def analysis(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for_export(request, study_id)
    if request.GET.get("methods") == "text":  # the page's paragraph, fetched after the page
        context = {"study": study, "methods_markdown": methods_markdown(methods_facts(study))}
        return render(request, "exports/analysis.html#methods-paragraph", context)
    query = _query(request)
    try:
        result = run_analysis(study, query)
    except (ExportFilterError, AnalysisParameterError) as error:
        context = {"study": study, "error": str(error), "query": query, **_choices(study)}
        return render(request, "exports/analysis.html", context, status=400)
    except NotComputedYet as pending:  # a large study's counts, computed by a job at first
        context = {"study": study, "figures": pending.figures, "query": query, **_choices(study)}
        return _render(request, context)
    if request.GET.get("download"):
        return _table_download(result, request.GET["download"], request.GET.get("format", "csv"))
    if request.GET.get("chart"):
        return _chart_download(result, request.GET["chart"], request.GET.get("format", "svg"))
    if request.GET.get("methods"):
        return _methods_download(study, request.GET["methods"])
    return _render(request, _context(result, query))


def _render(request: HttpRequest, context: dict[str, object]) -> HttpResponse:
    """The page, or to htmx polling while a job computes a large study's counts, the region
    of the figures alone; polled at the page's address without a download parameter."""
    query = cast(dict[str, str], context["query"])
    context["poll_url"] = f"{request.path}?{urlencode(query)}" if query else request.path
    if getattr(request, "htmx", False):
        return render(request, "exports/analysis.html#analysis-figures", context)
    return render(request, "exports/analysis.html", context)


def _context(result: Analysis, query: dict[str, str]) -> dict[str, object]:
    study, scheme = result.study, result.scheme
    link = _issues_url(study.pk, result.filters, result.stage)
    svg = flow_svg(
        result.flow_columns,
        result.flow_links(),
        href=lambda f, c: link(((f, c),)),
        names=scheme.name,
    )
    return {
        "study": study,
        "tables": [(t, _linked_rows(t, link)) for t in result.tables],
        "charts": _charts(result),
        "flow": mark_safe(svg),
        "flow_columns": [_facet_name(result, k) for k in result.flow_columns],
        "query": query,
        "querystring": urlencode(query),
        "decided": result.decided,
        "figures": result.figures,
        "stage_name": scheme.name(STAGE, result.stage) if result.stage else "",
        "levels": [
            (f"level-{f.key}", f.name, _level_choice(result, f.key), range(1, f.levels + 1))
            for f in scheme.hierarchical()
        ],
        "methods_markdown": None,  # fetched by the page (`?methods=text`)
        **_choices(study, scheme),
    }


def _facet_name(result: Analysis, key: str) -> str:
    facet = result.scheme.facet(key)
    return facet.name if facet else key


def _level_choice(result: Analysis, facet: str) -> str:
    level = result.levels.get(facet)
    return "leaf" if level is None else str(level)


def _choices(study: Study, scheme: Scheme | None = None) -> dict[str, object]:
    """The options of the filter selects: the study's rounds, repositories and categories."""
    scheme = scheme or scheme_of(load_codebook(study.codebook_version))
    screening, stage = scheme.facet(SCREENING), scheme.facet(STAGE)
    repositories = study_repositories(study)
    return {
        "rounds": list(study.rounds.order_by("number").values_list("number", flat=True)),
        "sources": Decision.Source.choices,
        "verdicts": [(n.code, n.name) for n in screening.nodes] if screening else [],
        "stages": [(n.code, n.name) for n in stage.nodes] if stage else [],
        "repositories": repositories or [],
        "repositories_pending": repositories is None,  # a job lists them
    }


def _linked_rows(table: Table, link: IssuesLink) -> list[list[tuple[Cell, str]]]:
    """Each cell with the URL of the issues it counts ("" for a cell that counts none)."""
    return [
        [(cell, link(cell.labels, cell.repository) if cell.labels else "") for cell in row]
        for row in table.rows
    ]


def _file(body: bytes, content_type: str, name: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = content_disposition(name)
    return response


def _suffix(result: Analysis) -> str:
    """A file name's part saying the stage and levels the figures are for."""
    parts = [f"stage-{result.stage}"] if result.stage else []
    parts += [f"{k}-{'leaf' if v is None else f'l{v}'}" for k, v in result.levels.items()]
    return "".join(f"-{p}" for p in parts)


def _caption(result: Analysis, table: Table) -> str:
    scheme = result.scheme
    where = f" (stage: {scheme.name(STAGE, result.stage)})" if result.stage else ""
    return f"{table.title}{where}, {result.decided} decided issues. {table.note}".strip()


def _table_download(result: Analysis, table_id: str, format: str) -> HttpResponse:
    table = next((t for t in result.tables if t.id == table_id), None)
    if table is None or format not in TABLE_FORMATS:
        raise Http404
    frame = table_frame(table)
    name = f"{result.study.pk}-{table.id}{_suffix(result)}.{format}"
    if format == "csv":
        return _file(csv_bytes(frame), TABLE_FORMATS[format], name)
    indented = "name" if "name" in frame.columns else None
    body = latex_bytes(
        frame,
        caption=_caption(result, table),
        label=f"tab:{table.id}",
        indent=table_indent(table),
        indent_column=indented,
    )
    return _file(body, TABLE_FORMATS[format], name)


def _charts(result: Analysis) -> list[tuple[str, str]]:
    """(chart id, title) of every chart the page offers for download."""
    out = [("flow", " → ".join(result.flow_columns) + " flow")]
    out += [
        (f"bars-{t.id}", t.title)
        for t in result.tables
        if t.id.startswith("share-") or t.id.startswith("distributed-by-")
    ]
    return out


def _bars(result: Analysis, table_id: str) -> list[Bar]:
    if table_id.startswith("share-"):
        values = share_bars(result.tally, table_id.removeprefix("share-"), result.levels)
    else:
        values = distributed_bars(
            result.tally, table_id.removeprefix("distributed-by-"), result.levels
        )
    return [Bar(label, value) for label, value in values]


def _chart_download(result: Analysis, chart_id: str, format: str) -> HttpResponse:
    charts = dict(_charts(result))
    if chart_id not in charts or format not in CHART_FORMATS:
        raise Http404
    name = f"{result.study.pk}-{chart_id}{_suffix(result)}.{format}"
    scheme = result.scheme
    if chart_id == "flow":
        links = result.flow_links()
        if format == "svg":
            svg = flow_svg(result.flow_columns, links, names=scheme.name)
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n' + svg).encode("utf-8")
        else:
            body = flow_png(result.flow_columns, links, names=scheme.name)
        return _file(body, CHART_FORMATS[format], name)
    bars = _bars(result, chart_id.removeprefix("bars-"))
    title = charts[chart_id]
    body = bar_svg(title, bars) if format == "svg" else bar_png(title, bars)
    return _file(body, CHART_FORMATS[format], name)


def _methods_download(study: Study, format: str) -> HttpResponse:
    if format not in METHODS_FORMATS:
        raise Http404
    facts = methods_facts(study)
    text = methods_markdown(facts) if format == "md" else methods_latex(facts)
    return _file(text.encode("utf-8"), METHODS_FORMATS[format], f"{study.pk}-methods.{format}")


def _label(value: str) -> tuple[str, str]:
    facet, _, code = value.partition(":")
    return facet, code


def analysis_issues(request: HttpRequest, study_id: int) -> HttpResponse:
    """The decided issues carrying every `label=facet:code` given (a code matches its
    descendants too), in the repository if given: what a count of the analysis counted, a page
    of them at a time."""
    study = study_for_export(request, study_id)
    filters = {k: v for k, v in _query(request).items() if k in ANALYSIS_FILTERS}
    labels = [_label(v) for v in request.GET.getlist("label") if ":" in v]
    try:
        items = decided_items_with(study, filters, labels)
    except ExportFilterError as error:
        return HttpResponse(str(error), status=400, content_type="text/plain")
    items = items.select_related("issue__repository", "round")
    # By round (numbered as created, so by id), then as the items were added: sorting every
    # match by repository and number read each one's issue (1.4 s for 100,000 decided items).
    items = items.order_by("round_id", "pk")
    page = Paginator(items, ISSUES_PER_PAGE).get_page(request.GET.get("page"))
    chosen = [("label", f"{f}:{c}") for f, c in labels]
    context = {
        "study": study,
        "page": page,
        "labels": labels,
        "filters": filters,
        "query": urlencode(filters),
        "page_query": f"?{urlencode([*chosen, *filters.items()])}" if chosen or filters else "",
    }
    return render(request, "exports/analysis_issues.html", context)
