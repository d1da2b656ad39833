"""Prior labels in: earlier labeling rounds from a workbook become a study round.

The wizard (views_prior.py) calls `review_prior_labels` to show what matched, then
`import_prior_labels` once the user confirms; nothing is written before that call, and the call
writes everything (issues, members, round, items, assignments, annotations, decisions,
proposals) in one transaction or nothing. Reading and matching are the pure
`spreadsheets.py` / `matching.py`. Rows whose labels break the codebook's label rules
(taxonomy_app.rules) are refused like a submit would refuse them, naming sheet, row, facet and rule.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from annotator.accounts.raters import RATER_NAME
from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Issue, Repository
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import (
    Annotation,
    AnnotationLabel,
    Assignment,
    Item,
    Membership,
    Round,
    Study,
)
from annotator.studies.services import (
    add_member,
    close_round,
    create_study,
    remove_member,
    round_for_selection,
)
from taxonomy_app.models import Category, CodebookVersion, Facet, Proposal
from taxonomy_app.rules import violations

from .interop import FORMATS, TASK, read_doccano, read_labelstudio
from .matching import Matching, Occurrence, match_values
from .spreadsheets import DUPLICATE_RULES, PriorLabels, read_rounds

ISSUE_URL = re.compile(r"^https?://github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull)/(\d+)/?$")
# Prior rounds also label posts elsewhere (the TOSEM rounds: Stack Overflow questions). Such a
# key becomes an issue of a pseudo-repository named after its host and path,
# stackoverflow.com/questions #35775359, with the URL kept as its html_url.
OTHER_URL = re.compile(r"^https?://([\w.-]+)/((?:[\w.-]+/)*?[\w.-]+)/(\d+)(?:/[^?#]*)?$")
# Imported raters are pseudonymous raters of one study: accounts named s<study id>-rater-<slug>
# (accounts.raters.RATER_NAME; no person's account is made with such a name), inactive,
# without a usable password, marked in last_name; first_name keeps the rater's name within the
# study.
RATER_MARK = "(imported rater)"
PROPOSE = "__propose__"  # a value mapping: record the value as a codebook proposal
IGNORE = ""  # a value mapping: leave the value out


class PriorImportError(ValueError):
    """A workbook or mapping the import refuses; nothing was written."""


@dataclass(frozen=True)
class PriorMapping:
    """How to read the file: what the wizard's mapping step produces.

    For a workbook (`format` "xlsx"): the key column, sheet → annotator, column → facet, the
    final sheet. For a Label Studio JSON or doccano JSONL export (`interop.py`): `data_key`
    names the field identifying the issue, `column_to_facet` maps each Label Studio
    `from_name` (doccano: each label prefix, and "label" for unprefixed labels) to a facet
    ("" leaves it out), `sheet_to_annotator` maps a `completed_by` / doccano user to the
    annotator's name (empty: every annotator under their id; "" leaves one out), and
    `predictions` ("ignore" | "rater") says whether Label Studio predictions are read as the
    labels of a rater named after their model_version. `source_name` is the uploaded file's
    name (a per-user doccano file names its annotator)."""

    key_column: str
    sheet_to_annotator: dict[str, str]
    column_to_facet: dict[str, str]
    final_sheet: str | None = None
    final_column_to_facet: dict[str, str] | None = None
    separators: dict[str, list[str]] = field(default_factory=dict)
    duplicates: str = "first"  # a key repeated in a sheet: keep its "first" row, "last", "drop"
    format: str = "xlsx"  # xlsx | labelstudio | doccano
    data_key: str = ""
    predictions: str = "ignore"
    source_name: str = ""

    def read(self, path: Path) -> PriorLabels:
        if self.format == "labelstudio":
            return read_labelstudio(
                path,
                data_key=self.data_key,
                from_name_to_facet=self.column_to_facet,
                annotators=self.sheet_to_annotator,
                duplicates=self.duplicates,
                predictions=self.predictions,
            )
        if self.format == "doccano":
            return read_doccano(
                path,
                data_key=self.data_key,
                label_to_facet=self.column_to_facet,
                annotators=self.sheet_to_annotator,
                duplicates=self.duplicates,
                source_name=self.source_name,
            )
        return read_rounds(
            path,
            key_column=self.key_column,
            sheet_to_annotator=self.sheet_to_annotator,
            column_to_facet=self.column_to_facet,
            final_sheet=self.final_sheet,
            final_column_to_facet=self.final_column_to_facet,
            separators=self.separators,
            skip_bad_rows=True,
            duplicates=self.duplicates,
        )


@dataclass(frozen=True)
class Review:
    labels: PriorLabels
    matchings: dict[str, Matching]  # facet key → what matched and what did not
    categories: dict[str, list[tuple[str, str]]]  # facet key → (code, name), for the choices


@dataclass
class PriorImportResult:
    study: Study
    round: Round
    items: int = 0
    created_issues: int = 0
    annotations: int = 0
    labels: int = 0
    decisions: int = 0
    proposals: int = 0
    left_out: int = 0  # values ignored or proposed, so not written as labels
    placeholders: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)  # as stored on Round.prior_import


def rater_username(study: Study, name: str) -> str:
    """The rater name of a workbook's annotator `name` in `study`, e.g. s12-rater-ann-b."""
    return f"s{study.pk}-rater-{slugify(name)[:120] or 'sheet'}"


