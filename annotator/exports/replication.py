"""The replication package's files beside the Hugging Face folder (`package.py` zips them):
the data as CSV, the issues, the codebook versions, agreement runs, the methods paragraph,
selections, rounds, CITATION.cff and README.txt (listing `PACKAGE_FILES`)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.template.loader import render_to_string
from django.utils import timezone

from annotator.agreement.labels import FacetTable, load_label_table
from annotator.agreement.models import AgreementRun
from annotator.issues.models import Issue, IssueComment
from annotator.studies.models import Annotation, Item, Membership, Selection, Study
from taxonomy_app.models import CodebookVersion

from . import writers
from .columns import LONG_TABLE_COLUMNS, Column, final_dataset_columns
from .columns import iso as _iso
from .dataset import methods_facts
from .methods import methods_latex, methods_markdown
from .package import Package, final_table, long_table
from .pseudonym_codes import UNKNOWN_ANNOTATOR, People
from .rows import CHUNK

PACKAGE_FILES = (
    ("README.txt", "this list"),
    ("CITATION.cff", "how to cite the dataset (Citation File Format 1.2.0)"),
    ("huggingface/", "the dataset as a Hugging Face folder: load_dataset('huggingface')"),
    (
        "huggingface/README.md",
        "the dataset card: YAML header (licence, features, configs), "
        "counts, agreement, design, columns, categories",
    ),
    ("huggingface/data/final.parquet", "the final dataset, one row per issue"),
    ("huggingface/data/long.parquet", "the long table, one row per label given"),
    ("data/final.csv", "the final dataset as CSV"),
    ("data/long.csv", "the long table as CSV"),
    ("data/issues.jsonl", "the exported issues: title, body, author, labels and comments"),
    (
        "codebook/",
        "each codebook version the study used: JSON, YAML, REFI-QDA (.qdc, for "
        "ATLAS.ti, MAXQDA, NVivo, QualCoder) and the guideline as HTML",
    ),
    ("agreement/run-N.json", "an agreement run: its inputs, conventions and stored result"),
    (
        "agreement/run-N-FACET.csv",
        "the run's units x raters table of one facet, as the "
        "labels stand now (run-N.json says whether it still hashes to the run's)",
    ),
    ("methods.md, methods.tex", "the methods paragraph"),
    ("selections.json", "how the issues were selected: filters, samples, seeds, strata"),
    ("rounds.json", "the rounds, and what each prior-label import left out"),
)


def write_replication_files(package: Package, root: Path) -> None:
    """Everything of the package beside the Hugging Face folder."""
    data = root / "data"
    data.mkdir(parents=True)
    with (data / "final.csv").open("wb") as out:
        final_columns = final_dataset_columns(package.book.facets)
        writers.write_csv(package.count(final_table(package)), final_columns, out)
    with (data / "long.csv").open("wb") as out:
        writers.write_csv(package.count(long_table(package)), LONG_TABLE_COLUMNS, out)
    _write_lines(data / "issues.jsonl", (package.value(i) for i in _issues(package.items)))
    _write_codebooks(package, root / "codebook")
    _write_agreement(package, root / "agreement")
    facts = methods_facts(package.study)
    (root / "methods.md").write_text(package.text(methods_markdown(facts)), encoding="utf-8")
    (root / "methods.tex").write_text(package.text(methods_latex(facts)), encoding="utf-8")
    _write_json(root / "selections.json", package.value(_selections(package.study)))
    _write_json(root / "rounds.json", package.value(_rounds(package.study, package.people)))
    (root / "CITATION.cff").write_text(citation(package), encoding="utf-8")
    (root / "README.txt").write_text(readme_text(package, root), encoding="utf-8")


def iso(value: Any) -> str | None:
    return None if value is None else _iso(value)


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _issues(items: QuerySet[Item]) -> Iterator[dict[str, Any]]:
    """Each exported item's issue with its comments, in item order, a chunk at a time."""
    fields = ("pk", "issue_id", "issue__repository__owner", "issue__repository__name")
    heads = items.order_by("pk").values_list(*fields).iterator(chunk_size=CHUNK)
    while chunk := list(itertools.islice(heads, 500)):
        issues = Issue.objects.in_bulk([h[1] for h in chunk])
        comments: dict[int, list[dict[str, Any]]] = {}
        for c in IssueComment.objects.filter(issue_id__in=issues).order_by("created_at", "pk"):
            comments.setdefault(c.issue_id, []).append(
                {"author": c.author, "created_at": iso(c.created_at), "body": c.body}
            )
        for item_id, issue_id, owner, name in chunk:
            issue = issues[issue_id]
            yield {
                "item_id": item_id,
                "repository": f"{owner}/{name}",
                "number": issue.number,
                "url": issue.html_url,
                "title": issue.title,
                "state": issue.state,
                "author": issue.author,
                "created_at": iso(issue.created_at),
                "closed_at": iso(issue.closed_at),
                "labels": issue.labels,
                "body": issue.body,
                "comments": comments.get(issue_id, []),
            }


