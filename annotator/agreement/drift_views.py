"""The drift page: headline alpha over windows of a round's pairable items (`drift.py`).

Owners and adjudicators (SEE_ALL, as the agreement report); anyone else gets 404. `?round=N`
(default: the last round) and `?window=SIZE` (default 10, at least 5); a bad value is a 400
naming the parameter (annotator/params.py).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from annotator.params import BadParameter, optional_int
from annotator.studies.access import SEE_ALL, membership_or_404
from annotator.studies.models import Round, Study
from annotator.studies.rounds import asked_round

from .drift import DEFAULT_WINDOW, MIN_WINDOW, facet_chart
from .drift_service import round_drift

MAX_WINDOW = 100_000


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


def drift_page(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, SEE_ALL)
    study = membership.study
    rounds, round, size = drift_params(study, request.GET)
    report = round_drift(study=study, round=round, size=size)
    facets = [
        {**facet, "chart": facet_chart(facet, report["threshold"]), "rows": _rows(facet, report)}
        for facet in report["facets"]
    ]
    context = {
        "study": study,
        "round": round,
        "rounds": rounds,
        "report": report,
        "facets": facets,
        "min_window": MIN_WINDOW,
    }
    return render(request, "agreement/drift.html", context)


def _rows(facet: dict[str, Any], report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each window's figures beside the window itself, for the table."""
    return [
        {**figures, "window": window}
        for figures, window in zip(facet["windows"], report["windows"], strict=True)
    ]