def is_pseudonymous_rater(user: Any) -> bool:
    """An account an import made for a workbook's annotator (not a person's account)."""
    return bool(
        user.last_name == RATER_MARK
        and not user.is_active
        and not user.has_usable_password()
        and RATER_NAME.match(user.first_name)
    )


def facet_categories(version: CodebookVersion) -> dict[str, dict[str, list[str]]]:
    """facet key → category code → [name]: what raw values are matched against."""
    out: dict[str, dict[str, list[str]]] = {}
    rows = Category.objects.filter(facet__version=version, archived=False)
    for key, code, name in rows.values_list("facet__key", "code", "name").order_by("order", "pk"):
        out.setdefault(key, {})[code] = [name]
    return out


def review_prior_labels(*, path: Path, mapping: PriorMapping, version: CodebookVersion) -> Review:
    """Read the workbook with `mapping` and match each facet's values to the version's
    categories. Raises SpreadsheetError (naming sheet, row, column) or PriorImportError."""
    categories = facet_categories(version)
    if mapping.format not in FORMATS:
        raise PriorImportError(f"format: choose {', '.join(FORMATS)}, not {mapping.format!r}")
    if mapping.format != "xlsx" and not mapping.data_key:
        raise PriorImportError(
            f"mapping 'data_key': name the field of each {_unit(mapping)} "
            "that identifies the issue (e.g. html_url)"
        )
    facets = set(mapping.column_to_facet.values()) | set(
        (mapping.final_column_to_facet or {}).values()
    )
    facets.discard("")  # a Label Studio from_name or doccano prefix left out
    unknown = facets - set(categories)
    if unknown:
        raise PriorImportError(f"no facets {sorted(unknown)} in codebook version {version}")
    if mapping.duplicates not in DUPLICATE_RULES:
        raise PriorImportError(
            f"mapping 'duplicates': choose {', '.join(map(repr, DUPLICATE_RULES))}, "
            f"not {mapping.duplicates!r}"
        )
    labels = mapping.read(path)
    matchings = {f: match_values(labels.values(f), categories[f]) for f in sorted(facets)}
    choices = {f: [(c, n[0]) for c, n in categories[f].items()] for f in sorted(facets)}
    return Review(labels=labels, matchings=matchings, categories=choices)


def _unit(mapping: PriorMapping) -> str:
    """What a file's records are called in messages: rows, tasks or lines."""
    return {"labelstudio": "task", "doccano": "line"}.get(mapping.format, "row")


def _place(where: Occurrence) -> str:
    """Where a value first occurs, for a message: a task, a line of a file, a sheet's row."""
    if where.sheet == TASK:
        return f" (first in task {where.row}, from_name {where.column!r})"
    if where.sheet.endswith((".jsonl", ".ndjson", ".json")):
        return f" (first in {where.sheet} line {where.row}, field 'label')"
    return f" (first in sheet {where.sheet!r} row {where.row}, column {where.column!r})"


