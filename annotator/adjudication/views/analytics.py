"""The disagreement analytics page (owners and adjudicators; 404 otherwise): `?round=<number>`
narrows it to one round, `?csv=reasons` or `?csv=pairs` downloads a table."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotator.params import BadParameter
from annotator.studies.access import SEE_ALL, membership_or_404

from ..analytics import disagreement_analytics_as_of, pairs_csv, reasons_csv, round_of

CSV_TABLES = {"reasons": reasons_csv, "pairs": pairs_csv}


def analytics(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id, SEE_ALL)
    study = membership.study
    round, rounds = round_of(study, request.GET.get("round"))
    table = request.GET.get("csv")
    if table is not None and table not in CSV_TABLES:
        raise BadParameter("csv", f"choose one of {', '.join(CSV_TABLES)}")
    figures = disagreement_analytics_as_of(study=study, round=round)
    report = figures.value
    if table is not None and figures.ready:
        response = HttpResponse(CSV_TABLES[table](report), content_type="text/csv; charset=utf-8")
        scope = f"-round-{round.number}" if round is not None else ""
        name = f"study-{study.pk}{scope}-{table}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    context: dict[str, Any] = {
        "study": study,
        "membership": membership,
        "round": round,
        "rounds": rounds,
        "figures": figures,
        "query": f"round={round.number}&" if round is not None else "",
        "poll_url": f"{request.path}?round={round.number}" if round is not None else request.path,
    }
    if figures.ready:
        context.update(_report(report))
    # A large study's page polls while a job computes its figures: the region alone.
    if getattr(request, "htmx", False):
        return render(request, "adjudication/analytics.html#analytics-figures", context)
    return render(request, "adjudication/analytics.html", context)


def _report(report: dict[str, Any]) -> dict[str, Any]:
    time = report["time_to_resolution"]
    return {
        "report": report,
        # each reason with its counts in the order of the facet columns
        "reasons": [
            (row, [row["counts"][f["key"]] for f in report["reasons_by_facet"]["facets"]])
            for row in report["reasons_by_facet"]["rows"]
        ],
        "slowest": [{**t, "hours": t["seconds"] / 3600} for t in time["slowest"]],
        "hours": {k: _hours(time[k]) for k in ("median", "p90", "max")},
    }


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
