"""The Hugging Face folder: `datasets.load_dataset` reads it offline, with the codebook's codes
as the class labels of the facet columns and the database's decisions as the rows."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.adjudication.models import DecisionLabel
from annotator.exports.columns import FacetSpec
from annotator.exports.huggingface import facet_class_names
from annotator.exports.services import export_dataset
from annotator.studies.models import Item
from taxonomy_app.models import Category, Facet
from tests.exports.factories import exported_world

pytestmark = pytest.mark.django_db


LOADER = """
import json, sys
import datasets

d = datasets.load_dataset(sys.argv[1], *sys.argv[3:], cache_dir=sys.argv[2])["train"]

def names(f):
    inner = getattr(f, "feature", None)
    return getattr(f, "names", None) or getattr(inner, "names", None)

def decode(f, v):
    inner = getattr(f, "feature", None)
    if v is None:
        return v
    if isinstance(f, datasets.ClassLabel):
        return f.int2str(v)
    if isinstance(inner, datasets.ClassLabel):
        return [inner.int2str(x) for x in v]
    return v

rows = d.to_list()
print(json.dumps({
    "features": {k: (type(f).__name__, names(f)) for k, f in d.features.items()},
    "rows": rows,
    "decoded": [{k: decode(d.features[k], v) for k, v in r.items()} for r in rows],
}, default=str))
"""


def load(folder: Path, tmp_path: Path, config: str | None = None) -> Any:
    """load_dataset in a fresh process, offline, with its cache under tmp_path: the library
    reads HF_* variables at import."""
    code = LOADER
    env = {
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf-home"),
        "PATH": "/usr/bin:/bin",
    }
    args = [sys.executable, "-c", code, str(folder), str(tmp_path / "hf-cache")]
    done = subprocess.run(
        args + ([config] if config else []), env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    return json.loads(done.stdout.splitlines()[-1])


def unzip(data: bytes, into: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(into)
    (top,) = list(into.iterdir())
    return top


def test_the_folder_loads_with_load_dataset_with_the_codebook_as_class_labels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    world = exported_world()
    out = io.BytesIO()
    result = export_dataset(study=world.study, format="huggingface", out=out)
    folder = unzip(out.getvalue(), tmp_path / "unzipped")
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == [
        "README.md",
        "final.parquet",
        "long.parquet",
    ]
    readme = (folder / "README.md").read_text()
    assert readme == result.card
    header = yaml.safe_load(readme.split("---\n")[1])
    assert header["license"] == "cc-by-4.0"
    assert [c["config_name"] for c in header["configs"]] == ["default", "long"]

    loaded = load(folder, tmp_path)
    features = loaded["features"]
    for facet in Facet.objects.filter(version=world.version):
        codes = list(
            Category.objects.filter(facet=facet)
            .order_by("order", "pk")
            .values_list("code", flat=True)
        )
        column = facet.key.replace("-", "_")
        if facet.kind == Facet.Kind.MULTI:
            assert features[column][0] in ("List", "Sequence") and features[column][1] == codes
        elif any(Category.objects.filter(facet=facet, parent__isnull=False)):
            tops = Category.objects.filter(facet=facet, parent__isnull=True)
            inner = [c for c in codes if c in set(tops.values_list("code", flat=True))]
            assert features[f"{column}_l1"] == ["ClassLabel", inner]
            assert features[f"{column}_l2"] == ["ClassLabel", [c for c in codes if c not in inner]]
        else:
            assert features[column] == ["ClassLabel", codes]
    # Every decision of the database, decoded from the class indices.
    decoded = {row["item_id"]: row for row in loaded["decoded"]}
    assert set(decoded) == set(Item.objects.filter(study=world.study).values_list("pk", flat=True))
    final: dict[int, dict[str, list[str]]] = {}
    for item, key, code in DecisionLabel.objects.filter(
        decision__item__study=world.study
    ).values_list("decision__item_id", "facet__key", "category__code"):
        final.setdefault(item, {}).setdefault(key, []).append(code)
    checked_levels = False
    for item, row in decoded.items():
        for facet in Facet.objects.filter(version=world.version):
            column = facet.key.replace("-", "_")
            chosen = final.get(item, {}).get(facet.key, [])
            if facet.kind == Facet.Kind.MULTI:
                assert sorted(row[column] or []) == sorted(chosen), (item, facet.key)
            elif column in row:
                assert row[column] == (chosen[0] if chosen else None), (item, facet.key)
            else:  # hierarchical: the deepest level given is the chosen leaf
                value = row[f"{column}_l2"] or row[f"{column}_l1"]
                assert value == (chosen[0] if chosen else None), (item, facet.key)
                checked_levels = True
    assert checked_levels
    long = load(folder, tmp_path, "long")
    assert {r["annotator"] for r in long["rows"] if r["row_kind"] == "annotation"} == {
        "annotator-0",
        "annotator-1",
    }


def test_class_names_follow_the_levels_of_a_hierarchy() -> None:
    facets = [
        FacetSpec("symptom", "Symptom", "single", 2),
        FacetSpec("fix-pattern", "Fix", "multi"),
        FacetSpec("stage", "Stage"),
    ]
    paths = {
        "symptom": [("crash",), ("crash", "oom"), ("hang",), ("crash", "segv")],
        "fix-pattern": [("config",), ("version",)],
        "stage": [("init",)],
    }
    assert facet_class_names(facets, paths) == {
        "symptom_l1": ["crash", "hang"],
        "symptom_l2": ["oom", "segv"],
        "fix_pattern": ["config", "version"],
        "stage": ["init"],
    }


def test_the_command_writes_the_folder_load_dataset_reads(tmp_path: Path) -> None:
    world = exported_world()
    folder = tmp_path / "dataset"
    printed = io.StringIO()
    call_command(
        "export_dataset",
        str(world.study.pk),
        "--format",
        "huggingface",
        "--unpack",
        "--out",
        str(folder),
        stdout=printed,
    )
    assert f"to the folder {folder}" in printed.getvalue()
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "README.md",
        "data/final.parquet",
        "data/long.parquet",
    ]
    assert len(load(folder, tmp_path)["rows"]) == Item.objects.filter(study=world.study).count()
    # no zip or partial file left beside it
    assert {p.name for p in tmp_path.iterdir()} <= {"dataset", "hf-home", "hf-cache"}
    with pytest.raises(CommandError, match="exists and is not an empty folder"):
        call_command(
            "export_dataset",
            str(world.study.pk),
            "--format",
            "huggingface",
            "--unpack",
            "--out",
            str(folder),
        )
    with pytest.raises(CommandError, match="'csv' is one file"):
        call_command(
            "export_dataset",
            str(world.study.pk),
            "--format",
            "csv",
            "--unpack",
            "--out",
            str(tmp_path / "other"),
        )
    assert not (tmp_path / "other").exists()
