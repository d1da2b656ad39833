# ruff: noqa: RUF001, RUF002, RUF003 -- α, × and – are the notation of the statistics.
"""The dataset card's "LLM use" section (pure, plain data in): what the guidelines for language
models in software-engineering research ask a paper to report — the exact model and the version
the server returned, parameters, dates, the prompt template and its version, the invalid-answer
rate — and the agreement partitions of the card's run (human–human, human–machine,
machine–machine, pooled, the substitution test). Read by `annotator/machine/provenance.py`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class MachineRaterUse:
    """One declared machine rater, as it labelled the exported items."""

    name: str
    model: str  # the model id asked for
    models_returned: Sequence[str]  # the model ids the server said answered
    server: str  # the base URL, or "LLM_BASE_URL"
    parameters: Mapping[str, Any]
    samples: int
    prompt_version: str
    token_budget: int
    cut_rule: str
    structured: str  # "JSON schema (response_format)", "parsed", or both
    first_call: datetime | None
    last_call: datetime | None
    labeled: int
    invalid: int
    failed: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def invalid_rate(self) -> float | None:
        answered = self.labeled + self.invalid
        return self.invalid / answered if answered else None


@dataclass(frozen=True)
class LlmUse:
    raters: Sequence[MachineRaterUse]
    run: str | None  # the agreement run the partitions come from, in words
    partitions: Sequence[Mapping[str, Any]]  # result["partitions"]["facets"] of that run


def llm_use_section(use: LlmUse | None) -> str:
    """The section's Markdown (starting with a blank line), or "" when no model labelled."""
    if use is None or not use.raters:
        return ""
    lines = [
        "",
        "## LLM use",
        "",
        "Language models labelled these items as declared machine raters, apart from the human "
        "annotations: no annotator saw a machine label, owners and adjudicators saw an item's "
        "only once all its human labels were in, and no machine label decided an item. In the "
        "long table their labels are the rows with `annotator_origin` = machine.",
    ]
    for rater in use.raters:
        lines += _rater_lines(rater)
    lines += _partition_lines(use)
    return "\n".join(lines) + "\n"


def _rater_lines(r: MachineRaterUse) -> list[str]:
    given = sorted(r.parameters.items())
    parameters = ", ".join(f"{k} = {v}" for k, v in given) or "server defaults"
    rate = "—" if r.invalid_rate is None else f"{r.invalid_rate:.3f}"
    return [
        "",
        f"### {r.name}",
        "",
        f"- Model: {r.model}; version returned by the server: "
        f"{', '.join(r.models_returned) or 'none returned'}",
        f"- Server: {r.server} (OpenAI-compatible chat completions)",
        f"- Parameters: {parameters}; answers per item: {r.samples}",
        f"- Prompt template: version {r.prompt_version}, built from the codebook version's "
        f"definitions, notes, examples and label rules; thread cut to {r.token_budget} tokens "
        f"({r.cut_rule})",
        f"- Answers asked with: {r.structured}",
        f"- Dates: {_date(r.first_call)} to {_date(r.last_call)}",
        f"- Calls: {r.labeled} valid, {r.invalid} invalid, {r.failed} failed; invalid-answer "
        f"rate {rate}; tokens: {r.prompt_tokens} prompt, {r.completion_tokens} completion",
        "- Every call's full prompt, its SHA-256 and the raw response are kept with the study.",
    ]


def _partition_lines(use: LlmUse) -> list[str]:
    if not use.partitions:
        return ["", "No agreement run of the exported items holds machine partitions yet."]
    lines = [
        "",
        f"### Agreement partitions ({use.run})",
        "",
        "| facet | rater | human–human α | human–machine α | machine samples α | pooled α |",
        "|---|---|---|---|---|---|",
    ]
    verdicts = []
    for facet in use.partitions:
        for r in facet["raters"]:
            cells = [
                _alpha(facet["human_human"]),
                _alpha(r["human_machine"]),
                _alpha(r.get("machine_machine")),
                _alpha(facet["pooled"]),
            ]
            lines.append(f"| {facet['name']} | {r['rater']} | " + " | ".join(cells) + " |")
            verdicts.append(r["substitution"]["verdict"])
    return [*lines, "", "Substitution test:", "", *[f"- {v}" for v in verdicts]]


def _alpha(part: Mapping[str, Any] | None) -> str:
    if not part:
        return "—"
    if part.get("value") is None:
        return "undefined"
    ci = part.get("ci")
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"{part['value']:.3f}{interval}"


def _date(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "—"
