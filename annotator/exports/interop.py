"""Label Studio and doccano files in and out (pure: no Django, no DB; plain data in and out).

Readers turn another tool's export into the `PriorLabels` the workbook reader makes
(`spreadsheets.py`), so the prior-label import's review step (`matching.match_values`), its
mapping of unmatched values and its writer serve every format alike. Every issue key becomes
an issue URL (`issue_key`), as a workbook's `Link` column holds.

**Label Studio** (`read_labelstudio`): its JSON export, a list of tasks, as documented in
"Label Studio JSON format of annotated tasks", https://labelstud.io/guide/task_format
(and https://labelstud.io/guide/export for the export itself). A task has `id`, `data`,
`annotations`, `predictions`; an annotation `id`, `completed_by` (a user id, or in some
versions an object with `id` / `email`), `result` (regions: `from_name`, `to_name`, `type`,
`value`), `was_cancelled`, `lead_time` (seconds), `created_at`, `updated_at`. Read:
regions of type `choices` (`value.choices`, a list of names) and `taxonomy`
(`value.taxonomy`, a list of paths; the leaf of each path is the value). Each region's
`from_name` maps to a facet (`from_name_to_facet`; mapped to "" it is left out; not mapped it
is refused). A task without annotations (skipped or never labelled) and a cancelled annotation
(`was_cancelled`, a skip) are no labels: listed in `PriorLabels.skipped` and counted in
`PriorLabels.not_labels`. `lead_time` becomes the annotation's seconds. `predictions` are
ignored unless `predictions="rater"`: then each prediction is the labels of a rater named
after its `model_version` (what `write_labelstudio` exports reads back this way).

**doccano** (`read_doccano`): the JSONL export of a text-classification project, one object
per line with `id`, `text` (or `data`), `label` (a list of label names) and whatever fields
the imported lines carried (kept at the top level or under `meta`, by doccano version). A
project exported per user gives one file per user (`alice.jsonl`): the annotator is the
line's `user` or `annotator` field when present, else the file's name without its extension.
Span labels (`[start, end, "label"]`, sequence labeling) are refused. Facets by the label: a
label `facet:code` whose prefix is a key of `label_to_facet` goes to that facet with the text
after the colon as the value; any other label goes whole to `label_to_facet["label"]` (the
facet of unprefixed labels), and without it is refused. The doccano documentation in our
reference corpus did not show the export's fields; the shape above is what doccano 1.x
writes for text classification ("label": ["…"]).

Issue keys (`data_key`): a field (a dotted path such as `meta.html_url` looks inside objects;
a field literally named with the dots wins) holding a GitHub issue URL (any URL whose path
ends in a number is kept as it is), or `OWNER/NAME#N`; or two fields joined with `+`
(`repository+number`) holding `OWNER/NAME` and the number.

Bad input raises `LabelFileError` naming the task (its `id`) or line and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from annotator.exports.matching import Occurrence
from annotator.exports.spreadsheets import (
    DUPLICATE_RULES,
    PriorLabels,
    SkippedRow,
    SpreadsheetError,
)

FORMATS = ("xlsx", "labelstudio", "doccano")
TASK = "task"  # the `sheet` of a Label Studio occurrence or skipped entry; `row` is the task id
KEY_GUESSES = ("html_url", "url", "issue_url", "link", "meta.html_url", "meta.url")
MAX_LINE_CHARS = 10_000_000


class LabelFileError(SpreadsheetError):
    """A Label Studio or doccano file the import refuses; the message names task/line and field."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


@dataclass(frozen=True)
class LabelFileInfo:
    """What the wizard's map step shows of a file: fields, label sources, annotators."""

    format: str
    units: int  # tasks or lines
    fields: tuple[str, ...]  # candidate data keys (dotted one level into objects)
    key_field: str | None  # the guess
    label_sources: tuple[str, ...]  # Label Studio: from_names; doccano: label prefixes + "label"
    annotators: tuple[str, ...]


# --- keys ----------------------------------------------------------------------------------------


