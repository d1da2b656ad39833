# ruff: noqa: RUF001, RUF002 -- table titles use the multiplication sign, as papers print them.
"""The tables a bug study reports, from its agreed dataset (pure: no Django).

Input: the rows the final-dataset export writes (`Record`s made from them by
`record_from_export_row`, so the analysis counts exactly what the export holds: items with a
decision) and the codebook's shape (`Scheme`). Output: `Table`s — a header and rows of `Cell`s,
each count carrying the label filter that lists its issues — so one definition serves the page,
its CSV/LaTeX downloads and the API.

Levels. A hierarchical facet (symptom: groups → leaves) is analysed at a chosen level: `LEAF`
(the default: the category each label names) or a depth n (1 = top level). A label that stops
above level n (a leaf such as `other` at depth 1) counts at its own category at every deeper
level, so each level's categories partition the labelled issues. Shares are of the issues
labelled in the facet: at one level they sum to 100% for a single-choice facet; a multi-choice
facet (fix pattern) counts an issue once under each category chosen, so its shares sum to more.

Stage. `Dataset.in_stage(code)` keeps the issues decided in that stage; every table of the
restricted dataset is then "within the stage".
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

LEAF: int | None = None
# One level for every hierarchical facet, or one per facet key (a facet not named: LEAF).
Level = int | None | Mapping[str, int | None]
SHARE_FACETS = ("symptom", "root-cause", "fix-pattern", "stage")
FLOW_FACETS = ("symptom", "root-cause", "fix-pattern")
STAGE_ROWS = ("symptom", "root-cause")
DISTRIBUTED, DISTRIBUTED_YES, STAGE, SCREENING = "distributed", "yes", "stage", "screening"


class AnalysisParameterError(ValueError):
    """A level or stage the analysis cannot use; `parameter` names the query parameter."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter


@dataclass(frozen=True)
class Node:
    """One category: its code, name and path of codes from the top level down to it."""

    code: str
    name: str
    path: tuple[str, ...]

    @property
    def depth(self) -> int:
        return len(self.path)


@dataclass(frozen=True)
class FacetScheme:
    key: str
    name: str
    multi: bool
    nodes: tuple[Node, ...]  # codebook order, each parent before its children (depth first)

    @property
    def levels(self) -> int:
        return max((n.depth for n in self.nodes), default=1)

    def leaves(self) -> set[str]:
        parents = {n.path[-2] for n in self.nodes if n.depth > 1}
        return {n.code for n in self.nodes if n.code not in parents}

    def path(self, code: str) -> tuple[str, ...]:
        return self._paths().get(code, (code,))

    def _paths(self) -> dict[str, tuple[str, ...]]:
        return {n.code: n.path for n in self.nodes}

    def unit(self, code: str, level: int | None) -> str:
        """The category `code` counts under at `level` (LEAF: itself)."""
        path = self.path(code)
        return path[-1] if level is None else path[min(level, len(path)) - 1]

    def units(self, level: int | None) -> list[Node]:
        """The categories of a level, in codebook order: they partition the labelled issues."""
        leaves = self.leaves()
        if level is None:
            return [n for n in self.nodes if n.code in leaves]
        return [n for n in self.nodes if n.depth == level or (n.depth < level and n.code in leaves)]

    def down_to(self, level: int | None) -> list[Node]:
        """Every category down to a level (with its groups above it), in codebook order."""
        return [n for n in self.nodes if level is None or n.depth <= level]


def tree_order(facet_nodes: Sequence[Node]) -> tuple[Node, ...]:
    """Nodes given in codebook rank order, rearranged depth first (children under parents)."""
    children: dict[tuple[str, ...], list[Node]] = {}
    for n in facet_nodes:
        children.setdefault(n.path[:-1], []).append(n)
    out: list[Node] = []

    def visit(prefix: tuple[str, ...]) -> None:
        for n in children.get(prefix, []):
            out.append(n)
            visit(n.path)

    visit(())
    return tuple(out)


