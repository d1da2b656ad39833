# ruff: noqa: RUF002, RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""Diagnostics behind a headline coefficient (pure; no Django).

Which categories are confused, at which level of a hierarchy agreement holds, which annotator
pair or which annotator pulls agreement down, and how prevalent each category is.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ._distance import ancestor_path
from ._result import AgreementResult, _jsonable
from ._table import MISSING, Pairable, RatingTable, encode, pairable

Categories = Iterable[Hashable] | None


@dataclass(frozen=True)
class LabelledMatrix:
    """A square matrix over labels (coincidences, confusions, a pairwise κ table)."""

    kind: str
    labels: list[Any]
    cells: list[list[Any]]
    note: str = ""
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))  # type: ignore[no-any-return]


def per_category_alpha(
    table: Any, *, categories: Categories = None
) -> dict[Hashable, AgreementResult]:
    """Binary one-vs-rest nominal α for each category (label present in the rating or not).

    For a multi-label facet each label is its own yes/no variable; for a single-label facet
    "rated c" against "rated anything else". A category nobody used is undefined (no variation).
    """
    from .stats import alpha_on

    coded = encode(table, categories)
    pair = pairable(coded)  # packed once: a label's yes/no keeps the same pairable units
    has = coded.label_indicator().astype(np.int64)
    out: dict[Hashable, AgreementResult] = {}
    for j, label in enumerate(coded.labels):
        codes = np.where(coded.codes >= 0, has[np.maximum(coded.codes, 0), j], MISSING)
        values = np.where(pair.values >= 0, has[np.maximum(pair.values, 0), j], MISSING)
        binary = Pairable(values, pair.m, pair.n_rows, pair.n_pairable)
        out[label] = alpha_on(coded.with_codes(codes, (0, 1)), binary)
    return out


def hierarchy_alpha(
    table: Any, *, parent: Mapping[Hashable, Hashable | None], categories: Categories = None
) -> list[tuple[int, AgreementResult]]:
    """Nominal α at each depth of a hierarchy: labels projected to their ancestor at that depth.

    Depth 0 is the roots. A label shallower than the depth stays itself. Label sets project
    element-wise (a set of ancestors). Returns [(depth, result)] from the roots down.
    """
    from .stats import krippendorff_alpha

    return [
        (d, krippendorff_alpha(level))
        for d, level, _ in hierarchy_levels(table, parent, categories)
    ]


def hierarchy_ac1(
    table: Any, *, parent: Mapping[Hashable, Hashable | None], categories: Categories = None
) -> list[tuple[int, AgreementResult]]:
    """Gwet's AC1 at each depth, q the categories of that level (`hierarchy_q`)."""
    from .stats import gwet_ac1

    coded = encode(table, categories)
    out = []
    for d, level, leaves in hierarchy_levels(coded, parent):
        # Label sets: q is the distinct (projected) sets compared, as for the whole facet.
        q = hierarchy_q(level, () if coded.multilabel else leaves)
        out.append((d, gwet_ac1(level, q=q)))
    return out


def hierarchy_levels(
    table: Any, parent: Mapping[Hashable, Hashable | None], categories: Categories = None
) -> list[tuple[int, RatingTable, set[Hashable]]]:
    """[(depth, the table projected to that depth, the leaves projected to it)], roots first.

    The projected leaves are the categories of that level: a rating at depth d names one of
    them unless a rater stopped at a coarser node.
    """
    coded = encode(table, categories)
    paths = {label: ancestor_path(parent, label) for label in coded.labels}
    depth = max((len(p) for p in paths.values()), default=1)
    leaves = hierarchy_leaves(coded.labels, parent)
    levels = []
    for d in range(depth):
        up = {label: path[min(d, len(path) - 1)] for label, path in paths.items()}
        project = _project_sets(up) if coded.multilabel else up.__getitem__
        projected = [project(v) for v in coded.values]
        target = list(dict.fromkeys(projected))
        index = {v: i for i, v in enumerate(target)}
        remap = np.array([index[v] for v in projected], dtype=np.int64)
        codes = np.where(coded.codes >= 0, remap[np.maximum(coded.codes, 0)], MISSING)
        # Projected label sets are compared as whole values (exact-set nominal), as before.
        level = coded.with_codes(codes, target)
        levels.append((d, level, {up[leaf] for leaf in leaves}))
    return levels


