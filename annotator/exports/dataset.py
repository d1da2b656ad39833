"""The agreed dataset as the analysis reads it, and the records the methods paragraph cites
(the Django side of `analysis.py` and `methods.py`).

The analysis counts the rows the final-dataset export writes: `rows.final_rows` over the same
filtered items, turned into `analysis.Record`s, so a table and a crosstab of the exported file
agree cell for cell (tests/exports/test_analysis_matches_export.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, OuterRef, QuerySet

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.agreement.models import AgreementRun
from annotator.figures import Figures, study_figures
from annotator.issues.filter_text import filter_names, readable_filters
from annotator.issues.models import Repository
from annotator.studies.models import Annotation, Item, Membership, Selection, Study

from .aggregates import CACHE_SECONDS, item_state, study_tally_as_of
from .analysis import (
    Dataset,
    FacetScheme,
    Node,
    Scheme,
    Table,
    Tally,
    analysis_tables,
    check_stage,
    flow_facets,
    flow_links,
    parse_levels,
    record_from_export_row,
    tree_order,
)
from .methods import (
    AgreementFacts,
    FacetFacts,
    MethodsFacts,
    RoundFacts,
    ScreeningFacts,
    SelectionFacts,
    agreement_facts,
)
from .rows import FILTER_KEYS as ANALYSIS_FILTERS
from .rows import Codebook, filtered_items, final_rows, load_codebook


def scheme_of(book: Codebook) -> Scheme:
    """Each facet's categories in codebook order, as a tree."""
    by_facet: dict[str, list[Node]] = {}
    for pk in sorted(book.categories, key=lambda c: book.order[c]):
        key, code, path = book.categories[pk]
        by_facet.setdefault(key, []).append(Node(code, book.names[key].get(code, code), path))
    facets = tuple(
        FacetScheme(f.key, f.name, f.kind == "multi", tree_order(by_facet.get(f.key, [])))
        for f in book.facets
    )
    return Scheme(facets)


def study_dataset(study: Study, filters: dict[str, Any] | None = None) -> Dataset:
    """The study's decided items passing the export filters (round, source, screening,
    repository), with their final labels."""
    items = filtered_items(study, dict(filters or {}))
    book = load_codebook(study.codebook_version)
    scheme = scheme_of(book)
    records = (record_from_export_row(row, scheme) for row in final_rows(items, book))
    return Dataset(scheme, [r for r in records if r is not None])


def study_repositories(study: Study) -> list[str] | None:
    """The `owner/name` of every repository the study's items are from, by name, for the
    analysis's repository filter: figures of the study as its items stand (their count and
    newest id, one index-only query; an issue never changes repository and items are only
    added or deleted). Listing them joins every item to its issue (250 ms at 200,000 items),
    so a large study's list is a job's, the last one served meanwhile (annotator/figures.py):
    None until the first is computed, without a repository added since until the next."""
    items, last = item_state(study.pk)
    figures = study_figures(
        f"analysis-repositories:{study.pk}",
        fingerprint=f"{items}:{last}",
        items=items,
        compute="annotator.exports.dataset.repositories_of",
        params={"study_id": study.pk},
        timeout=CACHE_SECONDS,
    )
    return None if figures.value is None else list(figures.value)


def repositories_of(study_id: int) -> list[str]:
    """`study_repositories`' list, computed in the request or by a job."""
    repositories = (
        Repository.objects.filter(issues__study_items__study_id=study_id)
        .distinct()
        .order_by("owner", "name")
    )
    return [r.full_name for r in repositories]


def decided_items_with(
    study: Study, filters: dict[str, Any], labels: Iterable[tuple[str, str]]
) -> QuerySet[Item]:
    """The decided items passing the export filters (`repository` as the records name it:
    `owner/name`) whose final labels name, or lie under, every (facet, code) given: the items
    `study_dataset(...).items_with(labels, repository)` lists, as one query."""
    repository = str(filters.get("repository") or "")
    others = {k: v for k, v in filters.items() if k != "repository"}
    items = filtered_items(study, others).filter(decision__isnull=False)
    if repository:
        owner, _, name = repository.partition("/")
        items = items.filter(issue__repository__owner=owner, issue__repository__name=name)
    scheme = scheme_of(load_codebook(study.codebook_version))
    for facet, code in labels:
        found = scheme.facet(facet)
        if found is None:
            return items.none()
        codes = {code} | {n.code for n in found.nodes if code in found.path(n.code)}
        chosen = DecisionLabel.objects.filter(
            decision__item=OuterRef("pk"), category__facet__key=facet, category__code__in=codes
        )
        items = items.filter(Exists(chosen))
    return items


def _selections(study: Study) -> list[SelectionFacts]:
    selections = list(Selection.objects.filter(study=study).select_related("round"))
    names = filter_names(s.filters for s in selections)
    return [
        SelectionFacts(
            round=s.round.number,
            filters=readable_filters(s.filters, names),
            matched=s.matched,
            sample_size=s.sample_size,
            seed=s.seed,
            stratified=bool(s.stratified_by),
            sampled=s.sampled,
            added=s.added,
            strata=s.strata or {},
        )
        for s in selections
    ]


