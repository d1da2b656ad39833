"""The analysis's issue counts aggregated in the database (the fast path beside
`dataset.study_dataset`, which rebuilds every decided item's record in Python: 9 s at 100,000
items). The tables are then built from the counts by the same pure code (`analysis.Tally`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Count, Max
from django.utils import timezone

from annotator.adjudication.models import Decision
from annotator.figures import Figures, NotComputedYet, study_figures
from annotator.issues.models import Repository
from annotator.studies.models import Item, Study
from taxonomy_app.models import Category, Facet

from .analysis import DISTRIBUTED, DISTRIBUTED_YES, STAGE, Scheme, Tally, at, table_pairs, tally_of
from .rows import Codebook, filtered_items, load_codebook
from .sql import CountRequest, analysis_counts

# The counts are kept under what is counted and a fingerprint of everything they depend on
# (`study_tally_as_of`), so any such write reads them again: the timeout only bounds how long
# an entry nobody reads stays.
CACHE_SECONDS = 24 * 3600


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


def study_tally_as_of(
    study: Any,
    filters: dict[str, str],
    book: Codebook,
    scheme: Scheme,
    levels: dict[str, int | None],
    stage: str,
) -> tuple[Tally, Figures]:
    """The counts of the study's decided items passing the export filters (within the stage if
    one is given), equal to `tally_of` the records `study_dataset` builds (which SQLite, the
    demo, still counts), and when they were computed: in the request for a study of up to
    FIGURES_INLINE_MAX_ITEMS items, by a job above (annotator/figures.py), kept under
    `fingerprint` and what is counted (the items' query: study, filters, marked duplicates;
    facets, categories, stage). Raises NotComputedYet on a large study whose counts a job is
    computing for the first time."""
    if connection.vendor != "postgresql":
        from .dataset import study_dataset

        data = study_dataset(study, filters)
        tally = tally_of(data.in_stage(stage) if stage else data, levels)
        return tally, Figures(None, timezone.now())
    request = count_request(scheme, stage)
    sql, params = filtered_items(study, filters).values("pk").order_by().query.sql_with_params()
    counted = hashlib.sha256(repr((sql, params, request)).encode()).hexdigest()
    state = fingerprint(study.pk)
    figures = study_figures(
        f"analysis-counts:{study.pk}:{counted}",
        fingerprint=repr(state),
        items=state[0],
        compute="annotator.exports.aggregates.counts_of",
        params={"study_id": study.pk, "filters": filters, "stage": stage},
        timeout=CACHE_SECONDS,
    )
    if not figures.ready:
        raise NotComputedYet(figures)
    return _tally(figures.value, request, book, scheme, levels), figures


def counts_of(study_id: int, filters: dict[str, str], stage: str) -> list[tuple[Any, ...]]:
    """`sql.analysis_counts` of the study's items passing `filters` (within `stage`), computed
    in the request or by a job."""
    from .dataset import scheme_of  # dataset imports this module

    study = Study.objects.get(pk=study_id)
    request = count_request(scheme_of(load_codebook(study.codebook_version)), stage)
    return analysis_counts(items=filtered_items(study, filters), request=request)


def fingerprint(study_id: int) -> tuple[Any, ...]:
    """What every write the counts depend on changes, in two index or small-table reads: how
    many items the study has and its newest item id (items are only added or deleted; an
    item's round and issue, so its repository, never change), and how many decisions there
    are and the newest decision change, in every study (a scan of the decisions alone: joining
    them to the study's items cost three times as much). Every write of a decision's labels
    writes the decision too (adjudication/services/decisions.py sets `updated_at` with them, a
    decision made or deleted changes the count, the prior-label import makes new ones). A
    write in another study only counts these again. Codebook edits need no key: the counts
    are by category id, named from the codebook at each request (`_tally`)."""
    decisions = Decision.objects.order_by().aggregate(n=Count("pk"), at=Max("updated_at"))
    at = decisions["at"].isoformat() if decisions["at"] else ""
    return (*item_state(study_id), decisions["n"], at)


def item_state(study_id: int) -> tuple[int, int | None]:
    """How many items the study has and its newest item id, in one index-only read: what
    changes when items are added or deleted, the only way a study's items change."""
    state = Item.objects.filter(study_id=study_id).aggregate(n=Count("pk"), last=Max("pk"))
    return state["n"], state["last"]


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
