"""What the dataset card says, read from the study's records (the Django side of `card.py`).

Called inside the export's transaction, so its counts match the rows written. A few aggregate
queries per export, none per item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.db.models import Count, QuerySet
from django.utils import timezone

from annotator.adjudication.models import AdjudicationSettings, Decision
from annotator.agreement import headline
from annotator.agreement.labels import load_label_table
from annotator.agreement.models import AgreementRun
from annotator.agreement.stats import RatingTable
from annotator.agreement.summary import coefficient_dicts, conventions
from annotator.issues.filter_text import filter_names, filters_in_words
from annotator.similarity.marks import left_out_summary
from annotator.studies.models import Annotation, Item, Membership, Round, Study
from taxonomy_app.services.rules import rule_texts, version_facet_infos, version_rules

from . import writers
from .card import (
    AgreementFigure,
    AgreementSource,
    ExportScope,
    StudyDesign,
    screening_section,
)
from .columns import Column
from .models import ExportJob
from .rows import Codebook

Scope = ExportJob.Scope
# Coefficients the card shows per facet, in order, after the headline.
CARD_COEFFICIENTS = ("fleiss_kappa", "gwet_ac1", "percent_agreement")


def build_card(
    *,
    study: Study,
    items: QuerySet[Item],
    book: Codebook,
    tables: dict[str, list[Column]],
    filters: dict[str, Any] | None = None,
    scope: str = Scope.ALL,
    passing: int | None = None,
    exported_at: datetime | None = None,
) -> str:
    """The Markdown card: codebook version, selections, scope, counts, the agreement figures
    (pairable n, interval method, AC1's q, what they cover), the design (annotators, k, the
    adjudication rule, decisions by source), label rules, what a prior import left out, the
    column dictionary and the category names."""
    version = study.codebook_version
    selections = list(study.selections.select_related("round").order_by("created_at", "pk"))
    names = filter_names(s.filters for s in selections)
    for selection in selections:
        selection.__dict__["_filter_names"] = names  # the cached_property: one query for all
    exported = items.count()
    decided = items.filter(decision__isnull=False).count()
    duplicates = left_out_summary(study=study)
    counts = {
        "issues matched by the selections": sum(s.matched for s in selections),
        "issues left out as near-duplicates": duplicates["left_out"],
        "issues sampled": sum(s.sampled for s in selections),
        "items in the study": study.items.count(),
        "items exported": exported,
        "items with a decision": decided,
        "submitted annotations": _submitted(items).count(),
    }
    active = {k: v for k, v in (filters or {}).items() if v not in (None, "")}
    title = f"{study.name}: dataset" + (f" ({_describe(active)})" if active else "")
    run = latest_run(study, active)
    figures, source = agreement_for(run, study, items, exported)
    card = writers.dataset_card(
        title=title,
        codebook_name=version.codebook.name,
        codebook_version=version.number,
        selection_query=" ; ".join(s.method_text for s in selections),
        counts=counts,
        agreement=figures,
        agreement_source=source,
        exported_at=exported_at or timezone.now(),
        tables=tables,
        categories=book.names,
        scope=ExportScope(
            decided_only=scope == Scope.DECIDED,
            passing=exported if passing is None else passing,
            decided=decided,
        ),
        design=study_design(study, items),
        rules=label_rules(study),
        left_out=prior_left_out_lines(items),
        headline=headline_card_lines(study, run),
        duplicates=[f"{d['issue']} duplicates {d['duplicate_of']}" for d in duplicates["issues"]],
    )
    return card + screening_markdown(study) + llm_use_markdown(items, run)


def screening_markdown(study: Study) -> str:
    """The card's "Screening" section (annotator/exports/card.py), "" when the study had no
    screening round: the figures of each round's stopping panel, as the methods text has them."""
    from .dataset import _screening

    return screening_section(_screening(study))


def llm_use_markdown(items: QuerySet[Item], run: AgreementRun | None) -> str:
    """The card's "LLM use" section (annotator/exports/card_llm.py), "" when no machine rater
    labelled the exported items."""
    from annotator.machine.provenance import llm_use

    from .card_llm import llm_use_section

    return llm_use_section(llm_use(items, run))