def resolve_values(
    review: Review, choices: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, str]]:
    """facet → raw value → code, PROPOSE or IGNORE: the automatic matches overridden by the
    user's `choices`. Raises PriorImportError naming every value still unmapped."""
    out: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for facet, matching in review.matchings.items():
        given = choices.get(facet, {})
        codes = {c for c, _ in review.categories[facet]}
        values = {**matching.matched, **{k: v for k, v in given.items()}}
        for unmatched in matching.unmatched:
            if unmatched.value not in given:
                first = _place(unmatched.occurrences[0]) if unmatched.occurrences else ""
                missing.append(f"{facet}: {unmatched.value!r}{first}")
        bad = [v for v in values.values() if v not in codes and v not in (PROPOSE, IGNORE)]
        if bad:
            raise PriorImportError(f"facet {facet!r} has no categories {sorted(set(bad))}")
        out[facet] = values
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        shown = ", ".join(missing[:10]) + more
        raise PriorImportError(f"map, propose or ignore every unmatched value: {shown}")
    return out


@transaction.atomic
def import_prior_labels(
    *,
    path: Path,
    mapping: PriorMapping,
    choices: Mapping[str, Mapping[str, str]],
    user: Any,
    study: Study | None = None,
    study_name: str = "",
    codebook_version: CodebookVersion | None = None,
    filename: str = "",
) -> PriorImportResult:
    """Write the workbook as a new round of `study` (or of a new study named `study_name` on
    `codebook_version`, owned by `user`): an annotation per sheet-annotator and item, by a
    pseudonymous rater of that study (`rater_username`; never an existing person's account),
    and a decision with source "imported" per row of the final sheet. `choices` maps unmatched
    values (facet → raw value → code, PROPOSE or IGNORE). All or nothing."""
    if study is None:
        if codebook_version is None:
            raise PriorImportError("choose a study, or a codebook version for a new study")
        study = create_study(name=study_name, codebook_version=codebook_version, owner=user)
    review = review_prior_labels(path=path, mapping=mapping, version=study.codebook_version)
    values = resolve_values(review, choices)
    check_label_rules(review.labels, values, mapping, study.codebook_version)
    round = round_for_selection(study=study, kind=Round.Kind.CALIBRATION)
    result = PriorImportResult(study=study, round=round)
    writer = _Writer(study, round, values, result, filename or path.name)
    writer.whose = "sheet of" if mapping.format == "xlsx" else "labels of"
    writer.members(review.labels)
    writer.items(review.labels)
    writer.annotations(review.labels)
    writer.decisions(review.labels, user)
    writer.proposals(review, user)
    result.record = import_record(review, mapping, values, filename or path.name)
    # Historical labels: the round is closed, so a new member or a new k never re-opens it.
    round.prior_import = result.record
    round.save(update_fields=["prior_import"])
    result.round = close_round(round=round, reason=Round.Closed.IMPORTED)
    return result


def import_record(
    review: Review,
    mapping: PriorMapping,
    values: Mapping[str, Mapping[str, str]],
    source: str,
) -> dict[str, Any]:
    """What an import does, as stored on the round it creates (`Round.prior_import`, read by
    agreement runs and the dataset card) and shown on the review and result pages:

    - `source`, `duplicates` (the rule for a key repeated in a sheet), `sheets` (sheet →
      annotator) and `final_sheet`;
    - `skipped`: every row left out — sheet, row, key (None when the row had none), reason;
    - `final_only`: the final sheet's keys no annotator labelled — key and row — not imported;
    - `left_out`: per facet, the values mapped to "ignore" or "propose" (so written as no
      label) with the annotators' cells holding each (`cells`), and `ratings_removed`: the
      ratings (an annotator's cell of an item) of the facet they leave with no label, which
      agreement counts as missing.
    """
    labels = review.labels
    record: dict[str, Any] = {
        "source": source,
        "duplicates": mapping.duplicates,
        "sheets": dict(mapping.sheet_to_annotator),
        "final_sheet": mapping.final_sheet,
        "skipped": [row.as_json() for row in labels.skipped],
        "final_only": [
            {"key": key, "row": row} for key, row in labels.final_only(mapping.final_sheet)
        ],
        "left_out": left_out_values(labels, values),
    }
    if mapping.format != "xlsx":
        # Label Studio / doccano: `sheets` is who in the file became which rater, and
        # `not_labels` counts what held no labels (skipped tasks, cancelled annotations, lines
        # without labels), each also listed in `skipped` (sheet "task" with the task id as
        # row, or the file's name with the line number).
        record |= {
            "format": mapping.format,
            "data_key": mapping.data_key,
            "sheets": dict(labels.sources),
            "not_labels": dict(sorted(labels.not_labels.items())),
        }
    return record


