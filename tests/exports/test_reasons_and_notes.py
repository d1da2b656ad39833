"""Adjudication reasons and comments, and the annotators' notes, in every export format: the
long table (notes on each annotator's rows, reason and comment on the decision rows), the final
table (reason and comment) and the XLSX (notes on the annotator sheets, reason and comment on
Final), read back with pandas."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from annotator.adjudication.models import Decision
from annotator.exports.services import export_dataset
from annotator.studies.models import Annotation, Item
from tests.exports.factories import exported_world

COMMENT = 'OOM at step 3; the "crash" label = the symptom, not the cause\nsee trace'
NOTES = "unsure whether ZeRO-3 or the launcher; =SUM(A1)"

READERS = {
    "csv": lambda b: pd.read_csv(io.BytesIO(b)),
    "json": lambda b: pd.read_json(io.BytesIO(b)),
    "jsonl": lambda b: pd.read_json(io.BytesIO(b), lines=True),
    "parquet": lambda b: pd.read_parquet(io.BytesIO(b)),
}


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    world = exported_world()
    items = list(Item.objects.filter(study=world.study).order_by("position", "pk"))
    world.oom = items[1]  # adjudicated (annotator-slip) in the factory
    Decision.objects.filter(item=world.oom).update(comment=COMMENT)
    Annotation.objects.filter(
        assignment__item=world.oom, assignment__annotator=world.annotators[1]
    ).update(notes=NOTES)
    return world


def export(world, format: str, table: str = "final") -> bytes:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    export_dataset(study=world.study, format=format, out=out, table=table)
    return out.getvalue()


def text(value) -> str | None:  # type: ignore[no-untyped-def]
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else value


@pytest.mark.parametrize("format", list(READERS))
def test_long_table_carries_notes_and_the_decisions_reason_and_comment(world, format) -> None:  # type: ignore[no-untyped-def]
    frame = READERS[format](export(world, format, table="long"))
    mine = frame[frame["item_id"] == world.oom.pk]
    by_kind = {kind: rows for kind, rows in mine.groupby("row_kind")}
    noted = by_kind["annotation"]
    assert {a: {text(n) for n in rows["notes"]} for a, rows in noted.groupby("annotator")} == {
        "annotator-0": {None},
        "annotator-1": {NOTES},
    }
    decision = by_kind["decision"]
    # The final labels: relevant, oom, and the fix patterns version and config.
    assert sorted(decision["category"]) == ["config", "oom", "relevant", "version"]
    assert set(decision["reason"]) == {"annotator-slip"}
    assert set(decision["comment"]) == {COMMENT}
    assert set(decision["decision_source"]) == {"adjudicated"}
    assert {text(v) for v in frame[frame["row_kind"] == "annotation"]["reason"]} == {None}
    unanimous = frame[(frame["row_kind"] == "decision") & (frame["decision_source"] == "unanimous")]
    assert len(unanimous) and {text(v) for v in unanimous["reason"]} == {None}


@pytest.mark.parametrize("format", list(READERS))
def test_final_table_carries_reason_and_comment(world, format) -> None:  # type: ignore[no-untyped-def]
    frame = READERS[format](export(world, format))
    row = frame[frame["item_id"] == world.oom.pk].iloc[0]
    assert (row["reason"], row["comment"]) == ("annotator-slip", COMMENT)
    assert {text(v) for v in frame[frame["decision_source"] == "unanimous"]["comment"]} == {None}


def test_xlsx_carries_notes_on_annotator_sheets_and_reason_on_final(world) -> None:  # type: ignore[no-untyped-def]
    sheets = pd.read_excel(io.BytesIO(export(world, "xlsx")), sheet_name=None)
    final = sheets["Final"].set_index("item_id")
    assert (final.loc[world.oom.pk, "reason"], final.loc[world.oom.pk, "comment"]) == (
        "annotator-slip",
        COMMENT,
    )
    second = sheets["annotator-1"].set_index("item_id")
    assert second.loc[world.oom.pk, "notes"] == NOTES  # text, not a formula
    assert sheets["annotator-0"]["notes"].isna().all()


def test_a_decision_without_labels_keeps_its_reason_and_comment(world) -> None:  # type: ignore[no-untyped-def]
    last = Item.objects.filter(study=world.study).order_by("-position", "-pk").first()
    Decision.objects.create(
        item=last, source="adjudicated", reason="other", comment="out of scope", version=1
    )
    frame = READERS["csv"](export(world, "csv", table="long"))
    decision = frame[(frame["item_id"] == last.pk) & (frame["row_kind"] == "decision")]
    assert len(decision) == 1
    row = decision.iloc[0]
    assert pd.isna(row["facet"]) and (row["reason"], row["comment"]) == ("other", "out of scope")
