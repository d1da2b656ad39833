"""The dataset card: a Markdown README shipped beside every export (pure, plain data in)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from annotator.exports.columns import Column, iso
from annotator.exports.methods import MARKDOWN, ScreeningFacts, screening_sentence


@dataclass(frozen=True)
class AgreementFigure:
    """One agreement number of the card: a coefficient on one facet, with its interval, the
    units it was computed on (pairable: rated by at least two annotators) and a note (AC1's q)."""

    facet: str
    coefficient: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    units: int | None = None  # units rated at all (items with a rating of the facet)
    pairable_units: int | None = None  # n the coefficient used
    note: str = ""


@dataclass(frozen=True)
class AgreementSource:
    """Where the card's agreement figures come from and what they cover."""

    run: str  # "run 12 of round 1, computed 2024-05-01T12:00:00Z"
    covers: str  # the items the figures are computed on, against the export's
    interval: str | None  # the interval method the run records (None: not recorded)


@dataclass(frozen=True)
class StudyDesign:
    """How the labels were given and decided."""

    annotators: int  # annotators with a submitted annotation on the exported items
    members: int  # annotator members of the study
    k: int  # annotators per item
    adjudication_rule: str
    decisions: Mapping[str, int]  # decision source → exported items decided so
    reasons: Mapping[str, int] = field(default_factory=dict)  # adjudication reason → items


@dataclass(frozen=True)
class ExportScope:
    """Which items an export holds: every item passing its filters, or the decided ones."""

    decided_only: bool
    passing: int  # items passing the filters
    decided: int  # of those, items with a decision

    def sentence(self) -> str:
        undecided = self.passing - self.decided
        if self.decided_only:
            return (
                f"decided items only: {self.decided} of the {self.passing} items passing the "
                f"filters; the {undecided} without a decision are left out"
            )
        if not undecided:
            return f"every item passing the filters ({self.passing}), each with a decision"
        return (
            f"every item passing the filters ({self.passing}); the {undecided} without a "
            "decision yet are rows with empty final labels (export decided items only to "
            "leave them out)"
        )


def _cell(text: object) -> str:
    # Markdown tables break on pipes and newlines in user text (queries, names).
    return str(text).replace("|", "\\|").replace("\n", " ")


def _query(query: str) -> str:
    return "`" + query.replace("`", "'") + "`" if query.strip() else "(all issues)"


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _agreement_lines(
    agreement: Sequence[AgreementFigure], source: AgreementSource | None
) -> list[str]:
    if not agreement:
        return ["No agreement run was recorded for this selection."]
    lines: list[str] = []
    if source is not None:
        lines += [
            f"- Figures: {source.run}.",
            f"- Computed on: {source.covers}.",
            f"- Interval: {source.interval or 'not recorded (the run predates the record)'}.",
            "- n: the pairable units each coefficient used (items the facet was rated on by "
            "at least two annotators); units rated: items with any rating of the facet.",
            "",
        ]
    rows = [
        (
            a.facet,
            a.coefficient,
            _number(a.value),
            "" if a.ci_low is None else f"{_number(a.ci_low)} – {_number(a.ci_high)}",  # noqa: RUF001
            "" if a.pairable_units is None else a.pairable_units,
            "" if a.units is None else a.units,
            a.note,
        )
        for a in agreement
    ]
    header = ("facet", "coefficient", "value", "95% CI", "n (pairable)", "units rated", "note")
    return lines + _table(header, rows)


def _headline_lines(headline: Sequence[str] | None) -> list[str]:
    if headline is None:
        return ["- Declared headline: none was declared for this study.", ""]
    return [f"- {line}" for line in headline] + [""]


def _design_lines(design: StudyDesign | None) -> list[str]:
    if design is None:
        return []
    lines = [
        "",
        "## Design",
        "",
        f"- Annotators: {design.annotators} submitted labels on the exported items "
        f"({design.members} annotator members of the study)",
        f"- k: {design.k} annotators per item",
        f"- Adjudication rule: {design.adjudication_rule}",
        "",
        "### Decisions by source",
        "",
        *_table(("source", "items"), list(design.decisions.items()) or [("(none)", 0)]),
    ]
    if design.reasons:
        lines += ["", "### Adjudication reasons", ""]
        lines += _table(("reason", "items"), list(design.reasons.items()))
    return lines


def _rule_lines(rules: Mapping[str, Sequence[str]] | None) -> list[str]:
    if rules is None:
        return []
    lines = ["", "## Label rules", ""]
    stated = [(facet, texts) for facet, texts in rules.items() if texts]
    if not stated:
        return [*lines, "The codebook version states no label rules."]
    return lines + [f"- {facet}: {'; '.join(texts)}" for facet, texts in stated]


def _left_out_lines(left_out: Sequence[str] | None) -> list[str]:
    if left_out is None:
        return []
    lines = ["", "## Left out at prior import", ""]
    if not left_out:
        return [*lines, "No exported round was imported with values or rows left out."]
    return lines + [f"- {line}" for line in left_out]


def _duplicate_lines(duplicates: Sequence[str] | None) -> list[str]:
    if duplicates is None:
        return []
    lines = ["", "## Near-duplicates left out", ""]
    if not duplicates:
        return [*lines, "No issue of the study was marked a duplicate of another."]
    intro = (
        f"{len(duplicates)} issues were marked duplicates of other issues and left out of "
        "selections, agreement, counts and these files:"
    )
    return [*lines, intro, "", *(f"- {line}" for line in duplicates)]


FORMATS_NOTE = (
    "In CSV and XLSX a text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return"
    " has a leading `'` added so spreadsheet programs do not run it as a formula; JSON, JSONL"
    " and Parquet keep the text as it was."
)


def _column_lines(tables: Mapping[str, Sequence[Column]]) -> list[str]:
    lines: list[str] = []
    for table, columns in tables.items():
        lines += ["", f"### {table}", ""]
        lines += _table(
            ("column", "type", "meaning"), [(c.name, c.kind, c.description) for c in columns]
        )
    return lines


def _category_lines(categories: Mapping[str, Mapping[str, str]]) -> list[str]:
    lines: list[str] = []
    for facet, names in categories.items():
        lines += ["", f"### {facet}", ""]
        lines += _table(("code", "name"), list(names.items()))
    return lines


def dataset_card(
    *,
    title: str,
    codebook_name: str,
    codebook_version: int,
    selection_query: str,
    counts: Mapping[str, int],
    agreement: Sequence[AgreementFigure],
    exported_at: datetime,
    tables: Mapping[str, Sequence[Column]],
    categories: Mapping[str, Mapping[str, str]] | None = None,
    scope: ExportScope | None = None,
    agreement_source: AgreementSource | None = None,
    design: StudyDesign | None = None,
    rules: Mapping[str, Sequence[str]] | None = None,
    left_out: Sequence[str] | None = None,
    headline: Sequence[str] | None = None,
    duplicates: Sequence[str] | None = None,
) -> str:
    """The Markdown card of an export.

    `counts` are the selection's numbers in display order (issues matched, sampled, labelled,
    adjudicated, …); `tables` maps each exported table's name to its columns (the column
    dictionary); `categories` maps facet key → category code → name, since files carry codes;
    `rules` maps facet name → its label rules in words; `left_out` lists in words what a prior
    import of an exported round left out; `headline` the declared headline in words (its
    declaration, changes and figures), or None when the study declared none; `duplicates` the
    issues left out as duplicates of others, in words ("A duplicates B").
    """
    lines = [
        f"# {title}",
        "",
        f"- Codebook: {codebook_name}, version {codebook_version}",
        f"- Exported at: {iso(exported_at)}",
        f"- Selection query: {_query(selection_query)}",
        *([f"- Scope: {scope.sentence()}"] if scope else []),
        "",
        "## Counts",
        "",
        *_table(("what", "count"), list(counts.items())),
        "",
        "## Agreement",
        "",
        *_headline_lines(headline),
        *_agreement_lines(agreement, agreement_source),
        *_design_lines(design),
        *_rule_lines(rules),
        *_left_out_lines(left_out),
        *_duplicate_lines(duplicates),
        "",
        "## Columns",
        "",
        FORMATS_NOTE,
        *_column_lines(tables),
    ]
    if categories:
        lines += ["", "## Categories", *_category_lines(categories)]
    return "\n".join(lines) + "\n"


def screening_section(rounds: Sequence[ScreeningFacts]) -> str:
    """The card's "Screening" section (starting with a blank line): each screening round's
    PRISMA-style flow — issues identified, near-duplicates removed, candidates, screened (of
    them in the random audit), included, excluded, not screened — and the methods sentence
    (order, declared stopping rule, the panel's verdict); "" when the study had none."""
    if not rounds:
        return ""
    lines = [
        "",
        "## Screening",
        "",
        "Which issues were screened and kept, in a PRISMA-style flow per screening round. "
        "Duplicates removed are the issues the study's owners marked near-duplicates of others "
        "(no selection takes them); an issue is screened once all its screeners decided.",
    ]
    for f in rounds:
        lines += ["", f"### Screening round {f.round}", ""]
        lines += _table(
            ("what", "count"),
            [
                ("issues identified", f.candidates + f.duplicates_removed),
                ("near-duplicates removed", f.duplicates_removed),
                ("candidates screened for", f.candidates),
                ("screened", f.screened),
                ("of them in the random audit", f.audited),
                ("included", f.included),
                ("excluded", f.screened - f.included),
                ("not screened", f.candidates - f.screened),
            ],
        )
        lines += ["", screening_sentence(f, MARKDOWN)]
    return "\n".join(lines) + "\n"