def lookup(record: Mapping[str, Any], path: str) -> Any:
    """`record[path]`, or following a dotted path (`meta.html_url`); None when absent."""
    if path in record:
        return record[path]
    node: Any = record
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


_SHORT = re.compile(r"^([\w.-]+)/([\w.-]+)#(\d+)$")


def issue_key(record: Mapping[str, Any], data_key: str, where: str) -> str:
    """The issue URL a record's `data_key` names (see the module docstring)."""
    if "+" in data_key and data_key not in record:
        repo_field, number_field = (p.strip() for p in data_key.split("+", 1))
        repository, number = lookup(record, repo_field), lookup(record, number_field)
        if not isinstance(repository, str) or "/" not in repository:
            raise LabelFileError(f"{where}: field {repo_field!r}: expected OWNER/NAME")
        if isinstance(number, bool) or not str(number).strip().isdigit():
            raise LabelFileError(f"{where}: field {number_field!r}: expected an issue number")
        return f"https://github.com/{repository.strip()}/issues/{int(str(number).strip())}"
    value = lookup(record, data_key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise LabelFileError(f"{where}: no field {data_key!r} (the data_key naming the issue)")
    text = str(value).strip()
    short = _SHORT.match(text)
    if short:
        return f"https://github.com/{short[1]}/{short[2]}/issues/{short[3]}"
    if re.match(r"^https?://", text):
        return text
    raise LabelFileError(
        f"{where}: field {data_key!r}: {text[:80]!r} is neither an issue URL nor OWNER/NAME#N"
    )


def _fields(record: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in record.items():
        if isinstance(value, Mapping):
            out += [f"{name}.{inner}" for inner in value if not isinstance(value[inner], Mapping)]
        elif not isinstance(value, list):
            out.append(name)
    return out


def _guess(fields: Sequence[str], samples: Sequence[Mapping[str, Any]]) -> str | None:
    for name in KEY_GUESSES:
        if name in fields:
            return name
    for name in fields:
        values = [lookup(s, name) for s in samples]
        if values and all(isinstance(v, str) and re.match(r"https?://", v) for v in values):
            return name
    if "repository" in fields and "number" in fields:
        return "repository+number"
    return None


# --- collecting labels -----------------------------------------------------------------------


@dataclass
class _Collector:
    """Labels per annotator and key, with the duplicates rule applied at the end."""

    duplicates: str
    unit: str  # "task" or "line", for the messages
    sheet_of: Any  # annotator → the `sheet` of its occurrences and skipped entries
    found: dict[str, dict[str, list[tuple[int, dict[str, list[str]], int]]]] = field(
        default_factory=dict
    )
    result: PriorLabels = field(default_factory=lambda: PriorLabels(annotators={}, final=None))

    def add(self, name: str, key: str, row: int, cells: dict[str, list[str]], seconds: int) -> None:
        self.found.setdefault(name, {}).setdefault(key, []).append((row, cells, seconds))

    def skip(self, sheet: str, row: int, reason: str, key: str | None, count: str) -> None:
        self.result.skipped.append(SkippedRow(sheet, row, reason, key))
        self.result.not_labels[count] = self.result.not_labels.get(count, 0) + 1

    def finish(self, columns: Mapping[str, str]) -> PriorLabels:
        result = self.result
        for name, keys in self.found.items():
            sheet = self.sheet_of(name)
            labels, rows, seconds = {}, {}, {}
            for key, entries in keys.items():
                kept = self._keep(sheet, key, entries)
                if kept is None:
                    continue
                row, cells, spent = kept
                labels[key], rows[key], seconds[key] = cells, row, spent
                for facet, values in cells.items():
                    column = columns.get(facet, facet)
                    for value in values:
                        places = result.occurrences.setdefault(facet, {}).setdefault(value, [])
                        places.append(Occurrence(sheet, row, column))
            result.annotators[name], result.rows[name], result.seconds[name] = labels, rows, seconds
        return result

    def _keep(
        self, sheet: str, key: str, entries: list[tuple[int, dict[str, list[str]], int]]
    ) -> tuple[int, dict[str, list[str]], int] | None:
        if len(entries) == 1:
            return entries[0]
        rows = [row for row, _, _ in entries]
        unit = self.unit
        if self.duplicates == "first":
            why = f"repeats the key of {unit} {rows[0]}; the first is kept (duplicates: first)"
            self.result.skipped += [SkippedRow(sheet, r, why, key) for r in rows[1:]]
            return entries[0]
        if self.duplicates == "last":
            why = f"key repeated at {unit} {rows[-1]}; the last is kept (duplicates: last)"
            self.result.skipped += [SkippedRow(sheet, r, why, key) for r in rows[:-1]]
            return entries[-1]
        listed = ", ".join(map(str, rows))
        why = f"key repeated in {unit}s {listed}; every one dropped (duplicates: drop)"
        self.result.skipped += [SkippedRow(sheet, r, why, key) for r in rows]
        return None


def _check_duplicates(duplicates: str) -> None:
    if duplicates not in DUPLICATE_RULES:
        raise LabelFileError(
            f"duplicates must be one of {', '.join(DUPLICATE_RULES)}, not {duplicates!r}"
        )


def _annotator(identity: str, annotators: Mapping[str, str], where: str, what: str) -> str | None:
    """The annotator name of `identity` (None: left out by the mapping)."""
    if not annotators:
        return identity
    if identity not in annotators:
        raise LabelFileError(
            f"{where}: field {what!r}: {identity!r} is not in the mapping's sheet_to_annotator "
            f'({", ".join(map(repr, sorted(annotators)))}); map it, or to "" to leave it out'
        )
    return annotators[identity] or None


# --- Label Studio ----------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8-sig") as handle:
            return json.load(handle)
    except UnicodeDecodeError as error:
        raise LabelFileError(f"{path.name} is not UTF-8 text: {error}") from None
    except json.JSONDecodeError as error:
        raise LabelFileError(
            f"{path.name} is not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None


def _tasks(path: Path) -> list[dict[str, Any]]:
    tasks = _load_json(path)
    if isinstance(tasks, dict):  # one task exported alone
        tasks = [tasks]
    if not isinstance(tasks, list):
        raise LabelFileError(f"{path.name}: a Label Studio export is a JSON list of tasks")
    for index, task in enumerate(tasks, start=1):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise LabelFileError(
                f"task #{index} of {path.name}: field 'data': a task is an object with a 'data' "
                "object (is this Label Studio's JSON export, not JSON-MIN or CSV?)"
            )
    return tasks


def _task_id(task: Mapping[str, Any], index: int) -> int:
    value = task.get("id")
    return value if isinstance(value, int) and not isinstance(value, bool) else index


def completed_by(annotation: Mapping[str, Any]) -> str:
    """Who made a Label Studio annotation: the user id, or the email when only that is given."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id", who.get("email"))
    return "unknown" if who is None or who == "" else str(who)


def inspect_labelstudio(path: str | Path) -> LabelFileInfo:
    tasks = _tasks(Path(path))
    fields: dict[str, None] = {}
    names: dict[str, None] = {}
    people: dict[str, None] = {}
    for task in tasks:
        fields.update(dict.fromkeys(_fields(task["data"])))
        for annotation in task.get("annotations") or []:
            if isinstance(annotation, dict):
                people[completed_by(annotation)] = None
                for region in annotation.get("result") or []:
                    if isinstance(region, dict) and region.get("from_name"):
                        names[str(region["from_name"])] = None
    listed = tuple(fields)
    key = _guess(listed, [t["data"] for t in tasks[:50]])
    return LabelFileInfo("labelstudio", len(tasks), listed, key, tuple(names), tuple(people))


def read_labelstudio(
    path: str | Path,
    *,
    data_key: str,
    from_name_to_facet: Mapping[str, str],
    annotators: Mapping[str, str] | None = None,
    duplicates: str = "first",
    predictions: str = "ignore",
) -> PriorLabels:
    """The raw labels of a Label Studio JSON export, per annotator (module docstring).

    `annotators` maps a `completed_by` (user id, or email) to the annotator's name (mapped to
    "" it is left out); empty, every annotator is read under their id. A task repeating an
    issue, or two annotations of one task by one person, follow `duplicates` per annotator."""
    _check_duplicates(duplicates)
    if predictions not in ("ignore", "rater"):
        raise LabelFileError(f"predictions must be 'ignore' or 'rater', not {predictions!r}")
    path = Path(path)
    people = dict(annotators or {})
    collector = _Collector(duplicates, TASK, lambda name: TASK)
    for index, task in enumerate(_tasks(path), start=1):
        number = _task_id(task, index)
        where = f"task {number}"
        key = issue_key(task["data"], data_key, where)
        annotations = [a for a in task.get("annotations") or [] if isinstance(a, dict)]
        if not annotations:
            reason = "no annotations (a skipped or unlabelled task)"
            collector.skip(TASK, number, reason, key, "skipped_tasks")
        for annotation in annotations:
            _annotation(collector, annotation, number, key, from_name_to_facet, people)
        if predictions == "rater":
            for prediction in task.get("predictions") or []:
                if isinstance(prediction, dict):
                    name = str(prediction.get("model_version") or "predictions")
                    at = f"{where}, prediction {name!r}"
                    cells = _regions(prediction.get("result"), from_name_to_facet, at)
                    if cells:
                        collector.add(name, key, number, cells, 0)
    labels = collector.finish({f: n for n, f in from_name_to_facet.items() if f})
    labels.sources = {who: who for who in labels.annotators}
    if people:
        labels.sources = {who: name for who, name in people.items() if name}
    return labels


def _annotation(
    collector: _Collector,
    annotation: Mapping[str, Any],
    number: int,
    key: str,
    from_name_to_facet: Mapping[str, str],
    people: Mapping[str, str],
) -> None:
    where = f"task {number}, annotation {annotation.get('id', '?')}"
    who = completed_by(annotation)
    if annotation.get("was_cancelled"):
        reason = f"annotation {annotation.get('id', '?')} by {who} was cancelled (skipped)"
        collector.skip(TASK, number, reason, key, "cancelled_annotations")
        return
    name = _annotator(who, people, where, "completed_by")
    if name is None:
        reason = f"annotation {annotation.get('id', '?')} by {who}: annotator left out"
        collector.skip(TASK, number, reason, key, "annotators_left_out")
        return
    cells = _regions(annotation.get("result"), from_name_to_facet, where)
    if not cells:
        reason = f"annotation {annotation.get('id', '?')} by {who} holds no choices"
        collector.skip(TASK, number, reason, key, "empty_annotations")
        return
    lead = annotation.get("lead_time")
    seconds = round(lead) if isinstance(lead, int | float) and lead > 0 else 0
    collector.add(name, key, number, cells, seconds)


def _regions(
    result: Any, from_name_to_facet: Mapping[str, str], where: str
) -> dict[str, list[str]]:
    if result is None:
        return {}
    if not isinstance(result, list):
        raise LabelFileError(f"{where}: field 'result': expected a list of regions")
    cells: dict[str, list[str]] = {}
    for region in result:
        if not isinstance(region, dict):
            raise LabelFileError(f"{where}: field 'result': a region is an object")
        source = str(region.get("from_name", ""))
        if source not in from_name_to_facet:
            mapped = ", ".join(map(repr, sorted(from_name_to_facet)))
            raise LabelFileError(
                f"{where}: field 'from_name': {source!r} is mapped to no facet (mapped: "
                f'{mapped}); map it in column_to_facet, or to "" to leave it out'
            )
        facet = from_name_to_facet[source]
        if not facet:
            continue
        values = _region_values(region, f"{where}, from_name {source!r}")
        bucket = cells.setdefault(facet, [])
        bucket += [v for v in values if v not in bucket]
    return {facet: values for facet, values in cells.items() if values}


def _region_values(region: Mapping[str, Any], where: str) -> list[str]:
    kind, value = region.get("type"), region.get("value")
    if not isinstance(value, dict):
        raise LabelFileError(f"{where}: field 'value': expected an object")
    if kind == "choices":
        choices = value.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise LabelFileError(f"{where}: field 'value.choices': expected a list of names")
        return [c.strip() for c in choices if c.strip()]
    if kind == "taxonomy":
        paths = value.get("taxonomy")
        if not isinstance(paths, list) or not all(
            isinstance(p, list) and p and all(isinstance(n, str) for n in p) for p in paths
        ):
            raise LabelFileError(f"{where}: field 'value.taxonomy': expected a list of paths")
        return [p[-1].strip() for p in paths if p[-1].strip()]  # the leaf of each path
    raise LabelFileError(
        f"{where}: field 'type': {kind!r} regions are not labels of a facet (read: choices, "
        'taxonomy); map this from_name to "" to leave it out'
    )


# --- doccano ---------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if len(line) > MAX_LINE_CHARS:
                    raise LabelFileError(f"line {number}: longer than {MAX_LINE_CHARS:,} chars")
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise LabelFileError(
                        f"line {number}: not JSON (column {error.colno}: {error.msg})"
                    ) from None
                if not isinstance(record, dict):
                    raise LabelFileError(f"line {number}: a line of a doccano export is an object")
                yield number, record
    except UnicodeDecodeError as error:
        raise LabelFileError(f"{path.name} is not UTF-8 text: {error}") from None


def doccano_labels(record: Mapping[str, Any], where: str) -> list[str]:
    labels = record.get("label", record.get("labels"))
    if labels is None:
        return []
    if isinstance(labels, str):
        labels = [labels]
    if not isinstance(labels, list):
        raise LabelFileError(f"{where}: field 'label': expected a list of labels")
    if any(isinstance(label, list) for label in labels):
        raise LabelFileError(
            f"{where}: field 'label': span labels [start, end, label] (sequence labeling) are "
            "not supported; export a text-classification project"
        )
    return [str(label).strip() for label in labels if str(label).strip()]


def doccano_annotator(record: Mapping[str, Any], source_name: str) -> str:
    who = record.get("user", record.get("annotator"))
    if who not in (None, ""):
        return str(who)
    return Path(source_name).stem or "doccano"


def split_label(label: str, label_to_facet: Mapping[str, str], where: str) -> tuple[str, str]:
    """(facet, value) of a doccano label, by the rule of the module docstring."""
    prefix, colon, rest = label.partition(":")
    if colon and prefix.strip() in label_to_facet and prefix.strip() != "label" and rest.strip():
        return label_to_facet[prefix.strip()], rest.strip()
    if "label" in label_to_facet:
        return label_to_facet["label"], label
    raise LabelFileError(
        f"{where}: field 'label': {label!r} names no facet: write it facet:value with a "
        f"prefix of column_to_facet ({', '.join(map(repr, sorted(label_to_facet)))}), or map "
        '"label" to the facet of unprefixed labels'
    )


def inspect_doccano(path: str | Path, source_name: str = "") -> LabelFileInfo:
    path = Path(path)
    fields: dict[str, None] = {}
    sources: dict[str, None] = {}
    people: dict[str, None] = {}
    samples: list[dict[str, Any]] = []
    units = 0
    for number, record in _lines(path):
        units += 1
        if len(samples) < 50:
            samples.append(record)
        fields.update(dict.fromkeys(f for f in _fields(record) if f not in ("label", "labels")))
        people[doccano_annotator(record, source_name or path.name)] = None
        for label in doccano_labels(record, f"line {number}"):
            prefix, colon, rest = label.partition(":")
            sources[prefix.strip() if colon and rest.strip() else "label"] = None
    listed = tuple(fields)
    return LabelFileInfo(
        "doccano", units, listed, _guess(listed, samples), tuple(sources), tuple(people)
    )


def read_doccano(
    path: str | Path,
    *,
    data_key: str,
    label_to_facet: Mapping[str, str],
    annotators: Mapping[str, str] | None = None,
    duplicates: str = "first",
    source_name: str = "",
) -> PriorLabels:
    """The raw labels of a doccano text-classification JSONL export, per annotator (module
    docstring). `source_name` is the uploaded file's name (the annotator of a per-user file)."""
    _check_duplicates(duplicates)
    path = Path(path)
    file_name = source_name or path.name
    people = dict(annotators or {})
    collector = _Collector(duplicates, "line", lambda name: file_name)
    for number, record in _lines(path):
        where = f"line {number}"
        key = issue_key(record, data_key, where)
        labels = doccano_labels(record, where)
        who = doccano_annotator(record, file_name)
        if not labels:
            collector.skip(file_name, number, "no labels", key, "lines_without_labels")
            continue
        name = _annotator(who, people, where, "user")
        if name is None:
            collector.skip(
                file_name, number, f"annotator {who} left out", key, "annotators_left_out"
            )
            continue
        cells: dict[str, list[str]] = {}
        for label in labels:
            facet, value = split_label(label, label_to_facet, where)
            if facet:
                bucket = cells.setdefault(facet, [])
                bucket += [value] if value not in bucket else []
        if cells:
            collector.add(name, key, number, cells, 0)
    result = collector.finish({facet: "label" for facet in label_to_facet.values()})
    result.sources = {who: who for who in result.annotators}
    if people:
        result.sources = {who: name for who, name in people.items() if name}
    return result


# --- Label Studio out ------------------------------------------------------------------------


def labelstudio_task(
    row: Mapping[str, Any], facets: Sequence[tuple[str, str, int]], model_version: str
) -> dict[str, Any]:
    """One Label Studio task of an exported final-dataset row (`rows.final_rows` plus `body`).

    `facets`: (key, kind single|multi, levels) in codebook order. `data` holds the issue's
    title, body, html_url, repository, number and our item_id; `predictions` holds one
    prediction built from the final decision (none for an undecided item): per labelled facet
    a `choices` region, `from_name` the facet key, `to_name` "text", `value.choices` the
    category **codes** (the leaf of a hierarchical facet), which stay stable when a category
    is renamed and which the prior-label import matches directly."""
    result: list[dict[str, Any]] = []
    for key, kind, levels in facets:
        base = key.replace("-", "_")
        if kind == "multi":
            codes = list(row.get(base) or [])
        elif levels <= 1:
            codes = [row[base]] if row.get(base) else []
        else:
            path = [row.get(f"{base}_l{n}") for n in range(1, levels + 1)]
            filled = [code for code in path if code]
            codes = filled[-1:]
        if codes:
            result.append(
                {
                    "id": f"{row['item_id']}-{key}",
                    "from_name": key,
                    "to_name": "text",
                    "type": "choices",
                    "value": {"choices": codes},
                }
            )
    task: dict[str, Any] = {
        "data": {
            "title": row.get("title") or "",
            "body": row.get("body") or "",
            "html_url": row.get("url"),
            "repository": row.get("repository"),
            "number": row.get("number"),
            "item_id": row.get("item_id"),
        },
        "predictions": [{"model_version": model_version, "result": result}] if result else [],
    }
    return task


def write_labelstudio(
    rows: Iterable[Mapping[str, Any]],
    facets: Sequence[tuple[str, str, int]],
    out: IO[bytes],
    *,
    model_version: str,
) -> int:
    """Stream the rows as a JSON list of Label Studio tasks (`labelstudio_task`) into `out`;
    return the tasks written. Memory holds one task at a time."""
    count = 0
    out.write(b"[")
    for row in rows:
        text = json.dumps(labelstudio_task(row, facets, model_version), ensure_ascii=False)
        out.write((b",\n" if count else b"\n") + text.encode("utf-8"))
        count += 1
    out.write(b"\n]\n")
    return count
