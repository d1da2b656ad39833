# ruff: noqa: RUF001, RUF003 -- coefficients are written in their own notation (α, κ).
"""The methods paragraph of a study, from its records (pure: no Django).

`MethodsFacts` holds what the study's records say (gathered by `dataset.methods_facts`):
how issues were selected (filters with repository names, sample size, seed, strata), the
rounds, k and the annotators, the latest agreement run of each round (headline coefficient
per facet with its interval and the conventions the run stored) and the decisions by source
and reason. `methods_markdown` and `methods_latex` write the same sentences for a paper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HEADLINES = {
    "krippendorff_alpha": ("Krippendorff's α", r"Krippendorff's $\alpha$"),
    "krippendorff_alpha_masi": (
        "Krippendorff's α with the MASI distance",
        r"Krippendorff's $\alpha$ with the MASI distance",
    ),
    "fleiss_kappa": ("Fleiss' κ", r"Fleiss' $\kappa$"),
    "gwet_ac1": ("Gwet's AC1", "Gwet's AC1"),
    "percent_agreement": ("percent agreement", "percent agreement"),
}
SYMBOLS = {"krippendorff_alpha": "α", "krippendorff_alpha_masi": "α", "fleiss_kappa": "κ"}
DEFAULT_INTERVAL = "delete-one-unit jackknife over pairable units, normal 95% interval"


@dataclass(frozen=True)
class SelectionFacts:
    round: int
    filters: Mapping[str, str]  # described: repository as OWNER/NAME, never an id
    matched: int
    sample_size: int | None
    seed: int | None
    stratified: bool
    sampled: int
    added: int
    strata: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RoundFacts:
    number: int
    kind: str  # calibration | main | …
    items: int


@dataclass(frozen=True)
class FacetAgreement:
    name: str
    coefficient: str  # the headline's key (krippendorff_alpha, krippendorff_alpha_masi, …)
    value: float | None
    ci: tuple[float, float] | None
    units: int | None


@dataclass(frozen=True)
class AgreementFacts:
    round: int | None  # None: a run over every round
    facets: Sequence[FacetAgreement]
    interval: str = DEFAULT_INTERVAL  # how the intervals were computed (the run's conventions)
    headline: str = ""  # the run's own words for its headline coefficient, when it stored them


@dataclass(frozen=True)
class FacetFacts:
    name: str
    multi: bool
    categories: int
    leaves: int
    levels: int


@dataclass(frozen=True)
class MethodsFacts:
    study: str
    codebook: str
    version: int
    facets: Sequence[FacetFacts]
    k: int
    annotators: int  # members with at least one submitted annotation
    members: int  # annotator members of the study
    selections: Sequence[SelectionFacts]
    rounds: Sequence[RoundFacts]
    agreement: Sequence[AgreementFacts]
    items: int
    decisions: Mapping[str, int]  # source → count
    reasons: Mapping[str, int]  # reason label → count, of adjudicated decisions
    screening: Sequence[ScreeningFacts] = ()


@dataclass(frozen=True)
class ScreeningFacts:
    """A screening round's plan and PRISMA-style counts (annotator/screening/panel.py)."""

    round: int
    prioritised: bool
    model: str
    retrain_every: int
    seed: int
    target: float
    alpha: float
    declared: str  # the date the plan and stopping rule were declared
    candidates: int
    duplicates_removed: int
    screened: int
    audited: int
    included: int
    verdict: str  # the stopping panel's words


@dataclass(frozen=True)
class Style:
    """How one output language writes text, quotes, symbols and ranges."""

    text: Callable[[str], str]
    quote: Callable[[str], str]
    dash: str
    coefficient: Callable[[str], str]
    symbol: Callable[[str], str]


LATEX_SYMBOLS = {
    "α": r"$\alpha$",
    "κ": r"$\kappa$",
    "θ": r"$\theta$",
    "Σ": r"$\Sigma$",
    "²": r"$^2$",
    "−": r"$-$",
    "·": r"$\cdot$",
    "±": r"$\pm$",
    "–": "--",
    "—": "---",
    "\x00": r"$\bar{\theta}$",
    "\x01": r"$_{(u)}$",
}


def _latex_text(text: str) -> str:
    """Text escaped for LaTeX, with the symbols of the coefficients' formulas in math mode."""
    from .paper import LATEX_SPECIALS

    text = text.replace("θ\u0304", "\x00").replace("₍ᵤ₎", "\x01")
    return "".join(LATEX_SPECIALS.get(ch, LATEX_SYMBOLS.get(ch, ch)) for ch in text)