@dataclass(frozen=True)
class Scheme:
    facets: tuple[FacetScheme, ...]

    def facet(self, key: str) -> FacetScheme | None:
        return next((f for f in self.facets if f.key == key), None)

    def keys(self) -> list[str]:
        return [f.key for f in self.facets]

    def name(self, facet: str, code: str) -> str:
        found = self.facet(facet)
        node = next((n for n in found.nodes if n.code == code), None) if found else None
        return node.name if node else code

    def hierarchical(self) -> list[FacetScheme]:
        return [f for f in self.facets if f.levels > 1]


@dataclass(frozen=True)
class Record:
    """One decided item: where it is from and, per facet, the categories chosen."""

    item_id: int
    repository: str
    round: int | None
    source: str
    labels: Mapping[str, tuple[str, ...]]


def column_base(facet_key: str) -> str:
    """The export's column name of a facet (`root-cause` → `root_cause`; as columns.py)."""
    return facet_key.replace("-", "_").replace(" ", "_").lower()


def record_from_export_row(row: Mapping[str, Any], scheme: Scheme) -> Record | None:
    """A final-dataset row (the export's column contract) as a Record; None when undecided."""
    if not row.get("decision_source"):
        return None
    labels: dict[str, tuple[str, ...]] = {}
    for facet in scheme.facets:
        base = column_base(facet.key)
        if facet.multi:
            chosen = tuple(row.get(base) or ())
        elif facet.levels > 1:
            path = [row.get(f"{base}_l{n}") for n in range(1, facet.levels + 1)]
            deepest = [c for c in path if c]
            chosen = (deepest[-1],) if deepest else ()
        else:
            chosen = (row[base],) if row.get(base) else ()
        if chosen:
            labels[facet.key] = chosen
    return Record(
        row["item_id"], row["repository"], row.get("round"), row["decision_source"], labels
    )


@dataclass
class Dataset:
    scheme: Scheme
    records: list[Record] = field(default_factory=list)

    def in_stage(self, code: str) -> Dataset:
        return Dataset(self.scheme, [r for r in self.records if code in r.labels.get(STAGE, ())])

    def codes_on_path(self, record: Record, facet: str) -> set[str]:
        """Every category an item's labels in the facet name or lie under."""
        found = self.scheme.facet(facet)
        if found is None:
            return set()
        return {c for code in record.labels.get(facet, ()) for c in found.path(code)}

    def units(self, record: Record, facet: str, level: int | None) -> set[str]:
        found = self.scheme.facet(facet)
        if found is None:
            return set()
        return {found.unit(code, level) for code in record.labels.get(facet, ())}

    def labelled(self, facet: str) -> list[Record]:
        return [r for r in self.records if r.labels.get(facet)]

    def items_with(self, labels: Iterable[tuple[str, str]], repository: str = "") -> list[int]:
        """Items whose labels name (or lie under) every (facet, code) given."""
        wanted = list(labels)
        return [
            r.item_id
            for r in self.records
            if (not repository or r.repository == repository)
            and all(code in self.codes_on_path(r, facet) for facet, code in wanted)
        ]


PathKey = tuple[
    str, str, str, bool
]  # (facet, code on a label's path or "", repository, distributed)
PairKey = tuple[str, str, str, str]  # (facet a, unit a, facet b, unit b)