def left_out_values(
    labels: PriorLabels, values: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, Any]]:
    """Per facet, the raw values of the annotators' sheets that become no label (mapped to
    "ignore" or "propose"), how many cells hold each, and how many ratings (an annotator's cell
    of an item) are left empty by them; facets where nothing is left out are not listed."""
    out: dict[str, dict[str, Any]] = {}
    for rows in labels.annotators.values():
        for cells in rows.values():
            for facet, raw in cells.items():
                mapped = values.get(facet, {})
                dropped = [v for v in raw if mapped.get(v, IGNORE) in (IGNORE, PROPOSE)]
                if not dropped:
                    continue
                entry = out.setdefault(facet, {"values": {}, "ratings_removed": 0})
                for value in dropped:
                    how = "propose" if mapped.get(value) == PROPOSE else "ignore"
                    counted = entry["values"].setdefault(value, {"mapped_to": how, "cells": 0})
                    counted["cells"] += 1
                entry["ratings_removed"] += len(dropped) == len(raw)
    return {
        facet: {
            "values": [{"value": v, **c} for v, c in sorted(entry["values"].items())],
            "ratings_removed": entry["ratings_removed"],
        }
        for facet, entry in sorted(out.items())
    }


def check_label_rules(
    labels: PriorLabels,
    values: Mapping[str, Mapping[str, str]],
    mapping: PriorMapping,
    version: CodebookVersion,
) -> None:
    """Refuse a workbook whose rows break the codebook's label rules, as a submit would, naming
    the sheet, row, facet and rule of the first one (and how many more). A facet the workbook
    has no column for is not required of it: an earlier round may have labelled fewer facets."""
    schema = codebook_schema(version)
    sheets = [
        (sheet, mapping.column_to_facet, labels.annotators.get(annotator, {}))
        for sheet, annotator in mapping.sheet_to_annotator.items()
    ]
    if mapping.format != "xlsx":  # the readers key rows by annotator name
        sheets = [(name, mapping.column_to_facet, rows) for name, rows in labels.annotators.items()]
    if mapping.final_sheet and labels.final is not None:
        final_facets = mapping.final_column_to_facet or mapping.column_to_facet
        only = {key for key, _ in labels.final_only(mapping.final_sheet)}  # not imported
        final = {k: v for k, v in labels.final.items() if k not in only}
        sheets.append((mapping.final_sheet, final_facets, final))
    problems: list[str] = []
    for sheet, columns, rows in sheets:
        present = set(columns.values())
        rules = [r for r in schema.rules if r.kind != "requires" or r.facet in present]
        for key, raw in rows.items():
            codes = {f: _codes(values.get(f, {}), cells) for f, cells in raw.items()}
            for found in violations(rules, codes, schema.infos):
                row = labels.rows.get(sheet, {}).get(key)
                where = f"sheet {sheet!r}, row {row} ({key})" if row else f"sheet {sheet!r}, {key}"
                if mapping.format != "xlsx":
                    where = f"{_unit(mapping)} {row} ({key}), annotator {sheet!r}"
                rule = f"rule {schema.rules.index(found.rule) + 1}: {found.rule.label}"
                problems.append(f"{where}: facet {found.rule.facet!r}: {found.message} ({rule})")
    if problems:
        more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise PriorImportError(f"labels break the codebook's rules: {problems[0]}{more}")


def _codes(values: Mapping[str, str], cells: Sequence[str]) -> list[str]:
    """The category codes raw cell values map to (values ignored or proposed left out)."""
    codes = [values.get(value, IGNORE) for value in cells]
    return [code for code in dict.fromkeys(codes) if code not in (IGNORE, PROPOSE)]


