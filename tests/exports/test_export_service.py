"""The export service, command and job on PostgreSQL: what pandas reads back, filters, the card,
and a failed export that offers nothing."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotator.exports.rows import ExportFilterError
from annotator.exports.services import export_dataset, run_export_job, start_export_job
from tests.exports.factories import exported_world


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    return exported_world()


def export(world, format: str = "csv", **options) -> tuple[bytes, str]:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    result = export_dataset(study=world.study, format=format, out=out, **options)
    return out.getvalue(), result.card


def test_final_dataset_csv_has_one_row_per_item_with_levels_and_sets(world) -> None:  # type: ignore[no-untyped-def]
    data, card = export(world)
    frame = pd.read_csv(io.BytesIO(data))
    assert list(frame.columns) == [
        "item_id",
        "round",
        "repository",
        "number",
        "url",
        "title",
        "screening",
        "symptom_l1",
        "symptom_l2",
        "fix",
        "unsure",
        "decision_source",
        "decided_at",
        "reason",
        "comment",
        "confidence",
    ]
    assert len(frame) == 5
    hang = frame[frame["symptom_l2"] == "hang"].iloc[0]
    assert (hang["symptom_l1"], hang["fix"], hang["decision_source"]) == (
        "failure",
        "config",
        "unanimous",
    )
    oom = frame[frame["symptom_l2"] == "oom"].iloc[0]
    assert oom["fix"] == "version;config"
    slow = frame[frame["symptom_l1"] == "slow"].iloc[0]
    assert pd.isna(slow["symptom_l2"])  # a top-level choice leaves level 2 empty
    undecided = frame[frame["decision_source"].isna()]
    assert len(undecided) == 1 and undecided.iloc[0]["repository"] == "microsoft/DeepSpeed"
    assert "Small bugs, version 1" in card and "| items exported | 5 |" in card


@pytest.mark.parametrize("format", ["json", "jsonl", "parquet"])
def test_every_format_reads_back_alike(world, format: str) -> None:  # type: ignore[no-untyped-def]
    data, _ = export(world, format)
    reader = {
        "json": pd.read_json,
        "jsonl": lambda b: pd.read_json(b, lines=True),
        "parquet": pd.read_parquet,
    }[format]
    frame = reader(io.BytesIO(data))
    assert len(frame) == 5
    fixes = sorted(tuple(v) for v in frame["fix"] if v is not None and len(v))
    assert fixes == [("config",), ("version",), ("version", "config")]
    if format == "parquet":
        assert str(frame["item_id"].dtype) == "Int64"
        assert str(frame["decided_at"].dtype) == "datetime64[us, UTC]"


def test_long_table_has_one_row_per_label(world) -> None:  # type: ignore[no-untyped-def]
    data, _ = export(world, table="long")
    everything = pd.read_csv(io.BytesIO(data))
    frame = everything[everything["row_kind"] == "annotation"]
    # Labels per item (annotator-0 + annotator-1): 3 + 3, 4 + 3, 2 + 3, 1 + 1, 2 + 1.
    assert len(frame) == 23
    assert set(frame["annotator"]) == {"annotator-0", "annotator-1"}
    # Then the final labels of the four decisions: 3, 4, 3 and 1, no annotator.
    decided = everything[everything["row_kind"] == "decision"]
    assert len(decided) == 11 and decided["annotator"].isna().all()
    assert set(decided["decision_source"]) == {"unanimous", "adjudicated"}
    hang = frame[frame["category"] == "hang"]
    assert set(hang["category_l1"]) == {"failure"} and set(hang["facet"]) == {"symptom"}
    assert set(frame["codebook_version"]) == {1}


def test_xlsx_has_a_sheet_per_annotator_and_final(world) -> None:  # type: ignore[no-untyped-def]
    data, _ = export(world, "xlsx")
    sheets = pd.read_excel(io.BytesIO(data), sheet_name=None)
    assert list(sheets) == ["annotator-0", "annotator-1", "Final", "Disagreements"]
    assert len(sheets["annotator-0"]) == 5 and "seconds_spent" in sheets["annotator-0"]
    assert len(sheets["Final"]) == 5


@pytest.mark.parametrize(
    ("filters", "rows"),
    [
        ({"source": "adjudicated"}, 2),
        ({"source": "unanimous"}, 2),
        ({"screening": "not-a-bug"}, 1),
        ({"repository": "microsoft/DeepSpeed"}, 1),
        ({"round": 1}, 5),
        ({"round": 2}, 0),
    ],
)
def test_filters(world, filters, rows) -> None:  # type: ignore[no-untyped-def]
    data, card = export(world, filters=filters)
    assert len(pd.read_csv(io.BytesIO(data))) == rows
    assert f"| items exported | {rows} |" in card


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"source": "vote"}, "filter 'source': 'vote' is not one of"),
        ({"repository": "no/such"}, "filter 'repository': no repository 'no/such'"),
        ({"colour": "red"}, "unknown filters ['colour']"),
        ({"round": "first"}, "filter 'round': 'first' is not a round number"),
    ],
)
def test_bad_filters_are_named(world, filters, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ExportFilterError, match=re.escape(message)):
        export(world, filters=filters)


def test_command_writes_the_file_and_its_card(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "final.parquet"
    stdout = io.StringIO()
    call_command(
        "export_dataset",
        str(world.study.pk),
        "--format",
        "parquet",
        "--out",
        str(out),
        stdout=stdout,
    )
    assert stdout.getvalue().strip() == f"wrote 5 rows to {out}"
    assert len(pd.read_parquet(out)) == 5
    assert (tmp_path / "final.parquet.md").read_text().startswith("# Study: dataset")


def test_command_refuses_bad_input_and_leaves_no_file(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "final.csv"
    with pytest.raises(CommandError, match="filter 'source'"):
        call_command(
            "export_dataset",
            str(world.study.pk),
            "--format",
            "csv",
            "--out",
            str(out),
            "--source",
            "vote",
        )
    with pytest.raises(CommandError, match="no study 'Nope'"):
        call_command("export_dataset", "Nope", "--format", "csv", "--out", str(out))
    assert list(tmp_path.iterdir()) == []


def test_job_stores_the_file_and_card(world, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    job = start_export_job(
        study=world.study, format="jsonl", filters={"source": "unanimous"}, user=world.owner
    )
    run_export_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert (job.rows_written, job.total_rows, job.percent) == (2, 2, 100)
    assert len(pd.read_json(job.file.path, lines=True)) == 2
    assert job.size_bytes == Path(job.file.path).stat().st_size
    assert "source = unanimous" in job.card


def test_a_failed_job_offers_no_file(world, settings, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    from annotator.exports import writers

    def broken(rows, columns, out):  # type: ignore[no-untyped-def]
        out.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setitem(
        __import__("annotator.exports.services").exports.services.TEXT_WRITERS, "csv", broken
    )
    job = start_export_job(study=world.study, format="csv", user=world.owner)
    with pytest.raises(OSError):
        run_export_job(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.file.name) == ("failed", "")
    assert "OSError: disk full" in job.error
    assert not any(tmp_path.rglob("*.csv"))
    assert writers.write_csv is not broken