@dataclass
class Tally:
    """The issue counts every table and chart is read from, so they can be counted over the
    records (`tally_of`) or aggregated in the database (exports/aggregates.py) alike.

    `on_path`: issues per (facet, category on a label's path, repository, distributed-specific),
    each issue once per category however many of its labels lie under it; the category "" counts
    the issues labelled in the facet at all. `pairs`: issues per pair of categories of
    `table_pairs` facets, each at its level in `levels` (an issue once per pair of its units)."""

    scheme: Scheme
    decided: int
    levels: dict[str, int | None]
    on_path: Counter[PathKey] = field(default_factory=Counter)
    pairs: Counter[PairKey] = field(default_factory=Counter)

    def issues(self, facet: str, code: str, repository: str | None = None) -> int:
        """Issues with `code` on a label's path in `facet` ("": labelled in it), in a repository
        (None: in any)."""
        return self._by_repository.get((facet, code, repository), 0)

    def distributed(self, facet: str, code: str) -> int:
        """Of `issues(facet, code)`, the distributed-specific ones."""
        return self._distributed.get((facet, code), 0)

    def repositories(self, facet: str) -> list[str]:
        """The repositories of the issues labelled in the facet, by name."""
        return sorted(
            repo
            for (f, code, repo), n in self._by_repository.items()
            if f == facet and not code and repo is not None and n
        )

    # Read once the counters are filled (tally_of, aggregates.study_tally_as_of), never before.
    @cached_property
    def _by_repository(self) -> dict[tuple[str, str, str | None], int]:
        out: Counter[tuple[str, str, str | None]] = Counter()
        for (facet, code, repo, _), n in self.on_path.items():
            out[(facet, code, repo)] += n
            out[(facet, code, None)] += n
        return dict(out)

    @cached_property
    def _distributed(self) -> dict[tuple[str, str], int]:
        out: Counter[tuple[str, str]] = Counter()
        for (facet, code, _, yes), n in self.on_path.items():
            if yes:
                out[(facet, code)] += n
        return dict(out)


def table_pairs(scheme: Scheme) -> list[tuple[str, str]]:
    """The (rows, columns) facets of every cross-table and of the flow's links."""
    keys = set(scheme.keys())
    pairs = [(f, STAGE) for f in STAGE_ROWS if f in keys] if STAGE in keys else []
    flow = [(a, b) for a, b in itertools.pairwise(flow_facets(scheme))]
    return pairs + [p for p in flow if p not in pairs]


def tally_of(data: Dataset, level: Level = LEAF) -> Tally:
    """The counts of a dataset's records (the reference the database's aggregates must equal)."""
    levels = {f.key: at(level, f.key) for f in data.scheme.hierarchical()}
    tally = Tally(data.scheme, len(data.records), levels)
    pairs = table_pairs(data.scheme)
    for r in data.records:
        yes = DISTRIBUTED_YES in r.labels.get(DISTRIBUTED, ())
        for facet in r.labels:
            if data.scheme.facet(facet) is None or not r.labels[facet]:
                continue
            for code in {"", *data.codes_on_path(r, facet)}:
                tally.on_path[(facet, code, r.repository, yes)] += 1
        for a_facet, b_facet in pairs:
            for a in data.units(r, a_facet, at(levels, a_facet)):
                for b in data.units(r, b_facet, at(levels, b_facet)):
                    tally.pairs[(a_facet, a, b_facet, b)] += 1
    return tally


def _tally(data: Dataset | Tally, level: Level) -> Tally:
    return data if isinstance(data, Tally) else tally_of(data, level)


@dataclass(frozen=True)
class Cell:
    value: Any
    labels: tuple[tuple[str, str], ...] | None = None  # (facet, code) filter listing its issues
    repository: str = ""
    indent: int = 0  # depth below the top level, for a name shown as a tree


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    header: list[str]
    rows: list[list[Cell]]
    note: str = ""

    def values(self) -> list[list[Any]]:
        return [[c.value for c in row] for row in self.rows]


def at(level: Level, facet: str) -> int | None:
    """The level a facet is analysed at."""
    if isinstance(level, Mapping):
        return level.get(facet, LEAF)
    return level


def parse_level(value: str | None, deepest: int, parameter: str = "level") -> int | None:
    """`leaf` (or nothing) → LEAF; a number from 1 to `deepest` → that depth."""
    if value in (None, "", "leaf"):
        return LEAF
    text = str(value)
    # ASCII digits only, and few: str.isdigit() takes "²" and 5,000 digits, int() neither.
    if not (text.isascii() and text.isdigit() and len(text) <= 9) or not 1 <= int(text) <= deepest:
        raise AnalysisParameterError(
            parameter, f"{value!r} is not 'leaf' or a level from 1 to {deepest}"
        )
    return int(text)