def headline_card_lines(study: Study, run: AgreementRun | None) -> list[str] | None:
    """The study's declared headline, its changes, and the declared coefficient of each
    declared facet in the card's run (whole-run figures, judged on the interval's lower
    bound); None when nothing was declared."""
    declared = headline.declarations(study)
    if not declared:
        return None
    lines = headline.history_lines(declared)
    for figure in headline.figures(declared[-1], run):
        if figure.value is None:
            lines.append(f"{figure.facet}: undefined or not in the run")
            continue
        interval = f", 95% CI {figure.ci[0]:.3f}–{figure.ci[1]:.3f}" if figure.ci else ""  # noqa: RUF001
        lines.append(
            f"{figure.facet}: {figure.value:.3f}{interval}, n = {figure.n}; "
            f"{figure.judgement} (lower bound ≥ {declared[-1].threshold:g})"
        )
    return lines


def _describe(filters: dict[str, Any]) -> str:
    return filters_in_words(filters, quote=False, separator=", ")


def _submitted(items: QuerySet[Item]) -> QuerySet[Annotation]:
    return Annotation.objects.filter(
        assignment__item__in=items.values("pk"), status=Annotation.Status.SUBMITTED
    )


def latest_run(study: Study, filters: Mapping[str, Any]) -> AgreementRun | None:
    """The latest succeeded run of the round filtered on, else of all rounds, else of any."""
    runs = AgreementRun.objects.succeeded().filter(study=study).select_related("round")
    runs = runs.order_by("-created_at", "-pk")
    if filters.get("round") not in (None, ""):
        return runs.filter(round__number=int(filters["round"])).first()
    return runs.filter(round__isnull=True).first() or runs.first()


def agreement_for(
    run: AgreementRun | None, study: Study, items: QuerySet[Item], exported: int
) -> tuple[list[AgreementFigure], AgreementSource | None]:
    """The card's agreement: the run's stored figures when it covers exactly the exported
    items, else the same coefficients computed now on the exported items' ratings."""
    if run is None or not run.result:
        return [], None
    scope = Item.objects.filter(study=study)
    if run.round_id is not None:
        scope = scope.filter(round_id=run.round_id)
    outside = run.round_id is not None and items.exclude(round_id=run.round_id).exists()
    if not outside and scope.count() == exported:  # exactly the run's items
        return agreement_figures(run), agreement_source(run, exported)
    return subset_figures(run, study, items), subset_source(run, exported)


def subset_figures(run: AgreementRun, study: Study, items: QuerySet[Item]) -> list[AgreementFigure]:
    """Per facet of the run, its coefficients on the exported items' rows of the run's
    units x raters table (current submitted labels, the run's codebook version and facets)."""
    table = load_label_table(
        study_id=study.pk,
        version=run.codebook_version,
        round_id=None,  # the exported items may lie in several rounds
        facet_keys=run.facets,
    )
    keep = np.fromiter(items.values_list("pk", flat=True), dtype=np.int64)
    figures = []
    for facet in table.facets:
        rows = facet.table.codes[np.isin(facet.items, keep)]
        headline, coefficients = coefficient_dicts(_rows(facet.table, rows), facet.parent)
        units = coefficients["krippendorff_alpha"]["n_units"]
        shown = [headline, *(c for c in CARD_COEFFICIENTS if c != headline)]
        figures += [_figure(facet.key, n, coefficients[n], units) for n in shown]
    return figures


def _rows(table: RatingTable, codes: Any) -> RatingTable:
    return RatingTable(
        codes, table.values, table.labels, table.declared, table.multilabel, table.raters
    )


def subset_source(run: AgreementRun, exported: int) -> AgreementSource:
    where = f"round {run.round.number}" if run.round else "all rounds"
    return AgreementSource(
        run=(
            f"computed for this export from the current submitted labels of the {exported} "
            f"exported items, with the codebook version and facets of agreement run {run.pk} "
            f"({where})"
        ),
        covers=f"the exported items only ({exported}), not the whole study",
        interval=conventions()["interval"],
    )


def agreement_figures(run: AgreementRun | None) -> list[AgreementFigure]:
    """Per facet of the run's stored result: the headline and Fleiss' κ, AC1 (with its q and
    q rule) and p_o, each with the pairable units it used."""
    figures = []
    for facet in (run.result or {}).get("facets", []) if run else []:
        units = facet.get("design", {}).get("units")
        shown = [facet["headline"], *(c for c in CARD_COEFFICIENTS if c != facet["headline"])]
        for name in shown:
            coefficient = facet["coefficients"].get(name)
            if coefficient is not None:
                figures.append(_figure(facet["key"], name, coefficient, units))
    return figures


