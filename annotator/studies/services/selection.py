"""Selecting issues into a study: filters, an optional seeded stratified sample, the record."""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping
from typing import Any

from django.db import connection, transaction
from django.db.models import Max

from annotator.issues.models import ISSUE_FILTERS, Issue, Repository

from .. import sampling, sql
from ..errors import StudyError
from ..models import Item, Round, Selection, Study
from .studies import item_quota


def clean_filters(filters: Mapping[str, Any]) -> dict[str, str]:
    """The known issue filters (ISSUE_FILTERS) that have a value, as strings."""
    return {
        key: str(filters[key]).strip()
        for key in ISSUE_FILTERS
        if filters.get(key) not in (None, "") and str(filters[key]).strip()
    }


def candidate_issues(
    *,
    study: Study,
    filters: Mapping[str, Any],
    round: Round | None = None,
    issue_ids: Collection[int] | None = None,
) -> list[tuple[int, str]]:
    """(issue id, repository OWNER/NAME) of the issues matching `filters` that are not in the
    study yet; with `round`, those not in that round (an issue may come back in a later round,
    e.g. a second calibration on items already labelled); with `issue_ids`, only those.
    Issues the study's owners marked a duplicate (and did not include anyway) are never
    candidates (annotator/similarity)."""
    from annotator.similarity.services import duplicate_issue_ids

    matching = Issue.objects.matching(clean_filters(filters))
    if issue_ids is not None:
        matching = matching.filter(pk__in=list(issue_ids))
    if duplicates := duplicate_issue_ids(study=study):
        matching = matching.exclude(pk__in=duplicates)
    if round is None:
        matching = matching.exclude(study_items__study=study)
    else:
        matching = matching.exclude(study_items__round=round)
    rows = list(matching.order_by().values_list("pk", "repository_id"))
    names = {r.pk: r.full_name for r in Repository.objects.filter(pk__in={r for _, r in rows})}
    return [(pk, names[repository]) for pk, repository in rows]


def preview_selection(*, study: Study, filters: Mapping[str, Any]) -> dict[str, int]:
    """How many new issues each repository would contribute (for the selection form)."""
    counts: dict[str, int] = {}
    for _, repository in candidate_issues(study=study, filters=filters):
        counts[repository] = counts.get(repository, 0) + 1
    return dict(sorted(counts.items()))


@transaction.atomic
def select_issues(
    *,
    study: Study,
    round: Round,
    filters: Mapping[str, Any],
    sample_size: int | None = None,
    seed: int | None = None,
    stratify: bool = True,
    user: Any = None,
    repeat_issues: bool = False,
    reliability_share: int | None = None,
    reliability_seed: int | None = None,
    issue_ids: Collection[int] | None = None,
    source: Mapping[str, Any] | None = None,
) -> Selection:
    """Add the issues matching `filters` to `round`, or a random sample of `sample_size` of them
    (proportionally stratified by repository unless `stratify` is false), and record the
    filters, counts and seed. Items are ordered by a shuffle seeded with the same seed. Issues
    already in the study are left out, unless `repeat_issues`: then only those already in
    `round`. A closed round takes no more issues.

    `reliability_share` (percent, main rounds): reliability on a sample. That share of the
    selected items, ⌈n·share/100⌉ drawn with `reliability_seed` (random when None) and
    stratified by repository, goes to k annotators; the other items to one annotator each,
    marked out of the reliability sample. The share, its seed and its strata are recorded.

    `issue_ids` restricts the candidates to those issues (the ones a screening round included)
    and `source` records where they came from (`Selection.source`)."""
    if round.study_id != study.pk:
        raise StudyError("field 'round': choose a round of this study")
    if sample_size is not None and sample_size < 1:
        raise StudyError("field 'sample_size': sample at least one issue, or leave it empty")
    _check_share(study, round, reliability_share)
    Study.objects.select_for_update().get(pk=study.pk)  # one selection at a time
    if Round.objects.select_for_update().filter(pk=round.pk, closed_at__isnull=False).exists():
        raise StudyError(f"field 'round': round {round.number} is closed; choose an open round")
    candidates = candidate_issues(
        study=study,
        filters=filters,
        round=round if repeat_issues else None,
        issue_ids=issue_ids,
    )
    seed = seed if seed is not None else secrets.randbelow(2**31)
    chosen, strata = _sample(candidates, sample_size, seed, stratify)
    single: set[int] = set()
    double: dict[str, dict[str, int]] = {}
    if reliability_share is not None:
        if reliability_seed is None:
            reliability_seed = secrets.randbelow(2**31)
        repository = dict(candidates)
        units = [(pk, repository[pk]) for pk in chosen]
        drawn = sampling.stratified_sample(
            units, sampling.share_size(len(units), reliability_share), reliability_seed
        )
        single = set(chosen) - set(drawn.ids)
        double = {
            name: {"items": counts["matched"], "double": counts["sampled"]}
            for name, counts in drawn.strata.items()
        }
    else:
        reliability_seed = None
    _add_items(study, round, chosen, seed, single)
    return Selection.objects.create(
        study=study,
        round=round,
        filters=clean_filters(filters),
        matched=len(candidates),
        sample_size=sample_size,
        seed=seed,
        stratified_by="repository" if stratify else "",
        strata=strata,
        sampled=len(chosen),
        added=len(chosen),
        repeat_issues=repeat_issues,
        reliability_share=reliability_share,
        reliability_seed=reliability_seed,
        reliability_strata=double,
        source=dict(source or {}),
        created_by=user,
    )


