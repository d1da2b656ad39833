"""The stopping panel: figures, the audit (seeded, handed out first, k screeners each), the
Callaghan & Müller-Hansen verdict, PRISMA counts, and the included issues taken into a later
round whole or as a seeded random sample; pages and API, with their refusals."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.screening.decisions import completion_order, round_items
from annotator.screening.models import ScreeningAudit, ScreeningPlan
from annotator.screening.panel import screening_panel, simulate_round
from annotator.screening.retrain import retrain
from annotator.screening.services import ScreeningError, draw_audit, select_included
from annotator.screening.stopping import audits_needed
from annotator.studies.models import Assignment, Item, Round, Selection
from annotator.studies.services import create_round
from tests.screening.world import ScreeningWorld, screening_world

pytestmark = pytest.mark.django_db


def _screen_until_flat(sw: ScreeningWorld, flat: int = 40) -> None:
    """Both screeners screen in the model's order, retraining every 10 items, until `flat`
    items in a row were irrelevant."""
    a, b = sw.screeners
    turns = 0
    while True:
        sw.screen(a), sw.screen(b)
        turns += 1
        panel = screening_panel(_plan(sw))
        if turns % 10 == 0 and panel.relevant_found and panel.relevant_found < turns:
            retrain(sw.world.round.pk)
        if panel.relevant_found and panel.since_last_relevant >= flat:
            return


def _plan(sw: ScreeningWorld) -> ScreeningPlan:
    return ScreeningPlan.objects.select_related("round", "relevant_category__facet").get(
        round=sw.world.round
    )


def test_the_panel_says_stop_after_an_audit_that_finds_nothing_more() -> None:
    sw = screening_world(n=300, share=0.1)
    _screen_until_flat(sw)
    panel = screening_panel(_plan(sw))
    assert panel.verdict.startswith("go on: no audit yet")
    assert panel.suggested_audit is not None
    assert panel.curve[-1] == panel.relevant_found and len(panel.curve) == panel.prisma.screened + 1
    audit = draw_audit(round=sw.world.round, size=panel.suggested_audit, seed=7)
    assert audit.pool_size == 300 - panel.prisma.screened
    assert audit.relevant_before == panel.relevant_found and audit.seed == 7
    # The audit's items come first, in the drawn order, to each screener.
    a, b = sw.screeners
    handed = []
    for _ in range(audit.size):
        first = sw.screen(a)
        second = sw.screen(b)
        assert first is not None and second is not None and first.item_id == second.item_id
        handed.append(first.item_id)
    assert handed == audit.item_ids
    assert [
        a.screening_rank
        for a in Assignment.objects.filter(item_id__in=handed[:3], annotator=b).order_by(
            "screening_rank"
        )
    ] == [1, 2, 3]
    after = screening_panel(_plan(sw))
    assert after.audit is not None and after.audit.audited == audit.size
    missed = sum(sw.truth[Item.objects.get(pk=pk).issue_id] for pk in audit.item_ids)
    if missed == 0:
        assert after.stop and after.verdict.startswith("stop: recall ≥ 95% at p =")
        assert after.test is not None and after.test.p_value < 0.05
    else:  # a relevant issue in the audit: the panel asks for more, with the count
        assert not after.stop and "more audited item" in after.verdict
    assert after.test is not None and after.test.recall_ci is not None
    assert after.prisma.audited == audit.size
    assert after.prisma.screened == panel.prisma.screened + audit.size


def test_an_audit_with_a_recorded_seed_draws_the_same_items() -> None:
    first = screening_world(n=50, seed=3)
    one = draw_audit(round=first.world.round, size=10, seed=11)
    assert len(set(one.item_ids)) == 10
    again = ScreeningAudit.objects.get(pk=one.pk)
    assert again.order[:10] == one.item_ids and again.size == 10
    extended = draw_audit(round=first.world.round, size=15)
    assert extended.item_ids[:10] == one.item_ids and extended.seed == 11


@pytest.mark.parametrize(
    ("size", "message"),
    [(0, "field 'size': from 1 to 20"), (21, "field 'size': from 1 to 20")],
)
def test_a_bad_audit_size_is_refused_and_draws_nothing(size: int, message: str) -> None:
    sw = screening_world(n=20)
    with pytest.raises(ScreeningError, match=message):
        draw_audit(round=sw.world.round, size=size)
    assert not ScreeningAudit.objects.exists()


def test_included_issues_go_whole_or_as_a_seeded_sample_never_the_prefix() -> None:
    sw = screening_world(n=60, share=0.5)
    a, b = sw.screeners
    for _ in range(60):
        sw.screen(a), sw.screen(b)
    included = [
        Item.objects.get(pk=s).issue_id
        for s in Item.objects.filter(round=sw.world.round).values_list("pk", flat=True)
        if sw.truth[Item.objects.get(pk=s).issue_id]
    ]
    main = create_round(study=sw.study)
    sample = select_included(screening_round=sw.world.round, round=main, sample_size=10, seed=5)
    assert sample.source == {
        "screening_round": sw.world.round.number,
        "included": len(included),
        "take": "random sample of 10",
    }
    chosen = set(Item.objects.filter(round=main).values_list("issue_id", flat=True))
    assert len(chosen) == 10 and chosen <= set(included)
    assert "taken random sample of 10, never in the screening model's order" in sample.method_text
    other = create_round(study=sw.study)
    whole = select_included(screening_round=sw.world.round, round=other)
    assert whole.source["take"] == "all"
    assert Item.objects.filter(round=other).count() == len(included) - 10  # not twice


def test_included_issues_cannot_go_into_a_screening_round() -> None:
    sw = screening_world(n=10, share=0.5)
    with pytest.raises(ScreeningError, match="field 'round'"):
        select_included(screening_round=sw.world.round, round=sw.world.round)
    assert not Selection.objects.filter(source__has_key="screening_round").exists()


# --- pages and API -----------------------------------------------------------------------------
def test_an_owner_declares_a_screening_round_on_its_page(client) -> None:  # type: ignore[no-untyped-def]
    sw = screening_world(n=5)
    client.force_login(sw.world.owner)
    url = reverse("screening:new", args=[sw.study.pk])
    page = client.get(url)
    assert page.status_code == 200 and "Relevant means" in page.content.decode()
    category = sw.world.category("screening", "relevant")
    response = client.post(
        url,
        {
            "relevant_category": category.pk,
            "prioritised": "on",
            "model": "tfidf-logreg",
            "seed": "4",
            "retrain_every": "5",
            "target_recall": "0.9",
            "alpha": "0.05",
            "looks": "2",
        },
    )
    made = Round.objects.filter(study=sw.study, kind="screening").order_by("-number").first()
    assert made is not None and response.status_code == 302
    assert response.url == reverse("screening:panel", args=[sw.study.pk, made.number])
    plan = made.screening_plan
    assert (plan.model, plan.seed, plan.retrain_every, plan.looks) == ("tfidf-logreg", 4, 5, 2)
    panel = client.get(response.url).content.decode()
    assert "recall &lt; 90%" in panel or "recall < 90%" in panel
    assert "Rule declared" in panel and "2 declared looks" in panel


def test_the_panel_page_shows_the_figures_and_hides_from_screeners(client) -> None:  # type: ignore[no-untyped-def]
    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    for _ in range(4):
        sw.screen(a), sw.screen(b)
    url = reverse("screening:panel", args=[sw.study.pk, sw.world.round.number])
    client.force_login(a)
    assert client.get(url).status_code == 404
    client.force_login(sw.world.owner)
    page = client.get(url).content.decode()
    assert "data-screened>4<" in page and "data-candidates>20<" in page
    assert "<svg" in page and "relevant found" in page
    assert "0 duplicates removed" in page
    retrained = client.post(reverse("screening:retrain", args=[sw.study.pk, sw.world.round.number]))
    assert retrained.status_code == 302
    assert sw.world.round.retrain_jobs.count() == 1


def test_the_panel_page_reads_in_queries_that_do_not_grow_with_the_screening(client) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    url = reverse("screening:panel", args=[sw.study.pk, sw.world.round.number])
    client.force_login(sw.world.owner)
    client.get(url)
    counts = []
    for screened in (2, 8):
        while sw.world.round.items.filter(submitted_count__gte=2).count() < screened:
            sw.screen(a), sw.screen(b)
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url).content.decode()
        assert f"data-screened>{screened}<" in page and "data-candidates>20<" in page
        assert f"by {sw.world.owner.get_username()}" in page  # who declared the rule
        assert "Into" in page  # the owner's form to take the included issues
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 14, counts


def test_the_api_reads_the_panel_draws_the_audit_and_refuses_bad_input(client) -> None:  # type: ignore[no-untyped-def]
    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    for _ in range(5):
        sw.screen(a), sw.screen(b)
    client.force_login(sw.world.owner)
    base = f"/api/studies/{sw.study.pk}/screening/{sw.world.round.number}/"
    panel = client.get(base).json()
    assert panel["screened"] == 5 and panel["prisma"]["candidates"] == 20
    assert panel["prisma"]["duplicates_removed"] == 0
    assert panel["rule"]["target_recall"] == 0.95 and panel["rule"]["declared_at"]
    assert len(panel["relevant_curve"]) == 6
    refused = client.post(f"{base}audit/", {"size": 99}, content_type="application/json")
    assert refused.status_code == 400 and "field 'size'" in refused.json()["detail"]
    assert not ScreeningAudit.objects.exists()
    drawn = client.post(f"{base}audit/", {"size": 5, "seed": 2}, content_type="application/json")
    assert drawn.status_code == 200 and drawn.json()["audit"]["size"] == 5
    assert drawn.json()["audit"]["seed"] == 2 and drawn.json()["audit"]["pool_size"] == 15
    late = client.put(f"{base}plan/", {"target_recall": 0.8}, content_type="application/json")
    assert late.status_code == 400 and "decisions already" in late.json()["detail"]
    client.force_login(a)
    assert client.get(base).status_code == 404
    assert client.post(f"{base}retrain/").status_code == 404


def test_the_api_takes_the_included_issues_into_a_new_main_round(client) -> None:  # type: ignore[no-untyped-def]
    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    for _ in range(20):
        sw.screen(a), sw.screen(b)
    client.force_login(sw.world.owner)
    base = f"/api/studies/{sw.study.pk}/screening/{sw.world.round.number}/"
    made = client.post(
        f"{base}include/", {"sample_size": 4, "seed": 1}, content_type="application/json"
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["sampled"] == 4 and body["source"]["take"] == "random sample of 4"
    assert Round.objects.get(study=sw.study, number=body["round"]).kind == "main"


def test_a_finished_round_simulates_on_its_page(client) -> None:  # type: ignore[no-untyped-def]
    sw = screening_world(n=80, share=0.2)
    a, b = sw.screeners
    url = reverse("screening:panel", args=[sw.study.pk, sw.world.round.number])
    client.force_login(sw.world.owner)
    sw.screen(a), sw.screen(b)
    early = client.get(url + "?simulate=1").content.decode()
    assert "round 2 is not finished" in early
    for _ in range(80):
        sw.screen(a), sw.screen(b)
    page = client.get(url + "?simulate=1").content.decode()
    assert "Replaying the 80 screened issues (16 relevant)" in page
    result = simulate_round(_plan(sw))
    assert result.values["wss@95"] > result.values["random_wss@95"] + 0.2
    assert f"WSS@95 {result.values['wss@95']:.3f}" in page
    assert len(result.curve) == 81 and result.curve[-1] == 16


def test_the_methods_paragraph_reports_the_screening_round() -> None:
    from annotator.exports.dataset import methods_facts
    from annotator.exports.methods import methods_latex, methods_markdown

    sw = screening_world(n=20, share=0.5)
    a, b = sw.screeners
    for _ in range(6):
        sw.screen(a), sw.screen(b)
    facts = methods_facts(sw.study)
    assert len(facts.screening) == 1 and facts.screening[0].screened == 6
    text = methods_markdown(facts)
    assert (
        "Screening round 2 ordered the candidates by a tfidf-svm model retrained after every 10 decisions"
        in text
    )
    assert (
        "Of 20 candidate issues (0 duplicates removed), 6 were screened (0 of them in the random audit)"
        in text
    )
    assert "testing whether recall is below 95% at p < 0.05" in text
    assert r"95\%" in methods_latex(facts)


def test_prisma_counts_the_issues_marked_near_duplicates_as_removed() -> None:
    from annotator.similarity.services import mark_issue
    from tests.factories import IssueFactory

    sw = screening_world(n=10, share=0.5)
    plan = ScreeningPlan.objects.get(round=sw.world.round)
    assert screening_panel(plan).prisma.duplicates_removed == 0
    original, copy, other = IssueFactory(), IssueFactory(), IssueFactory()
    mark_issue(study=sw.study, issue=copy, decision="duplicate", duplicate_of=original)
    mark_issue(study=sw.study, issue=other, decision="distinct")

    prisma = screening_panel(plan).prisma

    assert prisma.duplicates_removed == 1
    assert "1 duplicates removed" in prisma.text()


def _figures_from_every_item(plan: ScreeningPlan) -> dict[str, object]:
    """The panel's figures as they were computed before the panel read only the screened
    items: from every item of the round (decisions.round_items)."""
    states = round_items(plan)
    done = completion_order(states)
    curve = [0]
    for state in done:
        curve.append(curve[-1] + int(state.relevant))
    last = max((n for n, s in enumerate(done, start=1) if s.relevant), default=0)
    audit = ScreeningAudit.objects.filter(round=plan.round).first()
    by_id = {s.item_id: s for s in states}
    audited = [by_id[pk] for pk in audit.item_ids if pk in by_id] if audit else []
    audited = [s for s in audited if s.complete]
    return {
        "curve": curve,
        "since": len(done) - last,
        "candidates": len(states),
        "not_screened": len(states) - len(done),
        "pool": sum(not s.complete for s in states),
        "audited": len(audited),
        "audit_relevant": sum(s.relevant for s in audited),
    }


def test_the_panel_reads_the_figures_every_item_gives() -> None:
    from tests.screening.test_sql import mixed_round

    sw = mixed_round()
    plan = _plan(sw)
    a, b = sw.screeners
    screened = []
    for _ in range(6):
        panel = screening_panel(plan)
        old = _figures_from_every_item(plan)
        assert panel.curve == old["curve"] and panel.since_last_relevant == old["since"]
        assert panel.prisma.candidates == old["candidates"] == 16
        assert panel.prisma.not_screened == old["not_screened"]
        assert panel.prisma.screened == len(panel.curve) - 1
        screened.append(panel.prisma.screened)
        if panel.audit is None:
            pool = old["pool"]
            assert isinstance(pool, int) and pool == 16 - panel.prisma.screened
            level = plan.alpha / plan.looks
            assert panel.suggested_audit == audits_needed(
                pool, panel.relevant_found, 0, 0, plan.target_recall, level
            )
            draw_audit(round=sw.world.round, size=3, seed=4)
        else:
            assert panel.audit.audited == old["audited"]
            assert panel.audit.audit_relevant == old["audit_relevant"]
            assert panel.prisma.audited == panel.audit.audited
        sw.screen(a), sw.screen(b)  # the half-screened item first, then the audit's
    assert screened[0] == 8 and screened[-1] > screened[1]
    assert panel.audit is not None and panel.audit.audited >= 1
    assert panel.test is not None  # audited items screened: the test is read
