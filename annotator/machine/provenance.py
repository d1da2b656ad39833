"""What the dataset card reports of the machine raters (annotator/exports/card_llm.py writes
it): per rater that answered on the exported items, its model and the versions the server
returned, parameters, dates, prompt template, counts, tokens and invalid-answer rate; and the
agreement partitions of the card's agreement run."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from annotator.exports.card_llm import LlmUse, MachineRaterUse
from annotator.studies.models import Item

from . import prompt
from .models import MachineCall, MachineRater

if TYPE_CHECKING:
    from annotator.agreement.models import AgreementRun


def llm_use(items: QuerySet[Item], run: AgreementRun | None) -> LlmUse | None:
    """None when no machine rater called on the exported items."""
    calls = MachineCall.objects.filter(item__in=items.values("pk")).values_list(
        "rater_id",
        "outcome",
        "model_returned",
        "structured",
        "created_at",
        "prompt_tokens",
        "completion_tokens",
    )
    by_rater: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in calls:
        by_rater[row[0]].append(row)
    if not by_rater:
        return None
    raters = MachineRater.objects.filter(pk__in=by_rater).order_by("name")
    partitions, described = [], None
    if run is not None:
        partitions = ((run.result or {}).get("partitions") or {}).get("facets", [])
        described = f"run {run.pk}" + (f" of round {run.round.number}" if run.round else "")
    return LlmUse(
        raters=[_use(rater, by_rater[rater.pk]) for rater in raters],
        run=described,
        partitions=partitions,
    )


def _use(rater: MachineRater, rows: list[tuple[Any, ...]]) -> MachineRaterUse:
    outcomes = [r[1] for r in rows]
    structured = {"JSON schema (response_format)" if r[3] else "parsed" for r in rows}
    dates = [r[4] for r in rows]
    return MachineRaterUse(
        name=rater.name,
        model=rater.model,
        models_returned=sorted({r[2] for r in rows if r[2]}),
        server=rater.base_url or "the server's LLM_BASE_URL",
        parameters=rater.parameters,
        samples=rater.samples,
        prompt_version=rater.prompt_version,
        token_budget=rater.token_budget,
        cut_rule=prompt.CUT_RULE,
        structured=" and ".join(sorted(structured)),
        first_call=min(dates),
        last_call=max(dates),
        labeled=outcomes.count(MachineCall.Outcome.LABELED),
        invalid=outcomes.count(MachineCall.Outcome.INVALID),
        failed=outcomes.count(MachineCall.Outcome.FAILED),
        prompt_tokens=sum(r[5] or 0 for r in rows),
        completion_tokens=sum(r[6] or 0 for r in rows),
    )