def package_versions(study: Study) -> list[CodebookVersion]:
    """The codebook versions the study used: its own, its submitted annotations' and its
    agreement runs'."""
    ids = {study.codebook_version_id}
    submitted = Annotation.objects.filter(
        assignment__item__study=study, status=Annotation.Status.SUBMITTED
    )
    ids |= set(submitted.values_list("codebook_version_id", flat=True).distinct())
    runs = AgreementRun.objects.filter(study=study)
    ids |= set(runs.values_list("codebook_version_id", flat=True).distinct())
    return list(CodebookVersion.objects.filter(pk__in=ids).select_related("codebook"))


def _write_codebooks(package: Package, folder: Path) -> None:
    from taxonomy_app.services import export_version

    folder.mkdir(parents=True)
    for version in sorted(package_versions(package.study), key=lambda v: v.number):
        stem = f"{version.codebook.slug}-v{version.number}"
        for fmt in ("json", "yaml", "qdc"):
            text = export_version(version=version, fmt=fmt)
            (folder / f"{stem}.{fmt}").write_text(package.text(text), encoding="utf-8")
        context = {"version": version, "codebook": version.codebook, "trees": guideline(version)}
        html = render_to_string("exports/package_guideline.html", context)
        (folder / f"{stem}-guideline.html").write_text(package.text(html), encoding="utf-8")


def guideline(version: CodebookVersion) -> list[dict[str, Any]]:
    """Each facet with its active categories in tree order (a parent before its children,
    siblings by order; `depth` from 0) and its label rules in words, as the printable guideline
    page (taxonomy_app/views.py version_guideline) shows them."""
    from taxonomy_app.services.rules import facet_infos, rule_texts, version_rules

    facets = list(version.facets.prefetch_related("categories").order_by("order", "pk"))
    categories = [c for f in facets for c in f.categories.all()]
    texts = rule_texts(version_rules(version), facet_infos(facets, categories))
    trees = []
    for facet in facets:
        rows = [row for row in _tree_rows(list(facet.categories.all())) if not row[0].archived]
        found = [{"category": category, "depth": depth} for category, depth in rows]
        trees.append({"facet": facet, "rows": found, "rules": texts[facet.key]})
    return trees


def _tree_rows(categories: list[Any]) -> list[tuple[Any, int]]:
    """(category, depth) in tree order: each parent before its children, siblings by order."""
    children: dict[int | None, list[Any]] = {}
    for category in sorted(categories, key=lambda c: (c.order, c.pk)):
        children.setdefault(category.parent_id, []).append(category)
    rows: list[tuple[Any, int]] = []
    stack = [(c, 0) for c in reversed(children.get(None, []))]
    while stack:
        category, depth = stack.pop()
        rows.append((category, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(category.pk, []))]
    return rows


def _write_agreement(package: Package, folder: Path) -> None:
    folder.mkdir(parents=True)
    runs = AgreementRun.objects.filter(study=package.study).latest_per_round()
    for run in runs:
        record, tables = _run_record(run)
        _write_json(folder / f"run-{run.pk}.json", package.value(record))
        for key, (header, rows) in tables.items():
            header = [package.annotator(h) if i else h for i, h in enumerate(header)]
            path = folder / f"run-{run.pk}-{key}.csv"
            columns = [Column(h, "str") for h in header]
            with path.open("wb") as out:
                writers.write_csv((dict(zip(header, r, strict=True)) for r in rows), columns, out)


def _run_record(run: AgreementRun) -> tuple[dict[str, Any], dict[str, Any]]:
    table = load_label_table(
        study_id=run.study_id,
        version=run.codebook_version,
        round_id=run.round_id,
        facet_keys=run.facets,
    )
    usernames = [r["username"] for r in table.raters]
    tables = {f.key: (["item_id", *usernames], _ratings_rows(f)) for f in table.facets}
    stored = (run.inputs or {}).get("label_table_sha256")
    record = {
        "run": run.pk,
        "scope": run.scope,
        "round": run.round.number if run.round else None,
        "facets": run.facets,
        "codebook_version": run.codebook_version.number,
        "trigger": run.trigger,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
        "inputs": run.inputs,
        "conventions": (run.result or {}).get("conventions"),
        "result": run.result,
        "ratings_tables": {
            "files": [f"run-{run.pk}-{key}.csv" for key in tables],
            "label_table_sha256_now": table.digest,
            "same_labels_as_the_run": stored == table.digest,
            "cells": "a category code; a multi-choice facet's set of codes joined by ';'; "
            "empty: no rating",
        },
    }
    return record, tables


def _ratings_rows(facet: FacetTable) -> Iterator[list[str]]:
    """The facet's units x raters table as CSV rows (item id, then each rater's cell), turned
    into text a chunk of units at a time, as the CSV writer asks for them."""
    values = facet.table.values
    for start in range(0, len(facet.items), CHUNK):
        units = facet.items[start : start + CHUNK].tolist()
        codes = facet.table.codes[start : start + CHUNK].tolist()
        for unit, row in zip(units, codes, strict=True):
            yield [str(unit), *(_cell(values, c) for c in row)]


