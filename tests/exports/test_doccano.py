"""doccano text-classification JSONL exports as prior rounds: labels `facet:value` per user,
a line without labels listed as left out, a line without the data key refused naming the line
and field, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotator.exports.prior import PriorMapping
from annotator.exports.spreadsheets import SpreadsheetError
from tests.exports.test_labelstudio import URL, labels_of, nothing_written, run

pytestmark = pytest.mark.django_db


def lines(tmp_path: Path, records: list[dict[str, Any]], name: str = "export.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def doccano(**changes: Any) -> PriorMapping:
    base: dict[str, Any] = {
        "key_column": "html_url",
        "sheet_to_annotator": {},
        "column_to_facet": {"screening": "screening", "symptom": "symptom"},
        "format": "doccano",
        "data_key": "meta.html_url",
    }
    return PriorMapping(**(base | changes))


def record(pk: int, number: int, user: str, *labels: str) -> dict[str, Any]:
    return {
        "id": pk,
        "text": f"issue {number}",
        "meta": {"html_url": URL.format(number)},
        "label": list(labels),
        "user": user,
    }


def test_a_doccano_export_imports_label_by_label(tmp_path: Path) -> None:
    path = lines(
        tmp_path,
        [
            record(1, 1, "alice", "screening:Relevant", "symptom:Hang"),
            record(2, 1, "bob", "screening:Relevant", "symptom:Out of memory"),
            record(3, 2, "alice", "screening:Not a bug"),
            record(4, 2, "bob"),  # no labels: left out, listed
        ],
    )
    result = run(path, doccano())
    found = {(who, n): labels for (who, n), labels in labels_of(result.study).items()}
    assert len(found) == 3 and result.annotations == 3
    assert sorted(found.values(), key=str) == sorted(
        [
            {"screening": ["relevant"], "symptom": ["hang"]},
            {"screening": ["relevant"], "symptom": ["oom"]},
            {"screening": ["not-a-bug"]},
        ],
        key=str,
    )
    assert result.round.prior_import["format"] == "doccano"
    assert any(s["reason"] == "no labels" for s in result.round.prior_import["skipped"])


def test_a_line_without_the_data_key_is_refused_naming_it(tmp_path: Path) -> None:
    bad = record(2, 1, "bob", "screening:Relevant")
    del bad["meta"]
    path = lines(tmp_path, [record(1, 1, "alice", "screening:Relevant"), bad])
    with pytest.raises(SpreadsheetError, match=r"line 2.*meta\.html_url"):
        run(path, doccano())
    assert nothing_written()
