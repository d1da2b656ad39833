"""Column specs of the export tables and the conversion of cell values per format (pure).

The contract itself (which columns the final dataset and the long table have, and what they
mean) is written out in the docstring of `annotator.exports.writers`; this module builds those
column lists so the Django service, the writers and the dataset card share one definition.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

ColumnKind = Literal["int", "float", "bool", "str", "list", "timestamp"]
LIST_SEPARATOR = ";"


@dataclass(frozen=True)
class Column:
    """One column: its name, its type in every format, and what it means (for the card)."""

    name: str
    kind: ColumnKind
    description: str = ""


@dataclass(frozen=True)
class FacetSpec:
    """What the final-dataset columns of one facet depend on.

    `levels` is the depth of the facet's category tree (1 = flat, 2 = inner → leaf categories);
    a multi-valued facet is flat (its categories are chosen as a set).
    """

    key: str
    name: str
    kind: Literal["single", "multi"] = "single"
    levels: int = 1


@functools.lru_cache(maxsize=1024)  # asked once per label written
def column_base(facet_key: str) -> str:
    """`fix-pattern` → `fix_pattern`: names that pandas, R and SQL take without quoting."""
    return facet_key.replace("-", "_").replace(" ", "_").lower()


def facet_columns(facet: FacetSpec) -> list[Column]:
    base = column_base(facet.key)
    if facet.kind == "multi":
        desc = f"{facet.name}: codes of the chosen categories (a set; ';'-joined in CSV/XLSX)"
        return [Column(base, "list", desc)]
    if facet.levels <= 1:
        return [Column(base, "str", f"{facet.name}: category code")]
    return [
        Column(f"{base}_l{level}", "str", f"{facet.name}: category code at level {level}")
        for level in range(1, facet.levels + 1)
    ]


ITEM_COLUMNS = (
    Column("item_id", "int", "Study item id (stable within the study)"),
    Column("round", "int", "Round number the item was labelled in"),
    Column("repository", "str", "owner/name of the GitHub repository"),
    Column("number", "int", "Issue number in the repository"),
    Column("url", "str", "Issue URL (html_url)"),
)


def unsure_column(facet: FacetSpec) -> Column:
    """`<facet>_unsure`: whether the annotator marked the facet unsure (chosen or not)."""
    return Column(
        f"{column_base(facet.key)}_unsure",
        "bool",
        f"{facet.name}: the annotator marked it unsure (whether or not they chose a category)",
    )


UNSURE_FACETS = Column(
    "unsure",
    "list",
    "Keys of the facets some annotator marked unsure in a submitted annotation of the item "
    "(a set; ';'-joined in CSV/XLSX); empty when none",
)


def final_dataset_columns(facets: Sequence[FacetSpec]) -> list[Column]:
    """Columns of the final dataset: one row per item, the agreed label of each facet."""
    columns = [*ITEM_COLUMNS, Column("title", "str", "Issue title")]
    for facet in facets:
        columns.extend(facet_columns(facet))
    columns.append(UNSURE_FACETS)
    columns.append(
        Column(
            "decision_source",
            "str",
            "How the final labels were reached: unanimous, majority, single (one annotator by "
            "design), adjudicated or imported",
        )
    )
    columns.append(Column("decided_at", "timestamp", "When the decision was recorded (UTC)"))
    columns.extend(DECISION_NOTE_COLUMNS)
    columns.append(
        Column(
            "confidence",
            "int",
            "The adjudicator's confidence in the decision: 1 low, 2 medium, 3 high; empty when "
            "not said or automatic",
        )
    )
    return columns


DECISION_NOTE_COLUMNS = (
    Column(
        "reason",
        "str",
        "The adjudication reason code (guideline-gap, ambiguous-report, annotator-slip, "
        "codebook-change, other); empty for automatic decisions",
    ),
    Column("comment", "str", "The adjudicator's comment on the decision"),
)
NOTES = Column("notes", "str", "The annotator's notes on the item")


def annotator_sheet_columns(facets: Sequence[FacetSpec]) -> list[Column]:
    """Columns of one annotator's sheet in the XLSX: the final-dataset layout, one annotator,
    with `<facet>_unsure` after each facet's columns."""
    columns = [*ITEM_COLUMNS, Column("title", "str", "Issue title")]
    for facet in facets:
        columns.extend(facet_columns(facet))
        columns.append(unsure_column(facet))
    columns.append(Column("submitted_at", "timestamp", "When the annotation was submitted (UTC)"))
    columns.append(Column("seconds_spent", "int", "Seconds the annotator spent on the item"))
    columns.append(NOTES)
    return columns


