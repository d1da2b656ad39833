"""The page benchmark's screening round (benchmarks/screening_scale.py populate_screening): the
rows it copies in are those screening would leave, so the panel's figures read from them agree
with every item's state, and the round hands out its ranked items next."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from annotator.screening.decisions import completion_order, round_items
from annotator.screening.models import RetrainJob, ScreeningModel, ScreeningPlan
from annotator.screening.panel import screening_panel
from annotator.screening.services import start_screening_round
from annotator.studies.models import Annotation, Item, ScreeningRank
from annotator.studies.services import next_assignment
from tests.screening.world import screening_world

pytestmark = pytest.mark.django_db

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from screening_scale import populate_screening  # noqa: E402


def test_a_filled_screening_round_reads_as_screening_left_it() -> None:
    sw = screening_world(n=40, share=0.2)
    plan = start_screening_round(study=sw.study, user=sw.world.owner, seed=5)
    done = populate_screening(sw.study.pk, 40, 30, 3, number=plan.round.number)
    assert done["round_number"] == plan.round.number and done["ranked"] == 10
    plan = ScreeningPlan.objects.select_related("round").get(pk=plan.pk)
    states = round_items(plan)
    assert len(states) == 40 and sum(s.complete for s in states) == 30
    # k submitted screenings on each screened item, none elsewhere
    submitted = Annotation.objects.filter(
        assignment__item__round=plan.round, status=Annotation.Status.SUBMITTED
    )
    assert submitted.count() == 2 * 30 and not submitted.filter(submitted_at=None).exists()
    panel = screening_panel(plan)
    ordered = completion_order(states)
    assert panel.prisma.screened == 30 and panel.prisma.candidates == 40
    assert panel.relevant_found == sum(s.relevant for s in ordered) == done["relevant_screened"]
    assert ScreeningModel.objects.filter(round=plan.round).count() == done["models"] == 1
    assert RetrainJob.objects.get(round=plan.round).status == RetrainJob.Status.SUCCEEDED
    # The ranked rest goes to a screener first (the main round's items come before it).
    Item.objects.filter(study=sw.study).exclude(round=plan.round).update(active_count=2)
    handed = next_assignment(study=sw.study, annotator=sw.screeners[0])
    assert handed is not None and handed.screening_rank == 1
    assert ScreeningRank.objects.get(item_id=handed.item_id).rank == 1