def _figure(facet: str, name: str, coefficient: Mapping[str, Any], units: Any) -> AgreementFigure:
    ci = coefficient.get("ci") or (None, None)
    note = ""
    if name == "gwet_ac1":
        rule = (coefficient.get("extra") or {}).get("q_rule")
        note = f"q = {coefficient.get('q')}" + (f": {rule}" if rule else "")
    return AgreementFigure(
        facet=facet,
        coefficient=name,
        value=coefficient.get("value"),
        ci_low=ci[0],
        ci_high=ci[1],
        units=units,
        pairable_units=coefficient.get("n_pairable_units"),
        note=note,
    )


def agreement_source(run: AgreementRun, exported: int) -> AgreementSource:
    """Which run the figures are; they cover the exported items (the run's whole scope)."""
    where = f"round {run.round.number}" if run.round else "all rounds"
    finished = run.finished_at or run.created_at
    described = f"agreement run {run.pk} of {where}, computed {finished:%Y-%m-%dT%H:%M:%SZ}"
    covers = f"the exported items ({where} of the study: {exported} items)"
    interval = ((run.result or {}).get("conventions") or {}).get("interval")
    return AgreementSource(run=described, covers=covers, interval=interval)


ADJUDICATION = (
    "an item is decided automatically when every annotator gave the same labels on every "
    "facet (unanimous)"
)


def adjudication_rule(study: Study) -> str:
    """The study's decision rules in words."""
    settings = AdjudicationSettings.objects.filter(study=study).first()
    parts = [ADJUDICATION]
    if settings is not None and settings.majority_rule:
        parts.append("or, with k ≥ 3, when more than half agree on every facet (majority)")
    text = " ".join(parts) + "; otherwise an adjudicator decides and records a reason"
    if study.route_unsure_to_adjudication:
        text += "; an item where an annotator marked a facet unsure goes to an adjudicator"
    return text + ". Imported decisions come from the prior round's Final sheet."


def study_design(study: Study, items: QuerySet[Item]) -> StudyDesign:
    decisions = Decision.objects.filter(item__in=items.values("pk"))
    sources = dict(decisions.values_list("source").annotate(n=Count("pk")).order_by("source"))
    labels = dict(Decision.Reason.choices)
    reasons = {
        str(labels.get(r, r)): n
        for r, n in decisions.exclude(reason="")
        .values_list("reason")
        .annotate(n=Count("pk"))
        .order_by("-n", "reason")
    }
    return StudyDesign(
        annotators=_submitted(items).values("assignment__annotator").distinct().count(),
        members=study.memberships.filter(role=Membership.Role.ANNOTATOR).count(),
        k=study.overlap_k,
        adjudication_rule=adjudication_rule(study),
        decisions=sources,
        reasons=reasons,
    )


def label_rules(study: Study) -> dict[str, Sequence[str]]:
    """Facet name → the codebook version's label rules of it, in words."""
    version = study.codebook_version
    infos = version_facet_infos(version)
    texts = rule_texts(version_rules(version), infos)
    return {infos[key].name: texts[key] for key in infos}


def prior_left_out_lines(items: QuerySet[Item]) -> list[str]:
    """What the prior-label import of each exported round left out (`Round.prior_import`,
    annotator/exports/prior.py import_record): values mapped to ignore or propose, per facet,
    with the ratings left empty; rows skipped; Final-only keys."""
    rounds = Round.objects.filter(pk__in=items.values("round_id")).exclude(prior_import={})
    lines: list[str] = []
    for number, record in rounds.order_by("number").values_list("number", "prior_import"):
        lines += _round_left_out(number, record or {})
    return lines


def _round_left_out(number: int, record: Mapping[str, Any]) -> list[str]:
    lines = []
    for facet, entry in (record.get("left_out") or {}).items():
        values = ", ".join(
            f"{v['value']!r} ({v['mapped_to']}, {v['cells']} cells)" for v in entry["values"]
        )
        lines.append(
            f"round {number}, {facet}: {values}; {entry['ratings_removed']} ratings left with "
            "no label (missing in agreement)"
        )
    if record.get("skipped"):
        lines.append(f"round {number}: {len(record['skipped'])} sheet rows skipped")
    if record.get("final_only"):
        lines.append(
            f"round {number}: {len(record['final_only'])} keys only in the Final sheet (no item)"
        )
    return lines