MARKDOWN = Style(
    text=lambda s: s.replace("*", r"\*").replace("_", r"\_"),
    quote=lambda s: f"“{s}”",
    dash="–",
    coefficient=lambda key: HEADLINES.get(key, (key, key))[0],
    symbol=lambda key: SYMBOLS.get(key, "value"),
)
LATEX = Style(
    text=_latex_text,
    quote=lambda s: f"``{_latex_text(s)}''",
    dash="--",
    coefficient=lambda key: HEADLINES.get(key, (key, _latex_text(key)))[1],
    symbol=lambda key: {"α": r"$\alpha$", "κ": r"$\kappa$"}.get(SYMBOLS.get(key, ""), "value"),
)


def _count(n: int, word: str, plural: str = "") -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _series(parts: Sequence[str]) -> str:
    if len(parts) <= 2:
        return " and ".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def _filters(selection: SelectionFacts, s: Style) -> str:
    f = selection.filters
    parts = []
    if f.get("repository"):
        parts.append(f"of the repository {s.text(f['repository'])}")
    if f.get("kind"):
        parts.append("pull requests only" if f["kind"] == "pr" else "excluding pull requests")
    if f.get("state"):
        parts.append(f"in state {s.text(f['state'])}")
    if f.get("label"):
        parts.append(f"with the GitHub label {s.quote(f['label'])}")
    if f.get("q"):
        parts.append(f"matching the keyword query {s.quote(f['q'])}")
    if f.get("since"):
        parts.append(f"created on or after {s.text(f['since'])}")
    if f.get("until"):
        parts.append(f"created on or before {s.text(f['until'])}")
    return ", ".join(parts) if parts else "with no filter"


def selection_sentence(selection: SelectionFacts, s: Style) -> str:
    text = (
        f"For round {selection.round} we selected the imported issues "
        f"{_filters(selection, s)}: {_count(selection.matched, 'issue')} matched"
    )
    if selection.sample_size is None:
        text += f" and all were kept ({_count(selection.added, 'new item')}"
        if selection.seed is not None:
            text += f", presented in an order shuffled with seed {selection.seed}"
        return text + ")."
    how = (
        "sample stratified by repository (proportional allocation)"
        if selection.stratified
        else "simple random sample"
    )
    text += (
        f"; we drew a {how} of {_count(selection.sample_size, 'issue')} "
        f"(seed {selection.seed}), keeping {selection.sampled:,}"
    )
    if selection.stratified and len(selection.strata) > 1:
        per = [
            f"{s.text(name)} {c.get('sampled', 0)} of {c.get('matched', 0)}"
            for name, c in selection.strata.items()
        ]
        text += f" ({_series(per)})"
    return text + "."


def rounds_sentence(facts: MethodsFacts, s: Style) -> str:
    if not facts.rounds:
        return "The study has no round yet."
    parts = [f"round {r.number} ({r.kind}, {_count(r.items, 'item')})" for r in facts.rounds]
    return f"Labelling ran in {_count(len(facts.rounds), 'round')}: {_series(parts)}."


def labelling_sentence(facts: MethodsFacts, s: Style) -> str:
    described = []
    for f in facts.facets:
        if f.levels > 1:
            groups = f.categories - f.leaves
            described.append(
                f"{s.text(f.name.lower())} ({f.leaves} leaf categories under "
                f"{_count(groups, 'group')})"
            )
        else:
            kind = ", several may be chosen" if f.multi else ""
            described.append(f"{s.text(f.name.lower())} ({f.categories} categories{kind})")
    return (
        f"Each item was labelled independently by k = {facts.k} annotators, blind to each "
        f"other's labels until their own were submitted; {facts.annotators} of the study's "
        f"{_count(facts.members, 'annotator')} submitted labels. The codebook was "
        f"{s.quote(facts.codebook)}, version {facts.version}, with "
        f"{_count(len(facts.facets), 'facet')}: {_series(described)}."
    )


def _value(a: FacetAgreement, s: Style) -> str:
    if a.value is None:
        return f"{s.text(a.name.lower())}: undefined"
    text = f"{s.text(a.name.lower())} {s.symbol(a.coefficient)} = {a.value:.3f}"
    if a.ci is not None:
        text += f" ({s.text('95% CI')} {a.ci[0]:.3f}{s.dash}{a.ci[1]:.3f}"
        text += f", {_count(a.units, 'item')})" if a.units is not None else ")"
    return text


def _coefficients(keys: set[str], s: Style) -> str:
    """The headline coefficients used, as a paper names them."""
    if keys == {"krippendorff_alpha", "krippendorff_alpha_masi"}:
        return (
            s.coefficient("krippendorff_alpha")
            + " (with the MASI distance for multi-choice facets)"
        )
    return _series([s.coefficient(c) for c in sorted(keys)])