def hierarchy_leaves(
    labels: Iterable[Hashable], parent: Mapping[Hashable, Hashable | None]
) -> list[Hashable]:
    """The labels no other label names as its parent."""
    labels = list(labels)
    inner = {parent.get(label) for label in labels}
    return [label for label in labels if label not in inner]


def hierarchy_q(table: Any, leaves: Iterable[Hashable], *, categories: Categories = None) -> int:
    """AC1's q on a hierarchical single-label facet: the categories of the level compared
    (`leaves`: the leaves, or their ancestors at a coarser level) and any other value actually
    given among the pairable ratings (a group chosen where the codebook allows it).

    Inner nodes a rater cannot choose at that level are not categories of the rating scale
    Gwet's q counts (Gwet 2008; Handbook 2014, ch. 2: the number of categories); counting them
    adds to q − 1 and lowers p_e, lifting AC1 for nothing the raters could have said.
    """
    coded = encode(table, categories)
    pair = pairable(coded)
    used = {coded.values[int(c)] for c in np.unique(pair.values[pair.values >= 0])}
    return len(set(leaves) | used)


def _project_sets(up: Mapping[Hashable, Hashable]) -> Any:
    return lambda value: frozenset(up[label] for label in value)


def pairwise_cohen(
    table: Any,
    *,
    categories: Categories = None,
    weights: str | None = None,
    raters: list[Hashable] | None = None,
) -> LabelledMatrix:
    """Cohen's κ for every pair of identifiable raters (columns); None on the diagonal and
    where a pair shares fewer than 2 units or κ is undefined.

    `pairs` holds one entry per pair i < j (with at least one unit in common): the rater
    indexes and names, n (units both rated), p_o and p_e, κ, its jackknife SE and 95% CI, and
    why κ is undefined when it is.
    """
    from .stats import cohen_kappa

    coded = encode(table, categories, raters)
    names = list(raters) if raters is not None else list(coded.raters)
    k = coded.n_raters
    cells: list[list[Any]] = [[None] * k for _ in range(k)]
    pairs = []
    for i in range(k):
        for j in range(i + 1, k):
            sub = coded.columns([i, j])
            n = int(((sub.codes >= 0).all(axis=1)).sum())
            if n == 0:
                continue
            result = cohen_kappa(sub, weights=weights)
            if n >= 2:
                cells[i][j] = cells[j][i] = result.value
            pairs.append(_pair_entry(i, j, names, n, result))
    return LabelledMatrix("pairwise_cohen_kappa", _jsonable(names), cells, pairs=pairs)


def _pair_entry(
    i: int, j: int, names: list[Hashable], n: int, result: AgreementResult
) -> dict[str, Any]:
    return {
        "i": i,
        "j": j,
        "raters": _jsonable([names[i], names[j]]),
        "n": n,
        "p_o": result.p_o,
        "p_e": result.p_e,
        "kappa": result.value,
        "se": result.se,
        "ci": _jsonable(result.ci),
        "undefined_reason": result.undefined_reason,
    }


def rater_vs_others(
    table: Any, *, categories: Categories = None, raters: list[Hashable] | None = None
) -> list[dict[str, Any]]:
    """Each rater against the others: units shared, p_o with the others, α without them.

    p_o is the share of (this rater, other rater) rating pairs in the same unit that agree;
    `alpha_without` is nominal α with this rater's column dropped, beside `alpha_all`.
    """
    from .stats import krippendorff_alpha

    coded = encode(table, categories, raters)
    codes = coded.codes
    present = codes >= 0
    alpha_all = krippendorff_alpha(coded).value
    out = []
    for j, name in enumerate(coded.raters):
        others = np.delete(codes, j, axis=1)
        mine = codes[:, [j]]
        pairs = (others >= 0) & present[:, [j]]
        agree = int(((others == mine) & pairs).sum())
        n_pairs = int(pairs.sum())
        without = coded.columns([c for c in range(coded.n_raters) if c != j])
        out.append(
            {
                "rater": _jsonable(name),
                "units_shared": int(pairs.any(axis=1).sum()),
                "pairs": n_pairs,
                "p_o": agree / n_pairs if n_pairs else None,
                "alpha_all": alpha_all,
                "alpha_without": krippendorff_alpha(without).value,
            }
        )
    return out


