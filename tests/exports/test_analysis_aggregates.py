"""The analysis's counts aggregated in PostgreSQL equal the counts of the records the export
writes (`study_dataset`, the computation the pages used before), under every filter people use;
and the issues a count links to are the records' items, a page at a time."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.exports.aggregates import study_tally_as_of
from annotator.exports.analysis import (
    analysis_tables,
    check_stage,
    distributed_bars,
    flow_facets,
    flow_links,
    parse_levels,
    share_bars,
    tally_of,
)
from annotator.exports.dataset import (
    decided_items_with,
    run_analysis,
    scheme_of,
    study_dataset,
)
from annotator.exports.rows import load_codebook
from annotator.studies.models import Item
from taxonomy_app.models import Category
from tests.exports.study849 import DECIDED, ReferenceStudy, build_reference_study

pytestmark = pytest.mark.django_db

QUERIES = [
    {},
    {"level": "1"},
    {"round": "2"},
    {"repository": "deepspeedai/DeepSpeed"},
    {"stage": "inference"},
    {"source": "adjudicated"},
    {"screening": "relevant"},
    {"round": "1", "stage": "training-evaluation", "level-symptom": "1"},
    {"level-fix-pattern": "1", "repository": "NVIDIA/Megatron-LM"},
]


def plant_edge_cases(reference: ReferenceStudy) -> None:
    """What random labels rarely give: a decision without labels, a label on a group (not a
    leaf), and a multi-choice facet with a hierarchy whose issues choose two categories under
    one group (counted once there)."""
    fixes = Category.objects.filter(facet__version=reference.version, facet__key="fix-pattern")
    group = fixes.get(code="fix-dependency-version")
    fixes.filter(code__in=["fix-behavior-logic", "fix-device-assignment"]).update(parent=group)
    undecided = Item.objects.filter(study=reference.study, decision__isnull=True).order_by("pk")
    Decision.objects.create(item=undecided[0], source="unanimous")
    group_label = Decision.objects.create(item=undecided[1], source="majority")
    failure = Category.objects.get(facet__version=reference.version, code="program-failure")
    DecisionLabel.objects.create(decision=group_label, facet_id=failure.facet_id, category=failure)
    both = Decision.objects.filter(item__study=reference.study).order_by("pk")[:40]
    for decision in both:
        for code in ("fix-behavior-logic", "fix-device-assignment"):
            c = fixes.get(code=code)
            DecisionLabel.objects.get_or_create(decision=decision, facet_id=c.facet_id, category=c)


@pytest.fixture(scope="module")
def reference(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    with django_db_blocker.unblock():
        from django.db import transaction

        with transaction.atomic():
            built = build_reference_study()
            plant_edge_cases(built)
            yield built
            transaction.set_rollback(True)


def test_the_databases_counts_equal_the_records_counts_under_every_filter(reference) -> None:  # type: ignore[no-untyped-def]
    study = reference.study
    book = load_codebook(study.codebook_version)
    scheme = scheme_of(book)
    assert scheme.facet("fix-pattern").levels == 2  # the planted hierarchy
    for query in QUERIES:
        filters = {
            k: v for k, v in query.items() if k in ("round", "source", "screening", "repository")
        }
        levels = parse_levels(query, scheme)
        stage = check_stage(query.get("stage"), scheme)
        records = study_dataset(study, filters)
        if stage:
            records = records.in_stage(stage)
        expected = tally_of(records, levels)
        found, _ = study_tally_as_of(study, filters, book, scheme, levels, stage)
        assert found.decided == len(records.records) == expected.decided, query
        assert +found.on_path == +expected.on_path, query
        assert +found.pairs == +expected.pairs, query
        result = run_analysis(study, query)
        old = analysis_tables(records, levels)
        assert [(t.id, t.header, t.rows) for t in result.tables] == [
            (t.id, t.header, t.rows) for t in old
        ], query
        flow = flow_facets(scheme)
        assert result.flow_links() == flow_links(records, flow, levels), query
        for facet in ("symptom", "fix-pattern"):
            assert share_bars(result.tally, facet, levels) == share_bars(records, facet, levels)
            assert distributed_bars(result.tally, facet, levels) == distributed_bars(
                records, facet, levels
            )


def test_a_group_chosen_twice_under_it_counts_each_issue_once(reference) -> None:  # type: ignore[no-untyped-def]
    codes = ["fix-dependency-version", "fix-behavior-logic", "fix-device-assignment"]
    under = DecisionLabel.objects.filter(
        decision__item__study=reference.study, category__code__in=codes
    )
    issues = under.values("decision").distinct().count()
    assert issues < under.count()  # the planted issues carry two of them
    for query in ({}, {"level-fix-pattern": "1"}):
        share = {t.id: t for t in run_analysis(reference.study, query).tables}["share-fix-pattern"]
        group = next(r for r in share.rows if r[1].value == "fix-dependency-version")
        assert group[3].value == issues
        assert ("fix-behavior-logic" in {r[1].value for r in share.rows}) == (query == {})


@pytest.mark.parametrize(
    "labels, repository",
    [
        ([("symptom", "program-failure")], ""),
        ([("symptom", "hang"), ("stage", "inference")], ""),
        (
            [("fix-pattern", "fix-dependency-version"), ("distributed", "yes")],
            "deepspeedai/DeepSpeed",
        ),
        ([("root-cause", "no-such-code")], ""),
        ([("no-such-facet", "x")], ""),
        ([], "NVIDIA/Megatron-LM"),
    ],
)
def test_the_issues_of_a_count_are_the_records_it_counted(reference, labels, repository) -> None:  # type: ignore[no-untyped-def]
    study = reference.study
    filters = {"repository": repository} if repository else {}
    found = decided_items_with(study, filters, labels)
    expected = study_dataset(study, {}).items_with(labels, repository)
    assert sorted(found.values_list("pk", flat=True)) == sorted(expected)


def test_the_issues_page_shows_the_count_and_pages_through_them(client, reference) -> None:  # type: ignore[no-untyped-def]
    study = reference.study
    client.force_login(study.created_by)
    url = reverse("exports:analysis_issues", args=[study.pk])
    expected = study_dataset(study, {"round": "1"}).items_with([("screening", "relevant")])
    assert len(expected) > 100
    params = {"label": "screening:relevant", "round": "1"}
    first = client.get(url, params).content.decode()
    assert f"<h1>{len(expected)} issues</h1>" in first
    assert first.count("data-row-link") == 100
    assert "page=2" in first and "label=screening%3Arelevant" in first
    seen = set(re.findall(r'data-row-link href="[^"]*?(\d+)/"', first))
    last = (len(expected) + 99) // 100
    for n in range(2, last + 1):
        page = client.get(url, {**params, "page": n}).content.decode()
        seen |= set(re.findall(r'data-row-link href="[^"]*?(\d+)/"', page))
    assert {int(pk) for pk in seen} == set(expected)
    assert len(expected) <= DECIDED


def test_counts_are_kept_until_a_decision_changes_then_counted_again(reference) -> None:  # type: ignore[no-untyped-def]
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.adjudication.services import adjudicate_item

    cache.clear()  # the module's study was counted by the tests before
    study = reference.study

    def analysis() -> tuple[object, int]:
        with CaptureQueriesContext(connection) as queries:
            result = run_analysis(study, {})
        counted = sum("GROUPING SETS" in q["sql"] for q in queries.captured_queries)
        return [(t.id, t.rows) for t in result.tables], counted

    first, counted = analysis()
    assert counted == 1
    again, counted = analysis()
    assert again == first and counted == 0  # from the cache
    decision = (
        Decision.objects.filter(item__study=study, labels__category__code="hang-timeout")
        .order_by("pk")
        .first()
    )
    assert decision is not None
    labels: dict[int, list[int]] = {}
    for label in decision.labels.all():
        labels.setdefault(label.facet_id, []).append(label.category_id)
    hang = Category.objects.get(facet__version=reference.version, code="hang-timeout")
    oom = Category.objects.get(facet__version=reference.version, code="out-of-memory")
    labels[hang.facet_id] = [oom.pk]
    adjudicate_item(
        item=decision.item,
        user=study.created_by,
        labels=labels,
        reason="other",
        version=decision.version,
    )
    changed, counted = analysis()
    assert counted == 1 and changed != first
    expected = analysis_tables(study_dataset(study, {}), {"symptom": None})
    assert changed == [(t.id, t.rows) for t in expected]


def test_the_page_fetches_the_methods_paragraph_after_its_tables(client, reference) -> None:  # type: ignore[no-untyped-def]
    from annotator.exports.dataset import methods_facts
    from annotator.exports.methods import methods_markdown

    study = reference.study
    client.force_login(study.created_by)
    url = reverse("exports:analysis", args=[study.pk])
    page = client.get(url).content.decode()
    assert 'id="share-symptom"' in page
    assert f'hx-get="{url}?methods=text" hx-trigger="load"' in page
    assert "<textarea" not in page
    part = client.get(url, {"methods": "text"}, HTTP_HX_REQUEST="true").content.decode()
    assert part.startswith('<div id="methods-paragraph">') and "<html" not in part
    text = re.search(r"<textarea[^>]*>(.*)</textarea>", part, re.S)
    assert text is not None
    assert html.unescape(text.group(1)) == methods_markdown(methods_facts(study))
    assert 'data-copy="#methods-text"' in part


def test_the_repository_filter_lists_the_studys_repositories_and_a_new_one_at_once(
    reference,
) -> None:  # type: ignore[no-untyped-def]
    from annotator.exports.dataset import study_repositories
    from annotator.issues.models import Issue, Repository

    study = reference.study
    names = ["NVIDIA/Megatron-LM", "deepspeedai/DeepSpeed", "hpcaitech/ColossalAI"]
    assert study_repositories(study) == names
    assert study_repositories(study) == names  # from the cache
    other = Repository.objects.create(owner="pytorch", name="pytorch")
    issue = Issue.objects.create(repository=other, number=1, title="t", content_hash="0" * 64)
    Item.objects.create(study=study, round=study.rounds.first(), issue=issue, quota=3)
    assert study_repositories(study) == [*names, "pytorch/pytorch"]


def test_while_a_job_lists_the_repositories_the_filter_says_so_and_keeps_the_choice(
    reference, client, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Past FIGURES_INLINE_MAX_ITEMS the repository list is a job's: before its first list the
    select says it is being listed, and a repository chosen meanwhile stays selected."""
    from django.core.cache import cache

    study = reference.study
    settings.FIGURES_INLINE_MAX_ITEMS = 0
    cache.clear()
    monkeypatch.setattr("annotator.figures._lock_or_running", lambda *args: True)
    client.force_login(study.created_by)
    url = reverse("exports:analysis", args=[study.pk])

    page = client.get(url, {"repository": "hpcaitech/ColossalAI"}).content.decode()

    select = page[page.index('<select name="repository">') :]
    select = select[: select.index("</select>")]
    assert "listing repositories… reload for all" in select
    assert '<option value="hpcaitech/ColossalAI" selected>' in select
    assert "deepspeedai/DeepSpeed" not in select
