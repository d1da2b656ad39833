"""The Hugging Face folder and the replication package of a study, pseudonymised on request.

Both are zips written by `export_dataset` (format `huggingface` or `replication`) through the
export job, the page, the API and `manage.py export_dataset`. The folder is Parquet plus a
README.md dataset card whose YAML header `datasets.load_dataset` reads (`huggingface.py`). The
package holds that folder and everything a replication needs (`replication.py` writes it;
README.txt in it lists the files, `replication.PACKAGE_FILES`). Pseudonymised, people are study
codes (`Pseudonym`: annotators `A01`, GitHub users `U0001`, kept per study so every export uses
the same code: `pseudonym_codes.py`), and every text passes `pseudonyms.Pseudonymiser`; the
mapping stays on the server.
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db.models import QuerySet

from annotator.studies.models import Item, Study

from . import writers
from .card_facts import build_card
from .columns import LONG_TABLE_COLUMNS, final_dataset_columns
from .huggingface import HfConfig, card_header, facet_class_names, folder_readme
from .pseudonym_codes import UNKNOWN_ANNOTATOR, People, assign_pseudonyms
from .rows import Codebook, final_rows, long_rows

__all__ = ["Package", "assign_pseudonyms", "write_package"]
FINAL_TEXT = ("title", "comment")
LONG_TEXT = ("notes", "comment")


@dataclass
class Package:
    """What writing a folder or a package needs, read once."""

    study: Study
    items: QuerySet[Item]
    passing: int
    book: Codebook
    filters: dict[str, Any]
    scope: str
    license: str
    people: People | None
    count: Callable[[Iterable[dict[str, Any]]], Iterator[dict[str, Any]]]

    def text(self, value: str) -> str:
        return self.people.text(value) if self.people else value

    def value(self, value: Any) -> Any:
        return self.people.value(value) if self.people else value

    def annotator(self, username: str) -> str:
        if self.people is None:
            return username
        return self.people.annotators.get(username, UNKNOWN_ANNOTATOR)


def write_package(package: Package, out: IO[bytes], *, replication: bool) -> str:
    """Write the Hugging Face folder (or the whole replication package around it) as a zip to
    `out`; return the dataset card (the folder's README.md)."""
    top = f"study-{package.study.pk}-{'replication' if replication else 'dataset'}"
    # Under the app's TEMP_DIR: what a killed worker leaves there is removed by the job sweep.
    scratch = Path(settings.TEMP_DIR) / "packages"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="package-", dir=scratch) as tmp:
        root = Path(tmp) / top
        card = write_hf_folder(package, root / "huggingface" if replication else root)
        if replication:
            from .replication import write_replication_files

            write_replication_files(package, root)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    archive.write(path, str(path.relative_to(root.parent)))
    return card


def write_hf_folder(package: Package, folder: Path) -> str:
    """Parquet files under `folder`/data and the README.md card; returns the card."""
    (folder / "data").mkdir(parents=True)
    book = package.book
    final_columns = final_dataset_columns(book.facets)
    with (folder / "data" / "final.parquet").open("wb") as out:
        finals = writers.write_parquet(package.count(final_table(package)), final_columns, out)
    with (folder / "data" / "long.parquet").open("wb") as out:
        longs = writers.write_parquet(package.count(long_table(package)), LONG_TABLE_COLUMNS, out)
    paths: dict[str, list[tuple[str, ...]]] = {}
    for pk in sorted(book.categories, key=lambda c: book.order.get(c, c)):
        key, _, path = book.categories[pk]
        paths.setdefault(key, []).append(path)
    names = facet_class_names(book.facets, paths)  # after the rows: book knows every code
    configs = [
        HfConfig("default", "data/final.parquet", final_columns, names, finals),
        HfConfig("long", "data/long.parquet", LONG_TABLE_COLUMNS, {}, longs),
    ]
    tables = {
        "final (config default)": final_columns,
        "long (config long)": list(LONG_TABLE_COLUMNS),
    }
    card = build_card(
        study=package.study,
        items=package.items,
        book=book,
        tables=tables,
        filters=package.filters,
        scope=package.scope,
        passing=package.passing,
    )
    header = card_header(
        pretty_name=package.text(package.study.name),
        license=package.license,
        configs=configs,
        tags=["software-engineering", "bug-taxonomy", "github-issues"],
    )
    readme = folder_readme(header, package.text(card), configs)
    (folder / "README.md").write_text(readme, encoding="utf-8")
    return readme


def final_table(package: Package) -> Iterator[dict[str, Any]]:
    rows = final_rows(package.items, package.book)
    if package.people is None:
        return rows
    return iter(package.people.pseudonymiser.rows(rows, FINAL_TEXT))


def long_table(package: Package) -> Iterator[dict[str, Any]]:
    rows = long_rows(package.items, package.book)
    people = package.people
    if people is None:
        return rows
    return (
        {**row, "annotator": people.annotators.get(row["annotator"], UNKNOWN_ANNOTATOR)}
        if row.get("annotator")
        else row
        for row in people.pseudonymiser.rows(rows, LONG_TEXT)
    )
