"""Gold answers and training rounds: the owner sets an item's gold answer; in a training round
an annotator sees it (and its rationale) right after submitting, never before; the dashboard
shows each annotator's accuracy against gold per facet; gold items stay out of agreement unless
the study counts them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.agreement.labels import load_label_table
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.studies.models import Assignment, GoldAnswer, Item, Round
from annotator.studies.services import (
    StudyError,
    close_round,
    create_round,
    next_assignment,
    select_issues,
    submit_annotation,
    update_study,
)
from annotator.studies.services.gold import clear_gold, feedback, gold_accuracy, set_gold
from tests.factories import IssueFactory, RepositoryFactory
from tests.studies.factories import World, make_world
from tests.studies.test_blind_routes import HTMX, all_urls, record

pytestmark = pytest.mark.django_db
RATIONALE = "GOLD-RATIONALE-hangs-in-allreduce"


def training_world(items: int = 2) -> tuple[World, Round]:
    """A study whose round 2 is a training round of `items` issues, each with a gold answer."""
    world = make_world(items=1)
    training = create_round(study=world.study, kind=Round.Kind.TRAINING)
    repository = RepositoryFactory(owner="microsoft", name="DeepSpeed")
    for _ in range(items):
        IssueFactory(repository=repository)
    select_issues(study=world.study, round=training, filters={"repository": repository.pk}, seed=3)
    for item in Item.objects.filter(round=training):
        set_gold(
            item=item,
            user=world.owner,
            labels=world.labels(screening="relevant", symptom="hang", fix=["version"]),
            rationale=RATIONALE,
        )
    return world, training


def test_training_items_go_to_every_annotator():
    _world, training = training_world()
    assert set(Item.objects.filter(round=training).values_list("quota", flat=True)) == {2}


def test_set_gold_validates_like_a_submit_and_writes_nothing_on_error():
    world, training = training_world(items=1)
    item = Item.objects.get(round=training)
    before = GoldAnswer.objects.get(item=item).labels
    with pytest.raises(StudyError) as error:
        set_gold(item=item, user=world.owner, labels=world.labels(symptom=["hang", "oom"]))
    assert "choose one category only" in str(error.value.errors)  # type: ignore[attr-defined]
    assert GoldAnswer.objects.get(item=item).labels == before
    assert before == {"fix": ["version"], "screening": ["relevant"], "symptom": ["hang"]}


def test_a_closed_rounds_gold_never_changes():
    world, training = training_world(items=1)
    item = Item.objects.get(round=training)
    close_round(round=training)
    with pytest.raises(StudyError, match="closed"):
        set_gold(item=item, user=world.owner, labels=world.labels(screening="relevant"))
    with pytest.raises(StudyError, match="closed"):
        clear_gold(item=item)
    assert GoldAnswer.objects.filter(item=item).exists()


def _training_assignment(world: World, annotator) -> Assignment:  # type: ignore[no-untyped-def]
    """The annotator's next assignment in the training round (it comes before the main
    round's; a main item in progress is submitted first)."""
    while True:
        assignment = next_assignment(study=world.study, annotator=annotator)
        assert assignment is not None
        if assignment.item.round.kind == Round.Kind.TRAINING:
            return assignment
        submit_annotation(
            assignment=assignment, user=annotator, labels=world.labels(screening="relevant")
        )


def test_feedback_only_after_the_submit_and_only_in_training():
    world, _training = training_world()
    a = world.annotators[0]
    assignment = _training_assignment(world, a)
    assert feedback(assignment) is None  # assigned, not submitted
    submit_annotation(
        assignment=assignment,
        user=a,
        labels=world.labels(screening="relevant", symptom="oom", fix=["version"]),
    )
    assignment.refresh_from_db()
    shown = feedback(assignment)
    assert shown is not None and shown.rationale == RATIONALE
    by_key = {f.key: f for f in shown.facets}
    assert by_key["symptom"].match is False and by_key["symptom"].gold[0].startswith("hang")
    assert by_key["screening"].match and by_key["fix"].match
    assert shown.matched == len(shown.facets) - 1
    # the same gold on a main-round item gives no feedback (a hidden check)
    while (main := next_assignment(study=world.study, annotator=a)).item.round_id != world.round.pk:
        submit_annotation(assignment=main, user=a, labels=world.labels(screening="relevant"))
    set_gold(item=main.item, user=world.owner, labels=world.labels(screening="relevant"))
    submit_annotation(assignment=main, user=a, labels=world.labels(screening="relevant"))
    main.refresh_from_db()
    assert main.status == "submitted" and feedback(main) is None


