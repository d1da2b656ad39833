"""The Hugging Face dataset folder (pure: no Django; plain data in, text out).

A folder `datasets.load_dataset(folder)` reads without code: the tables as Parquet under
`data/`, and a `README.md` dataset card whose YAML header declares them —

    license       the licence of the labels (an id from the Hub's list: cc-by-4.0, …)
    configs       one per table, each a `train` split of one Parquet file; the final dataset
                  is the `default` config, the long table `long`
    dataset_info  per config, `features` with every column's type: a facet's columns are
                  ClassLabel (`class_label.names`, the codebook's category codes at that level,
                  in codebook order) and a multi-choice facet a sequence of ClassLabel; the
                  other columns map from the export's column kinds (DTYPES)

`load_dataset` casts the Parquet strings to class indices through those names (a value not
among them fails the load, so the names are taken after the rows are written); the card's body
(the export's dataset card) lists each code's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from annotator.exports.columns import Column, FacetSpec, column_base

DTYPES = {
    "int": "int64",
    "float": "float64",
    "bool": "bool",
    "str": "string",
    "timestamp": "timestamp[us, tz=UTC]",
}
# The licences offered for the labels (ids from the Hugging Face Hub's list).
LICENSES = (
    ("cc-by-4.0", "CC BY 4.0"),
    ("cc-by-sa-4.0", "CC BY-SA 4.0"),
    ("cc0-1.0", "CC0 1.0 (public domain)"),
    ("odc-by", "ODC-By"),
    ("cc-by-nc-4.0", "CC BY-NC 4.0"),
    ("other", "other (say which in the card)"),
)
SPLIT = "train"


@dataclass(frozen=True)
class HfConfig:
    """One table of the folder: its config name, its Parquet file (relative to the folder),
    its columns, the ClassLabel names of its facet columns and its row count."""

    name: str
    path: str
    columns: Sequence[Column]
    class_names: Mapping[str, Sequence[str]]
    rows: int


def facet_class_names(
    facets: Sequence[FacetSpec], paths: Mapping[str, Sequence[Sequence[str]]]
) -> dict[str, list[str]]:
    """Column name → ClassLabel names for the final dataset's facet columns.

    `paths` maps a facet key to its categories' code paths from the top level down, in
    codebook order. A flat or multi-choice facet's column takes every code; a hierarchical
    facet's `<facet>_l<n>` takes the codes at depth n.
    """
    out: dict[str, list[str]] = {}
    for facet in facets:
        base, found = column_base(facet.key), paths.get(facet.key, ())
        if facet.kind == "multi" or facet.levels <= 1:
            out[base] = _unique(path[-1] for path in found)
            continue
        for level in range(1, facet.levels + 1):
            deep = (path[level - 1] for path in found if len(path) >= level)
            out[f"{base}_l{level}"] = _unique(deep)
    return out


def _unique(codes: Any) -> list[str]:
    return list(dict.fromkeys(str(code) for code in codes))


def feature(column: Column, names: Sequence[str] | None = None) -> dict[str, Any]:
    """One entry of `dataset_info.features`."""
    if names is not None:
        label = {"class_label": {"names": {str(i): name for i, name in enumerate(names)}}}
        if column.kind == "list":
            return {"name": column.name, "sequence": label}
        return {"name": column.name, "dtype": label}
    if column.kind == "list":
        return {"name": column.name, "sequence": "string"}
    return {"name": column.name, "dtype": DTYPES[column.kind]}


def size_category(rows: int) -> str:
    """The Hub's size bucket of a dataset of `rows` examples."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "n>1M"


def card_header(
    *, pretty_name: str, license: str, configs: Sequence[HfConfig], tags: Sequence[str] = ()
) -> str:
    """The YAML front matter of the folder's README.md (between `---` lines)."""
    header: dict[str, Any] = {
        "pretty_name": pretty_name,
        "license": license,
        "language": ["en"],
        "task_categories": ["text-classification"],
        "tags": list(tags),
        "size_categories": [size_category(configs[0].rows if configs else 0)],
        "configs": [
            {
                "config_name": config.name,
                "data_files": [{"split": SPLIT, "path": config.path}],
                **({"default": True} if config.name == "default" else {}),
            }
            for config in configs
        ],
        "dataset_info": [
            {
                "config_name": config.name,
                "features": [
                    feature(column, config.class_names.get(column.name))
                    for column in config.columns
                ],
            }
            for config in configs
        ],
    }
    text = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{text}---\n"


def folder_readme(header: str, card: str, configs: Sequence[HfConfig]) -> str:
    """The README.md: the YAML header, the dataset card, then how to load the folder."""
    lines = [
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        'final = load_dataset("path/to/this/folder")  # the final dataset, split "train"',
        *(
            f'{config.name} = load_dataset("path/to/this/folder", "{config.name}")'
            for config in configs
            if config.name != "default"
        ),
        "```",
        "",
        "Facet columns load as class indices (`ClassLabel`); "
        '`final["train"].features["<column>"].names` gives the category codes, and the '
        "Categories section below their names. Files: "
        + ", ".join(f"`{c.path}` ({c.name}, {c.rows} rows)" for c in configs)
        + ".",
        "",
    ]
    return header + "\n" + card + "\n".join(lines) + "\n"
