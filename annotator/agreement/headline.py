# ruff: noqa: RUF002, RUF003 -- α, κ and ≥ are the notation of the statistics.
"""The declared headline: before the main round, a study's owner declares the one coefficient,
the facets and the threshold the study will report (HeadlineDeclaration). A change later is a
new declaration with its reason; the first stays beside it, each with its date and whether
labeling had started. The agreement report and the dataset card show the declaration, its
changes, and the declared coefficient of the declared facets from the run they show — so the
figure reported is the one chosen before the data, not the most favourable one."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Annotation, Round, Study

from .models import AgreementRun, HeadlineDeclaration
from .threshold import judge

Coefficient = HeadlineDeclaration.Coefficient


class HeadlineError(ValueError):
    """A declaration that cannot be recorded; the message names the field."""


@dataclass(frozen=True)
class HeadlineFigure:
    """The declared coefficient of one declared facet in one run."""

    facet: str
    value: float | None
    ci: tuple[float, float] | None
    n: int | None
    meets: bool | None  # the interval's lower bound reaches the threshold; None: undefined

    @property
    def judgement(self) -> str:
        if self.meets is None:
            return "undefined"
        return "meets it" if self.meets else "does not meet it"


def declarations(study: Study) -> list[HeadlineDeclaration]:
    """Every declaration of the study, oldest first (the first is the original)."""
    return list(HeadlineDeclaration.objects.filter(study=study).select_related("declared_by"))


def labeling_started(study: Study) -> bool:
    """Whether a main round of the study has a submitted label."""
    return Annotation.objects.filter(
        assignment__item__round__study=study,
        assignment__item__round__kind=Round.Kind.MAIN,
        status=Annotation.Status.SUBMITTED,
    ).exists()


@transaction.atomic
def declare_headline(
    *,
    study: Study,
    user: Any,
    coefficient: str,
    facets: Sequence[str],
    threshold: float,
    reason: str = "",
) -> HeadlineDeclaration:
    """Record a declaration. The first needs no reason; a change must say why, and must change
    something. Facets are keys of the study's codebook version."""
    if coefficient not in Coefficient.values:
        choices = ", ".join(Coefficient.values)
        raise HeadlineError(f"field 'coefficient': {coefficient!r} is not one of {choices}")
    known = [facet.key for facet in codebook_schema(study.codebook_version).facets]
    chosen = [key for key in known if key in set(facets)]  # codebook order, once each
    if unknown := sorted(set(facets) - set(known)):
        raise HeadlineError(f"field 'facets': no facet {', '.join(map(repr, unknown))} here")
    if not chosen:
        raise HeadlineError("field 'facets': choose at least one facet")
    if not 0 <= threshold <= 1:
        raise HeadlineError("field 'threshold': a value between 0 and 1")
    # One declaration at a time per study: the row lock orders concurrent declarations.
    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").first()
    previous = HeadlineDeclaration.objects.filter(study=study).order_by("declared_at", "pk").last()
    reason = reason.strip()
    if previous is not None:
        same = (previous.coefficient, previous.facets, previous.threshold)
        if same == (coefficient, chosen, threshold):
            raise HeadlineError("nothing changed: this is the headline already declared")
        if not reason:
            raise HeadlineError(
                "field 'reason': say why the headline changes (the earlier declaration stays "
                "on the report and the card beside this one)"
            )
    return HeadlineDeclaration.objects.create(
        study=study,
        coefficient=coefficient,
        facets=chosen,
        threshold=threshold,
        reason=reason,
        declared_by=user,
        after_labeling_started=labeling_started(study),
    )


def describe(declaration: HeadlineDeclaration) -> str:
    """One declaration in a sentence."""
    when = timezone.localtime(declaration.declared_at).strftime("%Y-%m-%d %H:%M %Z")
    who = f" by {declaration.declared_by.get_username()}" if declaration.declared_by else ""
    timing = (
        "after main-round labeling had started"
        if declaration.after_labeling_started
        else "before any main-round label"
    )
    return (
        f"{declaration.get_coefficient_display()} ≥ {declaration.threshold:g} on "
        f"{', '.join(declaration.facets)}, declared {when}{who}, {timing}"
    )


def history_lines(items: Sequence[HeadlineDeclaration]) -> list[str]:
    """The declarations in words, the current one first, then each earlier one."""
    if not items:
        return []
    *earlier, current = items
    lines = [f"Declared headline: {describe(current)}."]
    if earlier:
        lines.append(f"Changed from the original: {describe(earlier[0])}.")
        for before, after in itertools.pairwise(items):
            lines.append(
                f"Change of {timezone.localtime(after.declared_at):%Y-%m-%d}: "
                f"{after.reason or '(no reason given)'} (was {before.get_coefficient_display()} "
                f"≥ {before.threshold:g} on {', '.join(before.facets)})."
            )
    return lines


def figures(declaration: HeadlineDeclaration, run: AgreementRun | None) -> list[HeadlineFigure]:
    """The declared coefficient for each declared facet in `run`, judged on the lower bound of
    its 95% interval as calibration is (threshold.py). α of a multi-choice facet is its MASI α,
    the α the run reports for it."""
    out: list[HeadlineFigure] = []
    for key in declaration.facets:
        facet = run.facet_result(key) if run is not None else None
        if facet is None:
            out.append(HeadlineFigure(key, None, None, None, None))
            continue
        name = declaration.coefficient
        if name == Coefficient.KRIPPENDORFF_ALPHA:
            name = facet.get("headline", name)
        result = facet["coefficients"].get(name) or {}
        ci = result.get("ci")
        interval = (float(ci[0]), float(ci[1])) if ci else None
        meets = judge(result, declaration.threshold, facet=key).meets  # calibration's rule
        n = result.get("n_pairable_units")
        out.append(HeadlineFigure(key, result.get("value"), interval, n, meets))
    return out


def headline_context(study: Study, run: AgreementRun | None) -> dict[str, Any]:
    """What the agreement report shows of the declaration: its lines and, for the run shown,
    the declared coefficient of each declared facet."""
    declared = declarations(study)
    return {
        "lines": history_lines(declared),
        "figures": figures(declared[-1], run) if declared and run is not None else [],
        "threshold": declared[-1].threshold if declared else None,
    }