def _check_share(study: Study, round: Round, share: int | None) -> None:
    if share is None:
        return
    if not 1 <= share <= 99:
        raise StudyError(
            "field 'reliability_share': a share from 1 to 99 %, or empty for every item at k"
        )
    if round.kind != Round.Kind.MAIN:
        raise StudyError(
            f"field 'reliability_share': round {round.number} is a {round.kind} round, where "
            "every annotator labels every item; a reliability sample is for main rounds"
        )
    if study.overlap_k < 2:
        raise StudyError(
            "field 'reliability_share': the study's k is 1, so no item is labelled twice; "
            "set k to 2 or more for a reliability sample"
        )


def _sample(
    candidates: list[tuple[int, str]], size: int | None, seed: int, stratify: bool
) -> tuple[list[int], dict[str, dict[str, int]]]:
    if size is None:
        ids = sorted(pk for pk, _ in candidates)
    elif stratify:
        ids = sampling.stratified_sample(candidates, size, seed).ids
    else:
        ids = sampling.simple_sample([pk for pk, _ in candidates], size, seed)
    chosen = set(ids)
    strata: dict[str, dict[str, int]] = {}
    for pk, name in sorted(candidates, key=lambda c: c[1]):
        counts = strata.setdefault(name, {"matched": 0, "sampled": 0})
        counts["matched"] += 1
        counts["sampled"] += pk in chosen
    return ids, strata


def _add_items(
    study: Study, round: Round, issue_ids: list[int], seed: int, single: set[int]
) -> None:
    """The issues as items of `round` in a seeded order; those in `single` (left out of a
    reliability sample) at quota 1."""
    start = (Item.objects.filter(round=round).aggregate(n=Max("position"))["n"] or 0) + 1
    quota = item_quota(study, round)
    stage = 0 if round.kind in Round.EVERY_ANNOTATOR else 1
    Item.objects.bulk_create(
        Item(
            study=study,
            round=round,
            issue_id=pk,
            position=start + i,
            quota=1 if pk in single else quota,
            reliability_sample=pk not in single,
            stage=stage,
        )
        for i, pk in enumerate(sampling.shuffled(issue_ids, seed))
    )
    if issue_ids and connection.vendor == "postgresql":
        # Fresh statistics, so that "next item" uses the pool index at once. With the estimate
        # of an empty table, PostgreSQL sorted every item of the study on each request
        # (6 ms at 3,000 items, 0.05 ms with the index) until autovacuum came by.
        transaction.on_commit(sql.analyze_items, robust=True)