def parse_levels(query: Mapping[str, str], scheme: Scheme) -> dict[str, int | None]:
    """Per hierarchical facet, its level: `level-<facet key>` if given, else `level` (which
    may name any depth some facet has; a shallower facet then stops at its own leaves)."""
    deepest = max((f.levels for f in scheme.facets), default=1)
    default = parse_level(query.get("level"), deepest)
    out = {}
    for f in scheme.hierarchical():
        name = f"level-{f.key}"
        out[f.key] = parse_level(query[name], f.levels, name) if query.get(name) else default
    return out


def check_stage(value: str | None, scheme: Scheme) -> str:
    """A stage code of the codebook ('' for every stage)."""
    if not value:
        return ""
    stage = scheme.facet(STAGE)
    codes = [n.code for n in stage.nodes] if stage else []
    if value not in codes:
        raise AnalysisParameterError("stage", f"{value!r} is not one of {codes}")
    return value


def pct(n: int, total: int) -> float | None:
    return round(100 * n / total, 1) if total else None


def share_table(data: Dataset | Tally, facet: str, level: Level = LEAF) -> Table:
    """Per category down to `level` (groups above it, indented tree, codebook order): issues
    and share of the issues labelled in the facet, overall and per repository."""
    tally = _tally(data, level)
    scheme = tally.scheme.facet(facet)
    assert scheme is not None
    labelled = tally.issues(facet, "")
    repositories = tally.repositories(facet)
    per_repo = {repo: tally.issues(facet, "", repo) for repo in repositories}
    header = ["level", "category", "name", "issues", "%"]
    header += [h for repo in repositories for h in (repo, f"{repo} %")]
    rows = []
    for node in scheme.down_to(at(level, facet)):
        n, key = tally.issues(facet, node.code), ((facet, node.code),)
        row = [Cell(node.depth), Cell(node.code), Cell(node.name, indent=node.depth - 1)]
        row += [Cell(n, key), Cell(pct(n, labelled))]
        for repo in repositories:
            m = tally.issues(facet, node.code, repo)
            row += [Cell(m, key, repo), Cell(pct(m, per_repo[repo]))]
        rows.append(row)
    total = [Cell(""), Cell("all"), Cell(""), Cell(labelled), Cell(100.0 if labelled else None)]
    total += [c for repo in repositories for c in (Cell(per_repo[repo]), Cell(100.0))]
    return Table(
        f"share-{facet}",
        f"Share of each {scheme.name.lower()}",
        header,
        [*rows, total],
        _share_note(scheme),
    )


def _share_note(scheme: FacetScheme) -> str:
    if scheme.multi:
        return (
            "Of the issues labelled in the facet; an issue with several categories counts under "
            "each, so the shares sum to more than 100%."
        )
    if scheme.levels > 1:
        return (
            "Of the issues labelled in the facet. Each level's categories (with a category that "
            "has no sub-categories counted at every level below it) sum to 100%."
        )
    return "Of the issues labelled in the facet; the shares sum to 100%."


def distributed_table(data: Dataset | Tally, facet: str, level: Level = LEAF) -> Table:
    """Per category of `facet` down to `level`: issues, distributed-specific ones, their share."""
    tally = _tally(data, level)
    scheme = tally.scheme.facet(facet)
    assert scheme is not None
    rows = []
    for node in scheme.down_to(at(level, facet)):
        issues, yes = tally.issues(facet, node.code), tally.distributed(facet, node.code)
        key = (facet, node.code)
        rows.append(
            [
                Cell(node.depth),
                Cell(node.code),
                Cell(node.name, indent=node.depth - 1),
                Cell(issues, (key,)),
                Cell(yes, (key, (DISTRIBUTED, DISTRIBUTED_YES))),
                Cell(pct(yes, issues)),
            ]
        )
    header = ["level", facet, "name", "issues", "distributed-specific", "% distributed-specific"]
    title = f"Distributed-specific issues per {scheme.name.lower()}"
    note = "Distributed-specific: the facet “distributed” decided “yes”."
    return Table(f"distributed-by-{facet}", title, header, rows, note)


