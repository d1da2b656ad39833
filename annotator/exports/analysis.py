"""The tables a bug study reports, from the final dataset (decisions) of a study.

Each table is plain data (`Table`: header, rows of cells, each count with the label filter that
lists its issues) so one definition serves the page, its CSV downloads and the API. The final
labels are read once per request, one row per decision label, and counted in Python: a study
holds thousands of issues, not millions.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from annotator.adjudication.models import DecisionLabel
from annotator.studies.models import Item, Study

from .rows import Codebook, filtered_items, load_codebook

SHARE_FACETS = ("symptom", "root-cause", "fix-pattern", "stage")
FLOW_FACETS = ("symptom", "root-cause", "fix-pattern")
DISTRIBUTED, DISTRIBUTED_YES, STAGE = "distributed", "yes", "stage"


@dataclass(frozen=True)
class Cell:
    value: Any
    labels: tuple[tuple[str, str], ...] | None = None  # (facet, code) filter listing its issues
    repository: str = ""


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    header: list[str]
    rows: list[list[Cell]]

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(self.header)
        writer.writerows([c.value for c in row] for row in self.rows)
        return out.getvalue()


@dataclass
class FinalLabels:
    """Per decided item: its repository and, per facet, the codes at every level chosen."""

    book: Codebook
    repository: dict[int, str] = field(default_factory=dict)
    codes: dict[int, dict[str, set[str]]] = field(default_factory=dict)
    top: dict[int, dict[str, set[str]]] = field(default_factory=dict)  # level-1 codes only

    def items_with(self, labels: Iterable[tuple[str, str]], repository: str = "") -> list[int]:
        wanted = list(labels)
        return [
            pk
            for pk, facets in self.codes.items()
            if (not repository or self.repository[pk] == repository)
            and all(code in facets.get(facet, ()) for facet, code in wanted)
        ]


def load_final_labels(items: QuerySet[Item], book: Codebook) -> FinalLabels:
    data = FinalLabels(book=book)
    rows = (
        DecisionLabel.objects.filter(decision__item__in=items.values("pk"))
        .values_list(
            "decision__item_id",
            "decision__item__issue__repository__owner",
            "decision__item__issue__repository__name",
            "category_id",
        )
        .iterator(chunk_size=5000)
    )
    for item, owner, name, category in rows:
        key, _, path = book.category(category)
        data.repository[item] = f"{owner}/{name}"
        data.codes.setdefault(item, {}).setdefault(key, set()).update(path)
        data.top.setdefault(item, {}).setdefault(key, set()).add(path[0])
    return data


def study_final_labels(study: Study, filters: dict[str, Any] | None = None) -> FinalLabels:
    items = filtered_items(study, dict(filters or {}))
    return load_final_labels(items, load_codebook(study.codebook_version))


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}" if total else ""


def _categories(data: FinalLabels, facet: str, top_only: bool = False) -> list[str]:
    """Codes of the facet in codebook order (top-level ones only if asked)."""
    out = []
    for pk in sorted(data.book.categories, key=lambda c: data.book.order[c]):
        key, code, path = data.book.categories[pk]
        if key == facet and (not top_only or len(path) == 1):
            out.append(code)
    return out


def share_table(data: FinalLabels, facet: str) -> Table:
    """Count and share of each category (and its parents) among items labelled in the facet,
    overall and per repository."""
    labelled = [pk for pk, f in data.codes.items() if f.get(facet)]
    repositories = sorted({data.repository[pk] for pk in labelled})
    per_repo = Counter(data.repository[pk] for pk in labelled)
    counts: Counter[tuple[str, str]] = Counter()
    for pk in labelled:
        for code in data.codes[pk][facet]:
            counts[(code, "")] += 1
            counts[(code, data.repository[pk])] += 1
    header = ["category", "name", "issues", "%"]
    header += [h for r in repositories for h in (r, f"{r} %")]
    rows = []
    names = data.book.names.get(facet, {})
    for code in _categories(data, facet):
        n = counts[(code, "")]
        row = [
            Cell(code),
            Cell(names.get(code, code)),
            Cell(n, ((facet, code),)),
            Cell(_pct(n, len(labelled))),
        ]
        for repo in repositories:
            m = counts[(code, repo)]
            row += [Cell(m, ((facet, code),), repo), Cell(_pct(m, per_repo[repo]))]
        rows.append(row)
    total = [Cell("all"), Cell(""), Cell(len(labelled)), Cell("100.0" if labelled else "")]
    total += [c for r in repositories for c in (Cell(per_repo[r]), Cell("100.0"))]
    return Table(f"share-{facet}", f"Share of each {facet}", header, [*rows, total])


def distributed_by_stage(data: FinalLabels) -> Table:
    """Per stage: issues, distributed-specific ones (`distributed` = yes), their share."""
    rows = []
    for code in _categories(data, STAGE):
        items = [pk for pk, f in data.codes.items() if code in f.get(STAGE, ())]
        yes = [pk for pk in items if DISTRIBUTED_YES in data.codes[pk].get(DISTRIBUTED, ())]
        row = [
            Cell(code),
            Cell(len(items), ((STAGE, code),)),
            Cell(len(yes), ((STAGE, code), (DISTRIBUTED, DISTRIBUTED_YES))),
            Cell(_pct(len(yes), len(items))),
        ]
        rows.append(row)
    header = ["stage", "issues", "distributed-specific", "% distributed-specific"]
    return Table("distributed-by-stage", "Distributed-specific issues per stage", header, rows)


def cross_table(data: FinalLabels, rows_facet: str, columns_facet: str) -> Table:
    """Issues per (row category, column category); hierarchical facets at their top level."""
    row_codes = _categories(data, rows_facet, top_only=True)
    column_codes = _categories(data, columns_facet, top_only=True)
    counts: Counter[tuple[str, str]] = Counter()
    for facets in data.top.values():
        for a in facets.get(rows_facet, ()):
            for b in facets.get(columns_facet, ()):
                counts[(a, b)] += 1

    def cell(a: str, b: str) -> Cell:
        return Cell(counts[(a, b)], ((rows_facet, a), (columns_facet, b)))

    rows = [[Cell(a), *(cell(a, b) for b in column_codes)] for a in row_codes]
    title = f"{rows_facet} × {columns_facet}"  # noqa: RUF001
    return Table(f"cross-{rows_facet}-{columns_facet}", title, [rows_facet, *column_codes], rows)


def flow_links(data: FinalLabels, facets: Sequence[str]) -> list[tuple[int, str, str, int]]:
    """(stage index, source code, target code, issues) between consecutive facets (top level)."""
    out = []
    for i, (a_facet, b_facet) in enumerate(itertools.pairwise(facets)):
        counts: Counter[tuple[str, str]] = Counter()
        for f in data.top.values():
            for a in f.get(a_facet, ()):
                for b in f.get(b_facet, ()):
                    counts[(a, b)] += 1
        out += [(i, a, b, n) for (a, b), n in sorted(counts.items())]
    return out


def _pick(data: FinalLabels, preferred: Sequence[str]) -> list[str]:
    """The preferred facets the codebook has; with fewer than two of them, every facet but
    screening and distributed-specific, in codebook order (a codebook of other names)."""
    keys = [f.key for f in data.book.facets]
    found = [f for f in preferred if f in keys]
    if len(found) >= 2:
        return found
    return [k for k in keys if k not in {"screening", DISTRIBUTED}]


def analysis_tables(data: FinalLabels) -> list[Table]:
    keys = {f.key for f in data.book.facets}
    tables = [share_table(data, f) for f in _pick(data, SHARE_FACETS)]
    if {STAGE, DISTRIBUTED} <= keys:
        tables.append(distributed_by_stage(data))
    flow = flow_facets(data)
    tables += [cross_table(data, a, b) for a, b in itertools.pairwise(flow)]
    return tables


def flow_facets(data: FinalLabels) -> list[str]:
    """symptom → root cause → fix pattern (or the codebook's facets, see _pick)."""
    return _pick(data, FLOW_FACETS)[:4]
