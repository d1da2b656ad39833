"""The dataset card of a study with a screening round carries its PRISMA-style flow (issues
identified, near-duplicates removed, candidates, screened, audited, included, excluded, not
screened) and the methods sentence; a study without one has no such section."""

from __future__ import annotations

import io

import pytest

from annotator.exports.services import export_dataset
from annotator.screening.models import ScreeningPlan
from annotator.screening.panel import screening_panel
from annotator.screening.services import draw_audit
from annotator.similarity.services import mark_issue
from tests.exports.factories import exported_world
from tests.factories import IssueFactory
from tests.screening.world import screening_world

pytestmark = pytest.mark.django_db


def _card(study) -> str:  # type: ignore[no-untyped-def]
    return export_dataset(study=study, format="csv", out=io.BytesIO()).card


def _rows(card: str, heading: str) -> dict[str, str]:
    """The two-column table under a heading of the card, as what -> count."""
    section = card.split(heading, 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].isdigit():
            rows[cells[0]] = cells[1]
    return rows


def test_the_card_shows_the_screening_flow_the_panel_shows() -> None:
    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    for _ in range(6):
        sw.screen(a), sw.screen(b)
    draw_audit(round=sw.world.round, size=2, seed=1, user=sw.world.owner)
    for _ in range(2):
        sw.screen(a), sw.screen(b)
    kept = sw.world.issues[0]
    mark_issue(study=sw.study, issue=IssueFactory(), decision="duplicate", duplicate_of=kept)

    card = _card(sw.study)

    prisma = screening_panel(ScreeningPlan.objects.get(round=sw.world.round)).prisma
    assert prisma.screened == 8 and prisma.audited == 2 and prisma.duplicates_removed == 1
    assert "## Screening" in card
    rows = _rows(card, f"### Screening round {sw.world.round.number}")
    assert rows == {
        "issues identified": "21",
        "near-duplicates removed": "1",
        "candidates screened for": "20",
        "screened": "8",
        "of them in the random audit": "2",
        "included": str(prisma.included),
        "excluded": str(prisma.excluded),
        "not screened": "12",
    }
    assert (
        "Of 20 candidate issues (1 duplicates removed), 8 were screened (2 of them in the "
        f"random audit) and {prisma.included} included" in card
    )
    assert "testing whether recall is below 95% at p < 0.05" in card


def test_a_study_without_a_screening_round_has_no_screening_section() -> None:
    assert "## Screening" not in _card(exported_world().study)