def cross_table(
    data: Dataset | Tally, rows_facet: str, columns_facet: str, level: Level = LEAF
) -> Table:
    """Issues per (row category, column category), both facets at `level`; an issue counts in
    every pair of its categories (several for a multi-choice facet)."""
    tally = _tally(data, level)
    row_scheme, column_scheme = tally.scheme.facet(rows_facet), tally.scheme.facet(columns_facet)
    assert row_scheme is not None and column_scheme is not None
    row_codes = [n.code for n in row_scheme.units(at(tally.levels, rows_facet))]
    column_codes = [n.code for n in column_scheme.units(at(tally.levels, columns_facet))]

    def cell(a: str, b: str) -> Cell:
        n = tally.pairs.get((rows_facet, a, columns_facet, b), 0)
        return Cell(n, ((rows_facet, a), (columns_facet, b)))

    rows = [[Cell(a), *(cell(a, b) for b in column_codes)] for a in row_codes]
    title = f"{row_scheme.name} × {column_scheme.name.lower()}"
    return Table(f"cross-{rows_facet}-{columns_facet}", title, [rows_facet, *column_codes], rows)


def flow_links(
    data: Dataset | Tally, facets: Sequence[str], level: Level = LEAF
) -> list[tuple[int, str, str, int]]:
    """(column index, source code, target code, issues) between consecutive facets."""
    tally = _tally(data, level)
    out = []
    for i, (a_facet, b_facet) in enumerate(itertools.pairwise(facets)):
        counts = {
            (a, b): n
            for (fa, a, fb, b), n in tally.pairs.items()
            if fa == a_facet and fb == b_facet and n
        }
        out += [(i, a, b, n) for (a, b), n in sorted(counts.items())]
    return out


def _pick(scheme: Scheme, preferred: Sequence[str]) -> list[str]:
    """The preferred facets the codebook has; with fewer than two of them, every facet but
    screening and distributed-specific, in codebook order (a codebook of other names)."""
    keys = scheme.keys()
    found = [f for f in preferred if f in keys]
    if len(found) >= 2:
        return found
    return [k for k in keys if k not in {SCREENING, DISTRIBUTED}]


def flow_facets(scheme: Scheme) -> list[str]:
    """symptom → root cause → fix pattern (or the codebook's facets, see _pick)."""
    return _pick(scheme, FLOW_FACETS)[:4]


def analysis_tables(data: Dataset | Tally, level: Level = LEAF) -> list[Table]:
    """Every table, in the page's order: shares, distributed-specific shares, stage cross-tables,
    then the flow's consecutive cross-tables (symptom × root cause, root cause × fix pattern)."""
    tally = _tally(data, level)
    keys = set(tally.scheme.keys())
    tables = [share_table(tally, f, level) for f in _pick(tally.scheme, SHARE_FACETS)]
    if DISTRIBUTED in keys:
        tables += [distributed_table(tally, f, level) for f in (STAGE, "symptom") if f in keys]
    if STAGE in keys:
        tables += [cross_table(tally, f, STAGE, level) for f in STAGE_ROWS if f in keys]
    flow = flow_facets(tally.scheme)
    tables += [cross_table(tally, a, b, level) for a, b in itertools.pairwise(flow)]
    return tables


def share_bars(data: Dataset | Tally, facet: str, level: Level = LEAF) -> list[tuple[str, float]]:
    """(category name, % of the issues labelled in the facet) per category of the level: a
    category of the level is on the path of exactly the labels that count under it."""
    tally = _tally(data, level)
    scheme = tally.scheme.facet(facet)
    assert scheme is not None
    labelled = tally.issues(facet, "")
    return [
        (n.name, pct(tally.issues(facet, n.code), labelled) or 0.0)
        for n in scheme.units(at(level, facet))
    ]


def distributed_bars(
    data: Dataset | Tally, facet: str, level: Level = LEAF
) -> list[tuple[str, float]]:
    """(category name, % of its issues that are distributed-specific) per category."""
    tally = _tally(data, level)
    scheme = tally.scheme.facet(facet)
    assert scheme is not None
    return [
        (n.name, pct(tally.distributed(facet, n.code), tally.issues(facet, n.code)) or 0.0)
        for n in scheme.units(at(level, facet))
    ]
