"""The analysis's issue counts aggregated in the database (the fast path beside
`dataset.study_dataset`, which rebuilds every decided item's record in Python: 9 s at 100,000
items). The tables are then built from the counts by the same pure code (`analysis.Tally`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection

from annotator.issues.models import Repository
from taxonomy_app.models import Category, Facet

from .analysis import DISTRIBUTED, DISTRIBUTED_YES, STAGE, Scheme, Tally, at, table_pairs, tally_of
from .rows import Codebook, filtered_items
from .sql import CountRequest, analysis_counts


def _category_ids(key: str, code: str) -> list[int]:
    """Every category (of any codebook version) of facet `key` with code `code`."""
    return list(Category.objects.filter(facet__key=key, code=code).values_list("pk", flat=True))


def count_request(scheme: Scheme, stage: str) -> CountRequest:
    """What `sql.analysis_counts` needs: the facets' ids by key, the cross-tables' facets, and
    the categories of "distributed-specific" and of the stage."""
    keys = scheme.keys()
    ids: dict[str, list[int]] = {k: [] for k in keys}
    for pk, key in Facet.objects.filter(key__in=keys).values_list("pk", "key"):
        ids[key].append(pk)
    return CountRequest(
        facets=[ids[k] for k in keys],
        multi=[f.multi for f in scheme.facets],
        pairs=[(keys.index(a), keys.index(b)) for a, b in table_pairs(scheme)],
        distributed=_category_ids(DISTRIBUTED, DISTRIBUTED_YES) if DISTRIBUTED in keys else [],
        stage=_category_ids(STAGE, stage) if stage else None,
    )


def study_tally(
    study: Any,
    filters: dict[str, str],
    book: Codebook,
    scheme: Scheme,
    levels: dict[str, int | None],
    stage: str,
) -> Tally:
    """The counts of the study's decided items passing the export filters (within the stage if
    one is given): equal to `tally_of` the records `study_dataset` builds, which SQLite (the
    demo) still counts."""
    if connection.vendor != "postgresql":
        from .dataset import study_dataset

        data = study_dataset(study, filters)
        return tally_of(data.in_stage(stage) if stage else data, levels)
    request = count_request(scheme, stage)
    rows = analysis_counts(items=filtered_items(study, filters), request=request)
    return _tally(rows, request, book, scheme, levels)


def _tally(
    rows: list[tuple[Any, ...]],
    request: CountRequest,
    book: Codebook,
    scheme: Scheme,
    levels: dict[str, int | None],
) -> Tally:
    keys, n = scheme.keys(), len(request.facets)
    names = _repository_names({r[1] for r in rows if r[1] is not None})
    tally = Tally(scheme, 0, dict(levels))
    for row in rows:
        grouping, repository, yes, chosen, count = row[0], row[1], row[2], row[3:-1], row[-1]
        present = [k for k in range(n) if chosen[k] is not None]
        if grouping == (1 << (n + 2)) - 1:  # every column left out: all the decided items
            tally.decided = count
        elif repository is not None:  # (repository, distributed, one facet)
            for k in present:
                for code in {"", *_on_path(scheme, book, keys[k], chosen[k])}:
                    tally.on_path[(keys[k], code, names[repository], bool(yes))] += count
        elif len(present) == 2:  # a cross-table's pair of facets, in the table's order
            i, j = next(p for p in request.pairs if set(p) == set(present))
            a, b = keys[i], keys[j]
            for unit_a in _units(scheme, book, a, chosen[i], at(levels, a)):
                for unit_b in _units(scheme, book, b, chosen[j], at(levels, b)):
                    tally.pairs[(a, unit_a, b, unit_b)] += count
    return tally


def _codes(book: Codebook, category_ids: int | Iterable[int]) -> set[str]:
    """The codes of a single-choice facet's category or a multi-choice facet's categories."""
    ids = [category_ids] if isinstance(category_ids, int) else category_ids
    return {book.category(pk)[1] for pk in ids}


def _on_path(
    scheme: Scheme, book: Codebook, key: str, category_ids: int | Iterable[int]
) -> set[str]:
    facet = scheme.facet(key)
    assert facet is not None
    return {c for code in _codes(book, category_ids) for c in facet.path(code)}


def _units(
    scheme: Scheme,
    book: Codebook,
    key: str,
    category_ids: int | Iterable[int],
    level: int | None,
) -> set[str]:
    facet = scheme.facet(key)
    assert facet is not None
    return {facet.unit(code, level) for code in _codes(book, category_ids)}


def _repository_names(ids: set[int]) -> dict[int, str]:
    rows = Repository.objects.filter(pk__in=ids).values_list("pk", "owner", "name")
    return {pk: f"{owner}/{name}" for pk, owner, name in rows}