def test_the_submit_leads_to_the_feedback_page_then_on(client):
    world, _training = training_world()
    a = world.annotators[0]
    assignment = _training_assignment(world, a)
    client.force_login(a)
    page = client.get(reverse("studies:assignment", args=[assignment.pk]))
    assert page.status_code == 200 and RATIONALE not in page.content.decode()
    feedback_url = reverse("studies:feedback", args=[assignment.pk])
    assert client.get(feedback_url).status_code == 404  # not before the submit
    assert client.get(f"/api/assignments/{assignment.pk}/feedback/").status_code == 404
    posted = {f"facet-{k}": v for k, v in world.labels(screening="relevant", symptom="oom").items()}
    response = client.post(reverse("studies:submit", args=[assignment.pk]), posted, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == feedback_url
    shown = client.get(feedback_url).content.decode()
    assert RATIONALE in shown and "You matched the gold answer on" in shown
    assert 'data-facet="symptom" class="miss"' in shown
    assert reverse("studies:annotate_next", args=[world.study.pk]) in shown
    api = client.get(f"/api/assignments/{assignment.pk}/feedback/").json()
    assert api["rationale"] == RATIONALE
    assert {f["key"]: f["match"] for f in api["facets"]}["symptom"] is False
    # another annotator's feedback page is not found
    client.force_login(world.annotators[1])
    assert client.get(feedback_url).status_code == 404


def test_no_route_shows_the_gold_answer_before_the_submit(client):
    """Every GET route the resolver knows, with every id of the scene, as the annotator who has
    not submitted the gold item: the rationale appears nowhere (and the feedback page is 404);
    the control: after the submit, the feedback route shows it."""
    world, _training = training_world(items=1)
    a = world.annotators[0]
    assignment = _training_assignment(world, a)
    gold = GoldAnswer.objects.get(item=assignment.item)
    values = {
        "study_id": [str(world.study.pk)],
        "assignment_id": [str(assignment.pk)],
        "item_id": [str(assignment.item_id)],
        "*": [str(assignment.pk), str(assignment.item_id), str(gold.pk)],
    }
    client.force_login(a)
    answers = record(client, all_urls(values))
    assert len(answers) > 100
    assert [key for key, (_, text) in answers.items() if RATIONALE in text] == []
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    after = record(client, [("", reverse("studies:feedback", args=[assignment.pk]))])
    assert all(RATIONALE in text for _, text in after.values())


def test_the_item_page_shows_gold_to_owners_only(client):
    world, _training = training_world(items=1)
    a = world.annotators[0]
    assignment = _training_assignment(world, a)
    submit_annotation(assignment=assignment, user=a, labels=world.labels(screening="relevant"))
    url = reverse("studies:item", args=[assignment.item_id])
    client.force_login(world.owner)
    owner_view = client.get(url).content.decode()
    assert (
        RATIONALE in owner_view and reverse("studies:gold", args=[assignment.item_id]) in owner_view
    )
    client.force_login(a)
    assert RATIONALE not in client.get(url).content.decode()


def test_owner_sets_changes_and_removes_gold_through_the_pages(client):
    world = make_world(items=1)
    item = Item.objects.get(round=world.round)
    client.force_login(world.owner)
    url = reverse("studies:gold", args=[item.pk])
    assert client.get(url).status_code == 200
    bad = {f"facet-{k}": v for k, v in world.labels(symptom=["hang", "oom"]).items()}
    response = client.post(url, {**bad, "rationale": "x"})
    assert response.status_code == 400 and "choose one category only" in response.content.decode()
    assert not GoldAnswer.objects.exists()
    good = {f"facet-{k}": v for k, v in world.labels(screening="relevant", symptom="oom").items()}
    # the form's "—" option posts an empty value for a facet left without a category
    good = {k: v or [""] for k, v in good.items()}
    response = client.post(url, {**good, "rationale": "Out of memory in stage 3."})
    assert response.status_code == 302
    gold = GoldAnswer.objects.get(item=item)
    assert gold.labels["symptom"] == ["oom"] and gold.set_by == world.owner
    remove = reverse("studies:gold_delete", args=[item.pk])
    assert "Remove the gold answer of" in client.get(remove).content.decode()  # confirmation
    assert GoldAnswer.objects.exists()
    assert client.post(remove).status_code == 302 and not GoldAnswer.objects.exists()
    # annotators may not reach the form
    client.force_login(world.annotators[0])
    assert client.get(url).status_code == 404 and client.post(url, good).status_code == 404


def test_accuracy_against_gold_per_annotator_and_facet(client):
    world, _training = training_world(items=2)
    right = world.labels(screening="relevant", symptom="hang", fix=["version"])
    wrong_symptom = world.labels(screening="relevant", symptom="oom", fix=["version"])
    a, b = world.annotators
    for person, labels in ((a, [right, right]), (b, [right, wrong_symptom])):
        for given in labels:
            assignment = _training_assignment(world, person)
            submit_annotation(assignment=assignment, user=person, labels=given)
    figures = gold_accuracy(study=world.study)
    assert figures.gold_items == 2
    rows = {r.username: r for r in figures.annotators}
    assert rows[a.username].exact == 2 and rows[a.username].facet_share("symptom") == 1.0
    assert rows[b.username].exact == 1 and rows[b.username].facet_share("symptom") == 0.5
    assert rows[b.username].facet_share("screening") == 1.0
    client.force_login(world.owner)
    page = client.get(reverse("studies:dashboard", args=[world.study.pk])).content.decode()
    assert "Accuracy against gold" in page and "50% <small>(1/2)</small>" in page


def test_gold_items_stay_out_of_agreement_unless_counted():
    world, training = training_world(items=2)
    for person in world.annotators:
        for _ in range(2):
            assignment = _training_assignment(world, person)
            submit_annotation(
                assignment=assignment, user=person, labels=world.labels(screening="relevant")
            )
    table = load_label_table(study_id=world.study.pk, version=world.version, round_id=training.pk)
    assert table.labels == 0 and table.counts["gold_left_out"] == 2
    update_study(
        study=world.study,
        name=world.study.name,
        guidelines="",
        overlap_k=world.study.overlap_k,
        gold_in_agreement=True,
    )
    table = load_label_table(study_id=world.study.pk, version=world.version, round_id=training.pk)
    assert table.counts["gold_left_out"] == 0 and table.facets[0].table.n_units == 2


def test_the_report_says_how_many_gold_items_were_left_out(client):
    world, _training = training_world(items=2)
    for person in world.annotators:
        for _ in range(2):
            assignment = _training_assignment(world, person)
            submit_annotation(
                assignment=assignment, user=person, labels=world.labels(screening="relevant")
            )
    run = start_agreement_run(study=world.study, enqueue=False)
    run_agreement_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.inputs["counts"]["gold_left_out"] == 2
    client.force_login(world.owner)
    html = client.get(reverse("agreement:study", args=[world.study.pk])).content.decode()
    assert "Items with a gold answer were left out (2)" in html


def test_a_training_round_added_after_the_main_round_is_labelled_first():
    world, training = training_world(items=2)  # round 1 (main) has an item, round 2 trains
    a = world.annotators[0]
    first = next_assignment(study=world.study, annotator=a)
    assert first is not None and first.item.round_id == training.pk
    assert set(Item.objects.filter(round=training).values_list("stage", flat=True)) == {0}
    assert set(Item.objects.filter(round=world.round).values_list("stage", flat=True)) == {1}