def agreement_sentences(facts: MethodsFacts, s: Style) -> list[str]:
    if not facts.agreement:
        return ["No agreement run has been computed yet."]
    out = []
    for run in facts.agreement:
        where = f"In round {run.round}" if run.round is not None else "Over all rounds"
        named = _coefficients({a.coefficient for a in run.facets}, s)
        values = "; ".join(_value(a, s) for a in run.facets)
        out.append(f"{where}, agreement ({named}) was {values}.")
    interval = facts.agreement[-1].interval
    out.append(f"Intervals: {s.text(interval)}.")
    return out


def decisions_sentence(facts: MethodsFacts, s: Style) -> str:
    decided = sum(facts.decisions.values())
    if not decided:
        return f"None of the {_count(facts.items, 'item')} has final labels yet."
    order = ("unanimous", "majority", "single", "adjudicated", "imported")
    parts = []
    for source in order:
        n = facts.decisions.get(source, 0)
        if not n:
            continue
        part = f"{n:,} {_SOURCE_WORDS[source]}"
        if source == "adjudicated" and facts.reasons:
            reasons = [f"{m} {s.text(r)}" for r, m in facts.reasons.items()]
            part += f" (reasons: {_series(reasons)})"
        parts.append(part)
    text = f"Of the {_count(facts.items, 'item')}, {decided:,} have final labels: {_series(parts)}"
    if decided < facts.items:
        text += f"; {facts.items - decided:,} are undecided"
    return text + "."


_SOURCE_WORDS = {
    "unanimous": "unanimous",
    "majority": "by majority",
    "single": "labelled by one annotator (outside the reliability sample)",
    "adjudicated": "adjudicated",
    "imported": "imported from earlier rounds",
}


def methods_sentences(facts: MethodsFacts, s: Style) -> list[str]:
    out = [f"The study {s.quote(facts.study)} labelled GitHub issues."]
    out += [selection_sentence(sel, s) for sel in facts.selections]
    out.append(rounds_sentence(facts, s))
    out.append(labelling_sentence(facts, s))
    out += agreement_sentences(facts, s)
    out.append(decisions_sentence(facts, s))
    out += [screening_sentence(f, s) for f in facts.screening]
    return out


def screening_sentence(f: ScreeningFacts, s: Style) -> str:
    order = (
        f"ordered the candidates by a {f.model} model retrained after every "
        f"{_count(f.retrain_every, 'decision')} (most likely relevant first, seed {f.seed})"
        if f.prioritised
        else f"screened the candidates in a seeded random order (seed {f.seed})"
    )
    text = (
        f"Screening round {f.round} {order}; its stopping rule, declared on {f.declared} before "
        f"the first decision, was a random audit of the unscreened pool testing whether recall "
        f"is below {f.target:.0%} at p < {f.alpha:g} (Callaghan and Müller-Hansen, 2020). Of "
        f"{_count(f.candidates, 'candidate issue')} ({f.duplicates_removed:,} duplicates "
        f"removed), {f.screened:,} were screened ({f.audited:,} of them in the random audit) and "
        f"{f.included:,} included; the panel's verdict: {f.verdict.replace('≥', 'at least')}."
    )
    return s.text(text)


def methods_markdown(facts: MethodsFacts) -> str:
    return " ".join(methods_sentences(facts, MARKDOWN)) + "\n"


def methods_latex(facts: MethodsFacts) -> str:
    return " ".join(methods_sentences(facts, LATEX)) + "\n"


def facet_agreement(facet: Mapping[str, Any]) -> FacetAgreement:
    """The headline coefficient of one facet of a stored agreement result."""
    key = facet.get("headline") or "krippendorff_alpha"
    coefficient = (facet.get("coefficients") or {}).get(key) or {}
    ci = coefficient.get("ci")
    units = (facet.get("design") or {}).get("pairable_units")
    return FacetAgreement(
        name=str(facet.get("name") or facet.get("key") or "?"),
        coefficient=key,
        value=coefficient.get("value"),
        ci=(float(ci[0]), float(ci[1])) if ci else None,
        units=units,
    )


def agreement_facts(result: Mapping[str, Any], round: int | None) -> AgreementFacts:
    """A stored agreement result as facts; reads its `conventions` when the run stored them."""
    facets = [facet_agreement(f) for f in result.get("facets", [])]
    conventions = result.get("conventions") or {}
    interval = conventions.get("interval") if isinstance(conventions, Mapping) else None
    if not interval:
        interval = next(
            (
                c.get("se_method")
                for f in result.get("facets", [])
                for c in [(f.get("coefficients") or {}).get(f.get("headline") or "", {})]
                if c.get("se_method")
            ),
            DEFAULT_INTERVAL,
        )
    headline = conventions.get("headline", "") if isinstance(conventions, Mapping) else ""
    return AgreementFacts(round, facets, str(interval), str(headline))