def _cell(values: tuple[Any, ...], code: int) -> str:
    if code < 0:
        return ""
    value = values[code]
    return ";".join(sorted(value)) if isinstance(value, frozenset) else str(value)


def _selections(study: Study) -> list[dict[str, Any]]:
    selections = Selection.objects.filter(study=study).select_related("round").order_by("pk")
    return [
        {
            "round": s.round.number,
            "method": s.method_text,
            "filters": s.filters,
            "matched": s.matched,
            "sample_size": s.sample_size,
            "seed": s.seed,
            "stratified_by": s.stratified_by,
            "strata": s.strata,
            "sampled": s.sampled,
            "added": s.added,
            "repeat_issues": s.repeat_issues,
            "reliability_share": s.reliability_share,
            "reliability_seed": s.reliability_seed,
            "created_at": iso(s.created_at),
        }
        for s in selections
    ]


def _rounds(study: Study, people: People | None) -> list[dict[str, Any]]:
    return [
        {
            "number": r.number,
            "kind": r.kind,
            "closed_at": iso(r.closed_at),
            "closed_reason": r.closed_reason,
            "prior_import": _prior_record(r.prior_import, people) or None,
        }
        for r in study.rounds.order_by("number")
    ]


def _prior_record(record: dict[str, Any], people: People | None) -> dict[str, Any]:
    """A round's import record; pseudonymised, its `sheets` (who in the file became which
    rater) as rater codes on both sides, and the skipped rows' `by <who>` too."""
    if people is None or not record:
        return record
    out = dict(record)
    sheets = record.get("sheets") or {}
    out["sheets"] = {
        people.sources.get(str(k), UNKNOWN_ANNOTATOR): people.sources.get(str(v), UNKNOWN_ANNOTATOR)
        if v
        else v
        for k, v in sheets.items()
    }
    out["skipped"] = [
        {**row, "reason": _by_code(str(row.get("reason", "")), people)}
        | ({"sheet": people.sources.get(str(row["sheet"]), row["sheet"])} if "sheet" in row else {})
        for row in record.get("skipped") or []
    ]
    return out


def _by_code(reason: str, people: People) -> str:
    """ "annotation 4 by 8 was cancelled" with the Label Studio user as their rater code."""
    return re.sub(r"\bby (\S+)", lambda m: f"by {people.sources.get(m[1], m[1])}", reason)


def citation(package: Package) -> str:
    """CITATION.cff (1.2.0): the study's owners as authors (pseudonymised: the study's team,
    for the owners to fill in), the export's date and licence."""
    study = package.study
    lines = [
        "cff-version: 1.2.0",
        "message: If you use this dataset, please cite it as below.",
        "type: dataset",
        f"title: {json.dumps(package.text(study.name), ensure_ascii=False)}",
        "authors:",
        *_authors(package),
        f"date-released: {timezone.now().date().isoformat()}",
        f"license: {json.dumps(CFF_LICENSES.get(package.license, package.license))}",
        f"version: {json.dumps(f'codebook v{study.codebook_version.number}')}",
    ]
    return "\n".join(lines) + "\n"


CFF_LICENSES = {
    "cc-by-4.0": "CC-BY-4.0",
    "cc-by-sa-4.0": "CC-BY-SA-4.0",
    "cc0-1.0": "CC0-1.0",
    "odc-by": "ODC-By-1.0",
    "cc-by-nc-4.0": "CC-BY-NC-4.0",
    "other": "other",
}


def _authors(package: Package) -> list[str]:
    team = [f"  - name: {json.dumps(package.text(package.study.name) + ' team')}"]
    if package.people is not None:
        return team
    owners = Membership.objects.filter(study=package.study, role=Membership.Role.OWNER)
    lines = []
    for user in get_user_model().objects.filter(study_memberships__in=owners).order_by("pk"):
        if user.first_name and user.last_name:
            lines += [
                f"  - family-names: {json.dumps(user.last_name)}",
                f"    given-names: {json.dumps(user.first_name)}",
            ]
        else:
            lines.append(f"  - name: {json.dumps(user.username)}")
    return lines or team


def readme_text(package: Package, root: Path) -> str:
    """README.txt: what the package is, then every file in it."""
    study = package.study
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    files.append("README.txt")
    lines = [
        f"Replication package of {package.text(study.name)}",
        f"Exported {iso(timezone.now())}; {package.passing} items passing the filters "
        f"({package.filters or 'none'}), scope {package.scope}.",
        "Pseudonymised: annotators appear as A01, A02, ...; GitHub users (issue and comment "
        "authors, @mentions) as U0001, ...; the mapping stays on the server."
        if package.people
        else "Not pseudonymised: annotators appear by user name, GitHub users by login.",
        "The guideline is HTML only: no PDF writer is installed on the server; print the "
        "HTML to PDF from a browser.",
        "",
        "What each kind of file is:",
        *(f"  {name}: {what}" for name, what in PACKAGE_FILES),
        "",
        "Files:",
        *(f"  {name}" for name in sorted(set(files))),
    ]
    return "\n".join(lines) + "\n"
