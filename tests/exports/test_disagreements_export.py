"""The disagreements export: exactly the items whose annotators differ, or that an unsure mark
sent to adjudication, each annotator's labels per facet beside the decision, its source,
reason and comment, in every format (CSV, JSON, JSONL, Parquet, and a sheet of the XLSX)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from annotator.adjudication.models import Decision, ItemAgreement
from annotator.exports.services import export_dataset, total_rows
from annotator.studies.models import Item, Study
from tests.exports.factories import LABELS, exported_world

READERS = {
    "csv": lambda b: pd.read_csv(io.BytesIO(b)),
    "json": lambda b: pd.read_json(io.BytesIO(b)),
    "jsonl": lambda b: pd.read_json(io.BytesIO(b), lines=True),
    "parquet": lambda b: pd.read_parquet(io.BytesIO(b)),
    "xlsx": lambda b: pd.read_excel(io.BytesIO(b), sheet_name="Disagreements"),
}


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    world = exported_world()
    world.items = list(Item.objects.filter(study=world.study).order_by("position", "pk"))
    Decision.objects.filter(item=world.items[1]).update(comment="the crash is the OOM")
    return world


def export(world, format: str, **options) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    table = {} if format == "xlsx" else {"table": "disagreements"}
    export_dataset(study=world.study, format=format, out=out, **table, **options)
    return READERS[format](out.getvalue())


def codes(value) -> list[str]:  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        return value.split(";")
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    return list(value)


def differing(world) -> set[int]:  # type: ignore[no-untyped-def]
    """The items whose two annotators' labels (the factory's LABELS) are not the same."""
    return {item.pk for item, row in zip(world.items, LABELS, strict=True) if row[0] != row[1]}


@pytest.mark.parametrize("format", list(READERS))
def test_lists_exactly_the_disagreeing_items_with_each_annotators_labels(world, format) -> None:  # type: ignore[no-untyped-def]
    frame = export(world, format)
    assert set(frame["item_id"]) == differing(world) and len(frame) == 3
    oom = frame[frame["item_id"] == world.items[1].pk].iloc[0]
    assert (oom["symptom_by_annotator-0"], oom["symptom_by_annotator-1"]) == ("oom", "crash")
    assert oom["symptom_final"] == "oom"
    assert sorted(codes(oom["fix_by_annotator-0"])) == ["config", "version"]
    assert codes(oom["fix_by_annotator-1"]) == ["version"]
    assert sorted(codes(oom["disagreeing"])) == ["fix", "symptom"]
    assert (oom["decision_source"], oom["reason"], oom["comment"]) == (
        "adjudicated",
        "annotator-slip",
        "the crash is the OOM",
    )
    waiting = frame[frame["item_id"] == world.items[4].pk].iloc[0]
    assert (waiting["screening_by_annotator-0"], waiting["screening_by_annotator-1"]) == (
        "relevant",
        "not-a-bug",
    )
    assert pd.isna(waiting["decision_source"]) and pd.isna(waiting["screening_final"])


def test_an_item_sent_to_adjudication_by_an_unsure_mark_is_listed(world) -> None:  # type: ignore[no-untyped-def]
    agreed = world.items[0]  # unanimous: hang, config
    ItemAgreement.objects.filter(item=agreed).update(unsure_facets=["symptom"])
    frame = export(world, "csv")
    assert set(frame["item_id"]) == differing(world) | {agreed.pk}
    row = frame[frame["item_id"] == agreed.pk].iloc[0]
    assert row["unsure"] == "symptom" and pd.isna(row["disagreeing"])
    assert row["symptom_by_annotator-0"] == row["symptom_by_annotator-1"] == "hang"
    # A study that does not send unsure labels to adjudication lists it no more.
    Study.objects.filter(pk=world.study.pk).update(route_unsure_to_adjudication=False)
    world.study.refresh_from_db()
    assert set(export(world, "csv")["item_id"]) == differing(world)


def test_decided_only_and_the_progress_total(world) -> None:  # type: ignore[no-untyped-def]
    frame = export(world, "csv", scope="decided")
    assert set(frame["item_id"]) == differing(world) - {world.items[4].pk}
    assert total_rows(study=world.study, table="disagreements", format="csv", filters={}) == 3


def test_disagreement_columns_are_pinned() -> None:
    from annotator.exports.columns import FacetSpec, disagreement_columns

    facets = [
        FacetSpec("symptom", "Symptom", "single", 2),
        FacetSpec("fix-pattern", "Fix", "multi"),
    ]
    columns = disagreement_columns(facets, ["alice", "bob"])
    assert [c.name for c in columns][5:] == [
        "title",
        "agreement",
        "disagreeing",
        "unsure",
        "symptom_by_alice",
        "symptom_by_bob",
        "symptom_final",
        "fix_pattern_by_alice",
        "fix_pattern_by_bob",
        "fix_pattern_final",
        "decision_source",
        "reason",
        "comment",
        "decided_at",
    ]
    kinds = {c.name: c.kind for c in columns}
    assert (kinds["symptom_by_bob"], kinds["fix_pattern_final"]) == ("str", "list")