LONG_TABLE_COLUMNS = (
    *ITEM_COLUMNS,
    Column(
        "row_kind",
        "str",
        "annotation: a label an annotator gave, blind; after_discussion: a label of the "
        "annotator's revision after the item was released for discussion (after their "
        "annotation rows); machine: a label a declared machine rater gave (after the humans' "
        "rows; only on items whose human labels are all in); decision: a final label of the "
        "item's decision (after the item's annotation rows); keep row_kind = annotation for "
        "agreement",
    ),
    Column("facet", "str", "Facet key (screening, stage, symptom, root-cause, fix-pattern, …)"),
    Column(
        "annotator",
        "str",
        "Username of the annotator; on machine rows the rater's name (`name#k` for its sample "
        "k > 0); empty on decision rows",
    ),
    Column(
        "annotator_origin",
        "str",
        "human (annotation and after_discussion rows) or machine (machine rows: a language "
        "model's label, never shown to annotators, never deciding an item); empty on decision "
        "rows",
    ),
    Column(
        "category",
        "str",
        "Code of the chosen category (the leaf, for hierarchical facets); empty on the row of "
        "a facet marked unsure with no category chosen",
    ),
    Column("category_l1", "str", "Code of its top-level ancestor (= category when flat)"),
    Column("unsure", "bool", "The annotator marked this facet unsure"),
    Column("codebook_version", "int", "Number of the codebook version the label was given in"),
    Column("submitted_at", "timestamp", "When the annotation was submitted (UTC)"),
    Column("seconds_spent", "int", "Seconds the annotator spent on the whole item"),
    Column(
        "notes",
        "str",
        "The annotator's notes on the item (repeated on each of their rows; empty on decision "
        "rows)",
    ),
    Column(
        "decision_source",
        "str",
        "On decision rows: unanimous, majority, single (one annotator by design), adjudicated "
        "or imported",
    ),
    Column(
        "reason",
        "str",
        "On decision rows: the adjudication reason code (guideline-gap, ambiguous-report, "
        "annotator-slip, codebook-change, other); empty for automatic decisions",
    ),
    Column("comment", "str", "On decision rows: the adjudicator's comment"),
)


def annotator_column(facet: FacetSpec, username: str) -> str:
    """`symptom_by_alice`: one annotator's label of a facet in the disagreements table."""
    return f"{column_base(facet.key)}_by_{username}"


def final_column(facet: FacetSpec) -> str:
    return f"{column_base(facet.key)}_final"


def disagreement_columns(facets: Sequence[FacetSpec], annotators: Sequence[str]) -> list[Column]:
    """Columns of the disagreements table: one row per item whose annotators differ on a facet
    or where one marked a facet unsure (and the study sends those to adjudication); per facet
    each annotator's label, then the decision's."""
    columns = [
        *ITEM_COLUMNS,
        Column("title", "str", "Issue title"),
        Column("agreement", "float", "Mean pairwise agreement of the item's annotations (0–1)"),  # noqa: RUF001
        Column(
            "disagreeing",
            "list",
            "Keys of the facets the annotators labelled differently (a set; ';'-joined in "
            "CSV/XLSX)",
        ),
        UNSURE_FACETS,
    ]
    for facet in facets:
        kind: ColumnKind = "list" if facet.kind == "multi" else "str"
        what = "codes chosen (a set)" if facet.kind == "multi" else "code chosen (the leaf)"
        for username in annotators:
            columns.append(
                Column(
                    annotator_column(facet, username), kind, f"{facet.name}: {username}'s {what}"
                )
            )
        columns.append(Column(final_column(facet), kind, f"{facet.name}: the decision's {what}"))
    columns += [
        Column(
            "decision_source",
            "str",
            "How the item was decided: unanimous, majority, single (one annotator by design), "
            "adjudicated or imported; empty "
            "while it waits for an adjudicator",
        ),
        *DECISION_NOTE_COLUMNS,
        Column("decided_at", "timestamp", "When the decision was recorded (UTC)"),
    ]
    return columns


def utc(value: datetime) -> datetime:
    """The UTC instant of an aware datetime; naive ones are refused rather than guessed."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()} in a timestamp column: pass UTC")
    return value.astimezone(UTC)


def iso(value: datetime) -> str:
    """ISO 8601 in UTC to the second with a `Z`, the same width on every row."""
    return utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_text(kind: ColumnKind, value: Any) -> str:
    """A CSV cell: empty for missing, `;`-joined lists, ISO timestamps, lowercase booleans."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if kind == "list":
        return join_list(value)
    if kind == "timestamp":
        return iso(value)
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def join_list(values: Sequence[Any]) -> str:
    parts = [str(v) for v in values]
    for part in parts:
        if LIST_SEPARATOR in part:
            raise ValueError(f"list element {part!r} contains {LIST_SEPARATOR!r}: cannot join it")
    return LIST_SEPARATOR.join(parts)


def to_json(kind: ColumnKind, value: Any) -> Any:
    """A JSON value: null for missing (and NaN), arrays for lists, ISO strings for timestamps."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "list":
        return [str(v) for v in value]
    if kind == "timestamp":
        return iso(value)
    return value
