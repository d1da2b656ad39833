"""The dataset card: a Markdown README shipped beside every export (pure, plain data in)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from annotator.exports.columns import Column, iso


@dataclass(frozen=True)
class AgreementFigure:
    """One agreement number of the card: a coefficient on one facet, with its interval."""

    facet: str
    coefficient: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    units: int | None = None


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


def _agreement_lines(agreement: Sequence[AgreementFigure]) -> list[str]:
    if not agreement:
        return ["No agreement run was recorded for this selection."]
    rows = [
        (
            a.facet,
            a.coefficient,
            _number(a.value),
            "" if a.ci_low is None else f"{_number(a.ci_low)} – {_number(a.ci_high)}",  # noqa: RUF001
            "" if a.units is None else a.units,
        )
        for a in agreement
    ]
    return _table(("facet", "coefficient", "value", "95% CI", "units"), rows)


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
) -> str:
    """The Markdown card of an export.

    `counts` are the selection's numbers in display order (issues matched, sampled, labelled,
    adjudicated, …); `tables` maps each exported table's name to its columns (the column
    dictionary); `categories` maps facet key → category code → name, since files carry codes.
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
        *_agreement_lines(agreement),
        "",
        "## Columns",
        *_column_lines(tables),
    ]
    if categories:
        lines += ["", "## Categories", *_category_lines(categories)]
    return "\n".join(lines) + "\n"