class _Writer:
    def __init__(
        self,
        study: Study,
        round: Round,
        values: dict[str, dict[str, str]],
        result: PriorImportResult,
        source: str,
    ) -> None:
        self.study, self.round, self.values, self.result = study, round, values, result
        self.source = source
        self.now = timezone.now()
        facets = Facet.objects.filter(version=study.codebook_version)
        self.facets = {f.key: f for f in facets}
        self.category_ids = {
            (key, code): pk
            for pk, key, code in Category.objects.filter(facet__in=facets).values_list(
                "pk", "facet__key", "code"
            )
        }
        self.accounts: dict[str, Any] = {}
        self.whose = "sheet of"
        self.item_of: dict[str, Item] = {}

    def members(self, labels: PriorLabels) -> None:
        """A pseudonymous rater of the study per annotator of the workbook: two names of one
        workbook that read alike (`Ann B`, `ann-b`) are two raters; a later import of the same
        name into the same study labels as the same rater."""
        taken: set[str] = set()
        for name in labels.annotators:
            base = rater_username(self.study, name)
            username, n = base, 1
            while username in taken:
                n += 1
                username = f"{base}-{n}"
            taken.add(username)
            self.accounts[name] = self._rater(username)

    def _rater(self, username: str) -> Any:
        """This study's rater named `username`: the one an earlier import made, else a new
        account (inactive, no usable password, marked as a rater, a member of the study). Only
        the study's own raters are looked at. People cannot sign up with a rater name
        (accounts/forms.py); should an account made otherwise hold it, the rater's user name
        gets a random suffix, and the import answers as it would have (`placeholders`)."""
        existing = (
            Membership.objects.filter(
                study=self.study,
                user__first_name=username,
                user__last_name=RATER_MARK,
                user__is_active=False,
            )
            .select_related("user")
            .first()
        )
        if existing is not None and not existing.user.has_usable_password():
            return existing.user
        model = get_user_model()
        account = model(username=username, first_name=username, last_name=RATER_MARK)
        account.is_active = False
        account.set_unusable_password()
        while model.objects.filter(username=account.username).exists():
            account.username = f"{username}-{secrets.token_hex(4)}"
        account.save()
        add_member(study=self.study, user=account, role=Membership.Role.ANNOTATOR)
        self.result.placeholders.append(username)
        return account

    def items(self, labels: PriorLabels) -> None:
        """An item per key an annotator labelled, in a round of its own: an issue an earlier
        round of the study holds too is an item of each. A key of the final sheet alone is
        no item (import_record lists it)."""
        keys = list(dict.fromkeys(k for a in labels.annotators.values() for k in a))
        issues = self._issues(keys)
        raters = {k: sum(k in a for a in labels.annotators.values()) for k in keys}
        rows = [
            Item(
                study=self.study,
                round=self.round,
                issue=issues[key],
                position=n,
                quota=max(1, raters[key]),
                active_count=raters[key],
                submitted_count=raters[key],
                released_at=self.now,
            )
            for n, key in enumerate(keys)
        ]
        for key, item in zip(keys, Item.objects.bulk_create(rows), strict=True):
            self.item_of[key] = item
        self.result.items = len(rows)

    def _issues(self, keys: Sequence[str]) -> dict[str, Issue]:
        parsed: dict[str, tuple[str, str, int]] = {}
        for key in keys:
            match = ISSUE_URL.match(key.strip()) or OTHER_URL.match(key.strip())
            if match is None:
                raise PriorImportError(
                    f"key {key!r} is not an issue URL (https://github.com/OWNER/NAME/issues/N, "
                    "or a URL whose path holds a number)"
                )
            owner, name = match[1][:100], match[2].replace("/", "-")[:100]
            parsed[key] = (owner, name, int(match[3]))
        repositories: dict[str, Repository] = {}
        out: dict[str, Issue] = {}
        for key, (owner, name, number) in parsed.items():
            full = f"{owner}/{name}".lower()
            if full not in repositories:
                repositories[full] = Repository.objects.named(full) or Repository.objects.create(
                    owner=owner, name=name
                )
            out[key] = self._issue(repositories[full], number, key)
        return out

    def _issue(self, repository: Repository, number: int, url: str) -> Issue:
        issue, created = Issue.objects.get_or_create(
            repository=repository,
            number=number,
            defaults={
                "title": f"{repository.full_name}#{number} (imported labels; not synced)",
                "state": Issue.State.OPEN,
                "html_url": url,
                "content_hash": "",
            },
        )
        self.result.created_issues += created
        return issue

    def _category_ids(self, facet: str, raw: list[str], where: str) -> list[tuple[int, int]]:
        codes: list[str] = []
        for value in raw:
            code = self.values.get(facet, {}).get(value, IGNORE)
            if code in (IGNORE, PROPOSE):
                self.result.left_out += 1
            elif code not in codes:
                codes.append(code)
        if len(codes) > 1 and self.facets[facet].kind == Facet.Kind.SINGLE:
            raise PriorImportError(f"{where}: facet {facet!r} takes one category, got {codes}")
        return [(self.facets[facet].pk, self.category_ids[(facet, c)]) for c in codes]

    def annotations(self, labels: PriorLabels) -> None:
        pairs = [(name, key) for name, rows in labels.annotators.items() for key in rows]
        assignments = Assignment.objects.bulk_create(
            Assignment(
                item=self.item_of[key],
                annotator=self.accounts[name],
                status=Assignment.Status.SUBMITTED,
                finished_at=self.now,
            )
            for name, key in pairs
        )
        annotations = Annotation.objects.bulk_create(
            Annotation(
                assignment=a,
                codebook_version_id=self.study.codebook_version_id,
                status=Annotation.Status.SUBMITTED,
                submitted_at=self.now,
                seconds_spent=labels.seconds.get(name, {}).get(key, 0),
                notes=f"imported from {self.source}, {self.whose} {name}",
            )
            for a, (name, key) in zip(assignments, pairs, strict=True)
        )
        rows: list[AnnotationLabel] = []
        for annotation, (name, key) in zip(annotations, pairs, strict=True):
            for facet, raw in labels.annotators[name][key].items():
                chosen = self._category_ids(facet, raw, f"{name}, {key}")
                rows += [
                    AnnotationLabel(annotation=annotation, facet_id=f, category_id=c)
                    for f, c in chosen
                ]
        AnnotationLabel.objects.bulk_create(rows)
        self.result.annotations, self.result.labels = len(annotations), len(rows)

    def decisions(self, labels: PriorLabels, user: Any) -> None:
        final = {k: v for k, v in (labels.final or {}).items() if k in self.item_of}
        decisions = Decision.objects.bulk_create(
            Decision(
                item=self.item_of[key],
                source=Decision.Source.IMPORTED,
                decided_by=user,
                comment=f"imported from {self.source}",
            )
            for key in final
        )
        rows = [
            DecisionLabel(decision=decision, facet_id=facet_id, category_id=category_id)
            for decision, key in zip(decisions, final, strict=True)
            for facet, raw in final[key].items()
            for facet_id, category_id in self._category_ids(facet, raw, f"final, {key}")
        ]
        DecisionLabel.objects.bulk_create(rows)
        self.result.decisions = len(decisions)

    def proposals(self, review: Review, user: Any) -> None:
        for facet, values in self.values.items():
            for value, code in values.items():
                if code == PROPOSE:
                    Proposal.objects.create(
                        facet=self.facets[facet],
                        name=value[:200],
                        proposed_by=user,
                        rationale=f"a value of the prior labels imported from {self.source}",
                    )
                    self.result.proposals += 1