def _facets(scheme: Scheme) -> list[FacetFacts]:
    return [
        FacetFacts(f.name, f.multi, len(f.nodes), len(f.leaves()), f.levels) for f in scheme.facets
    ]


def _agreement(study: Study) -> list[AgreementFacts]:
    """The latest succeeded run of each round (and of all rounds), by round number."""
    runs = (
        AgreementRun.objects.filter(study=study, status=AgreementRun.Status.SUCCEEDED)
        .exclude(result=None)
        .select_related("round")
        .order_by("-finished_at", "-pk")
    )
    latest: dict[int | None, dict[str, Any]] = {}
    for run in runs:
        number = run.round.number if run.round else None
        if number not in latest and run.result:
            latest[number] = run.result
    order = sorted(latest, key=lambda n: (n is None, n or 0))
    return [agreement_facts(latest[n], n) for n in order]


def methods_facts(study: Study) -> MethodsFacts:
    """What the methods paragraph says, read from the study's records."""
    book = load_codebook(study.codebook_version)
    version = study.codebook_version
    items = Item.objects.filter(study=study)
    rounds = [
        RoundFacts(r.number, r.kind, r.n_items)
        for r in study.rounds.annotate(n_items=Count("items")).order_by("number")
    ]
    submitting = (
        Annotation.objects.filter(assignment__item__study=study, status=Annotation.Status.SUBMITTED)
        .values("assignment__annotator")
        .distinct()
        .count()
    )
    decisions = Decision.objects.filter(item__study=study)
    sources = dict(decisions.values_list("source").annotate(n=Count("pk")).order_by("source"))
    reason_labels = dict(Decision.Reason.choices)
    reasons = {
        str(reason_labels.get(r, r)): n
        for r, n in decisions.filter(source=Decision.Source.ADJUDICATED)
        .values_list("reason")
        .annotate(n=Count("pk"))
        .order_by("-n", "reason")
    }
    return MethodsFacts(
        study=study.name,
        codebook=version.codebook.name,
        version=version.number,
        facets=_facets(scheme_of(book)),
        k=study.overlap_k,
        annotators=submitting,
        members=study.memberships.filter(role=Membership.Role.ANNOTATOR).count(),
        selections=_selections(study),
        rounds=rounds,
        agreement=_agreement(study),
        items=items.count(),
        decisions=sources,
        reasons=reasons,
        screening=_screening(study),
    )


def _screening(study: Study) -> list[ScreeningFacts]:
    """Each screening round's plan and counts, as its stopping panel has them."""
    from annotator.screening.models import ScreeningPlan
    from annotator.screening.panel import screening_panel

    out = []
    plans = ScreeningPlan.objects.filter(round__study=study).select_related(
        "round", "relevant_category__facet"
    )
    for plan in plans.order_by("round__number"):
        panel = screening_panel(plan)
        out.append(
            ScreeningFacts(
                round=plan.round.number,
                prioritised=plan.prioritised,
                model=plan.model,
                retrain_every=plan.retrain_every,
                seed=plan.seed,
                target=plan.target_recall,
                alpha=plan.alpha,
                declared=f"{plan.declared_at:%Y-%m-%d}",
                candidates=panel.prisma.candidates,
                duplicates_removed=panel.prisma.duplicates_removed,
                screened=panel.prisma.screened,
                audited=panel.prisma.audited,
                included=panel.prisma.included,
                verdict=panel.verdict,
            )
        )
    return out


@dataclass
class Analysis:
    """One request's analysis: the filters, stage and levels it was asked for and its tables."""

    study: Study
    filters: dict[str, str]
    stage: str
    levels: dict[str, int | None]
    tally: Tally  # the counts of the decided items passing the filters (within the stage)
    tables: list[Table]
    flow_columns: list[str]
    figures: Figures  # when the counts were computed (annotator/figures.py)

    @property
    def scheme(self) -> Scheme:
        return self.tally.scheme

    @property
    def decided(self) -> int:
        """Decided items counted (within the stage, if one is given)."""
        return self.tally.decided

    def flow_links(self) -> list[tuple[int, str, str, int]]:
        return flow_links(self.tally, self.flow_columns, self.levels)


def run_analysis(study: Study, query: Mapping[str, str]) -> Analysis:
    """The analysis a page or API query asks for: export filters (round, source, screening,
    repository), `stage` and `level` / `level-<facet>`. Raises ExportFilterError or
    AnalysisParameterError naming the parameter, NotComputedYet while a job computes a large
    study's counts for the first time. The counts are aggregated in the database
    (`aggregates.study_tally_as_of`), not read from every item's record."""
    filters = {
        k: str(query[k]).strip() for k in ANALYSIS_FILTERS if str(query.get(k) or "").strip()
    }
    filtered_items(study, filters)  # checks the filters first, as the export does
    book = load_codebook(study.codebook_version)
    scheme = scheme_of(book)
    levels = parse_levels(query, scheme)
    stage = check_stage(query.get("stage"), scheme)
    tally, figures = study_tally_as_of(study, filters, book, scheme, levels, stage)
    tables = analysis_tables(tally, levels)
    return Analysis(study, filters, stage, levels, tally, tables, flow_facets(scheme), figures)
