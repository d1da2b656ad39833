"""Every export format carries the annotators' "unsure" marks: the final table lists the facets
marked unsure on each item, the long table flags each label (and gives a facet marked unsure
without a choice a row of its own), the XLSX annotator sheets have `<facet>_unsure`."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from annotator.exports.services import export_dataset
from annotator.studies.models import Annotation, Item
from tests.exports.factories import exported_world


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    world = exported_world()
    items = list(Item.objects.filter(study=world.study).order_by("position", "pk"))
    first, last = items[0], items[-1]
    mark(first, world.annotators[0], ["symptom"])  # chose hang, unsure of it
    mark(last, world.annotators[1], ["fix"])  # chose no fix pattern, unsure which
    world.marked = {first.pk: ["symptom"], last.pk: ["fix"]}
    return world


def mark(item, annotator, keys) -> None:  # type: ignore[no-untyped-def]
    updated = Annotation.objects.filter(
        assignment__item=item, assignment__annotator=annotator
    ).update(unsure=keys)
    assert updated == 1


def export(world, format: str, table: str = "final") -> bytes:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    export_dataset(study=world.study, format=format, out=out, table=table)
    return out.getvalue()


READERS = {
    "csv": lambda b: pd.read_csv(io.BytesIO(b)),
    "json": lambda b: pd.read_json(io.BytesIO(b)),
    "jsonl": lambda b: pd.read_json(io.BytesIO(b), lines=True),
    "parquet": lambda b: pd.read_parquet(io.BytesIO(b)),
    "xlsx": lambda b: pd.read_excel(io.BytesIO(b), sheet_name="Final"),
}


def as_list(value) -> list[str]:  # type: ignore[no-untyped-def]
    """A list cell as each format reads back: `;`-joined text (CSV, XLSX), an array, or NaN."""
    if isinstance(value, str):
        return value.split(";")
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    return list(value)


@pytest.mark.parametrize("format", list(READERS))
def test_final_table_lists_the_facets_marked_unsure_per_item(world, format) -> None:  # type: ignore[no-untyped-def]
    frame = READERS[format](export(world, format))
    got = {int(row.item_id): as_list(row.unsure) for row in frame.itertuples()}
    assert got == {pk: world.marked.get(pk, []) for pk in got}
    assert len(got) == 5


@pytest.mark.parametrize("format", ["csv", "json", "jsonl", "parquet"])
def test_long_table_flags_unsure_labels_and_keeps_an_unsure_facet_without_a_choice(
    world, format
) -> None:  # type: ignore[no-untyped-def]
    frame = READERS[format](export(world, format, table="long"))
    frame = frame[frame["row_kind"] == "annotation"]
    # 23 labels (test_export_service), and the row of the fix pattern marked unsure unchosen.
    assert len(frame) == 24
    flagged = frame[frame["unsure"].astype(bool)]
    rows = sorted(
        (int(r.item_id), r.annotator, r.facet, None if pd.isna(r.category) else r.category)
        for r in flagged.itertuples()
    )
    first, last = sorted(world.marked)
    assert rows == [(first, "annotator-0", "symptom", "hang"), (last, "annotator-1", "fix", None)]


def test_jsonl_long_rows_carry_a_boolean(world) -> None:  # type: ignore[no-untyped-def]
    lines = [json.loads(line) for line in export(world, "jsonl", table="long").splitlines()]
    assert {type(line["unsure"]) for line in lines} == {bool}
    assert sum(line["unsure"] for line in lines) == 2


def test_xlsx_annotator_sheets_have_an_unsure_column_per_facet(world) -> None:  # type: ignore[no-untyped-def]
    sheets = pd.read_excel(io.BytesIO(export(world, "xlsx")), sheet_name=None)
    first, last = sorted(world.marked)
    for sheet, (item, facet) in (
        ("annotator-0", (first, "symptom")),
        ("annotator-1", (last, "fix")),
    ):
        frame = sheets[sheet]
        assert {"screening_unsure", "symptom_unsure", "fix_unsure"} <= set(frame.columns)
        marked = [
            (int(r["item_id"]), name.removesuffix("_unsure"))
            for _, r in frame.iterrows()
            for name in ("screening_unsure", "symptom_unsure", "fix_unsure")
            if bool(r[name])
        ]
        assert marked == [(item, facet)]