@transaction.atomic
def link_rater(*, study: Study, rater: str, username: str) -> int:
    """Give the labels of `study`'s imported rater `rater` (its rater name) to the account
    `username`: what staff do once that person agrees (manage.py link_rater). The person
    becomes an annotator of the study (a member keeps their role) and the rater leaves it;
    returns how many assignments moved. Refused, changing nothing, when the name is no rater
    of the study, the account is no active person's, or both labelled an item."""
    model = get_user_model()
    membership = (
        Membership.objects.filter(study=study, user__first_name=rater)
        .select_related("user")
        .first()
    )
    if membership is None or not is_pseudonymous_rater(membership.user):
        raise PriorImportError(f"field 'rater': study {study.pk} has no imported rater {rater!r}")
    person = model.objects.filter(username=username).first()
    if person is None or not person.is_active or is_pseudonymous_rater(person):
        raise PriorImportError(f"field 'user': no active account {username!r}")
    moved = Assignment.objects.filter(item__study=study, annotator=membership.user)
    both = Item.objects.filter(
        pk__in=moved.values("item_id"), assignments__annotator=person
    ).order_by("pk")
    if both:
        issues = both.values_list(
            "issue__repository__owner", "issue__repository__name", "issue__number"
        )
        shown = ", ".join(f"{o}/{n}#{number}" for o, n, number in issues[:10])
        raise PriorImportError(
            f"field 'user': {username!r} and rater {rater!r} both labelled items {shown} of "
            f"study {study.pk}; nothing was linked"
        )
    count = moved.update(annotator=person)
    if not Membership.objects.filter(study=study, user=person).exists():
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    remove_member(study=study, user=membership.user)
    return count
