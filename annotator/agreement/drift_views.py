"""The drift page: headline alpha over windows of a round's pairable items (`drift.py`).

Owners and adjudicators (SEE_ALL, as the agreement report); anyone else gets 404. `?round=N`
(default: the last round) and `?window=SIZE` (default 10, at least 5); a bad value is a 400
naming the parameter (annotator/params.py). At the default window the page shows the figures
the round's latest agreement run stored (`drift_service.stored_round_drift`), with the run's
time and a button that starts a new run of the round; another window size is computed for the
request. The tables show one page of PAGE_WINDOWS windows (`?page=N`, default the last: the
latest windows, which the prompt is about); the charts draw every window.
"""

from __future__ import annotations

import math
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotator.params import BadParameter, optional_int
from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.models import Round, Study
from annotator.studies.rounds import asked_round

from .annotators_service import StoredRoundFigures
from .drift import DEFAULT_WINDOW, MIN_WINDOW, facet_chart
from .drift_service import round_drift, stored_round_drift

MAX_WINDOW = 100_000
# Windows per page of the tables: a round of 10,000 items has a thousand windows of 10, more
# rows than anyone reads in a table (the chart shows them all) and seconds to render.
PAGE_WINDOWS = 50


def drift_params(study: Study, get: Any) -> tuple[list[Round], Round, int]:
    """(the study's rounds, the round asked for, the window size) from the query string."""
    asked = asked_round(study, get.get("round"))
    size = optional_int(get.get("window"), name="window", minimum=MIN_WINDOW, maximum=MAX_WINDOW)
    if asked.number is None:
        if asked.last is None:
            raise Http404("No round yet")
        return asked.rounds, asked.last, size or DEFAULT_WINDOW
    if asked.round is None:
        raise BadParameter("round", f"the study has no round {asked.number}")
    return asked.rounds, asked.round, size or DEFAULT_WINDOW


def drift_report(
    study: Study, round: Round, size: int
) -> tuple[dict[str, Any] | None, StoredRoundFigures | None]:
    """(the report, what was stored) for the page and the API: at the default window the
    stored figures (report None before a run of the round computed them), else computed now
    (stored None)."""
    if size == DEFAULT_WINDOW:
        stored = stored_round_drift(study=study, round=round)
        return stored.report, stored
    return round_drift(study=study, round=round, size=size), None


def drift_page(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, SEE_ALL)
    study = membership.study
    rounds, round, size = drift_params(study, request.GET)
    report, stored = drift_report(study, round, size)
    windows = report["windows"] if report else []
    pages = math.ceil(len(windows) / PAGE_WINDOWS)
    page = optional_int(request.GET.get("page"), name="page", minimum=1, maximum=max(pages, 1))
    page = min(page or pages, pages) or 1
    shown = slice((page - 1) * PAGE_WINDOWS, page * PAGE_WINDOWS)
    facets = []
    if report is not None:
        facets = [
            {
                **facet,
                "chart": facet_chart(facet, report["threshold"]),
                "rows": _rows(facet["windows"][shown], windows[shown]),
            }
            for facet in report["facets"]
        ]
    context = {
        "study": study,
        "round": round,
        "rounds": rounds,
        "report": report,
        "size": size,
        "facets": facets,
        "windows": windows[shown],
        "pager": _pager(page, pages, len(windows)),
        "stored": stored,
        "computed_by": stored.run if stored else None,
        "pending": stored.pending if stored else None,
        "default_window": DEFAULT_WINDOW,
        "min_window": MIN_WINDOW,
    }
    return render(request, "agreement/drift.html", context)


def _rows(figures: list[dict[str, Any]], windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each window's figures beside the window itself, for the table."""
    return [{**f, "window": w} for f, w in zip(figures, windows, strict=True)]


def _pager(page: int, pages: int, windows: int) -> dict[str, Any] | None:
    """Which windows the tables show and the pages before and after; None on one page."""
    if pages <= 1:
        return None
    return {
        "page": page,
        "pages": pages,
        "first": (page - 1) * PAGE_WINDOWS + 1,
        "last": min(page * PAGE_WINDOWS, windows),
        "windows": windows,
        "previous": page - 1 if page > 1 else None,
        "next": page + 1 if page < pages else None,
    }