def coincidence_matrix(table: Any, *, categories: Categories = None) -> LabelledMatrix:
    """Krippendorff's coincidence matrix o_ck over pairable units (rows sum to n_c)."""
    from ._alpha import AlphaModel

    coded = encode(table, categories)
    model = AlphaModel(pairable(coded), len(coded.values), None, False)
    cells = model.coincidences().tolist()
    return LabelledMatrix("coincidence", [_jsonable(v) for v in coded.values], cells)


def confusion_matrix(table: Any, *, categories: Categories = None) -> LabelledMatrix:
    """Who-said-what counts per pair of values.

    Two columns: the cross-tabulation, rows the first rater, columns the second. More: counts
    of unordered pairs of ratings within a unit, symmetric, the diagonal the agreeing pairs.
    """
    coded = encode(table, categories)
    v = len(coded.values)
    counts = np.zeros((v, v), dtype=np.int64)
    pair = pairable(coded)
    if coded.n_raters == 2:
        both = (coded.codes >= 0).all(axis=1)
        np.add.at(counts, (coded.codes[both, 0], coded.codes[both, 1]), 1)
        kind, note = "crosstab", "rows: first rater; columns: second rater"
    else:
        for _units, a, b in pair.column_pairs():
            np.add.at(counts, (a, b), 1)
        counts = counts + counts.T - np.diag(np.diag(counts))
        kind, note = "pairs", "unordered pairs of ratings within a unit; symmetric"
    return LabelledMatrix(kind, [_jsonable(x) for x in coded.values], counts.tolist(), note)


def units_with_pair(
    table: Any, a: Hashable, b: Hashable, *, categories: Categories = None
) -> list[int]:
    """Row indices of the units where one rating is `a` and another `b` (a confusion cell)."""
    coded = encode(table, categories)
    index = {v: i for i, v in enumerate(coded.values)}
    key_a = frozenset(a) if isinstance(a, set) else a
    key_b = frozenset(b) if isinstance(b, set) else b
    if key_a not in index or key_b not in index:
        return []
    count_a = (coded.codes == index[key_a]).sum(axis=1)
    count_b = (coded.codes == index[key_b]).sum(axis=1)
    hit = (count_a >= 2) if key_a == key_b else (count_a >= 1) & (count_b >= 1)
    return [int(u) for u in np.flatnonzero(hit)]


def category_prevalence(table: Any, *, categories: Categories = None) -> list[dict[str, Any]]:
    """For each category (label): ratings carrying it and their share, over all ratings and
    over pairable ratings (the population the coefficients use)."""
    coded = encode(table, categories)
    has = coded.label_indicator()
    present = coded.codes >= 0
    pairable_rows = present.sum(axis=1) >= 2
    all_codes = coded.codes[present]
    pair_codes = coded.codes[present & pairable_rows[:, None]]
    n_all, n_pair = max(len(all_codes), 1), max(len(pair_codes), 1)
    per_all = np.bincount(all_codes, minlength=len(coded.values)) @ has
    per_pair = np.bincount(pair_codes, minlength=len(coded.values)) @ has
    return [
        {
            "category": _jsonable(label),
            "ratings": int(per_all[j]),
            "share": float(per_all[j]) / n_all,
            "pairable_ratings": int(per_pair[j]),
            "pairable_share": float(per_pair[j]) / n_pair,
        }
        for j, label in enumerate(coded.labels)
    ]
