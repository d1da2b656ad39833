"""Compare the rows of two databases, ids mapped through what the rows are.

Each row becomes a canonical form: its fields, with every foreign key — and every id inside a
JSON column named in JSON_IDS — replaced by the canonical form of the row it points to,
recursively. A decision label is then "category `oom` of facet `symptom` of v1 of codebook
small-bugs, on the decision about issue hpcaitech/ColossalAI#2 of study …", whatever its id.
Two databases hold the same data when each table has the same multiset of canonical forms.

This is written apart from annotator/backup (its own list of embedded ids and of fields a
backup leaves out), so it checks the restore rather than repeating it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from datetime import UTC, date, datetime
from typing import Any

from django.apps import apps
from django.db import models

# Fields a backup does not carry, by design (annotator/backup/README.md says why).
NOT_CARRIED = {
    "auth.user": {"password", "last_login", "is_superuser", "is_staff"},
    "issues.issue": {"search_vector"},
    "exports.exportjob": {"file"},
}
# Ids stored inside JSON columns: (table, column) → [(path, table the id is of)].
JSON_IDS = {
    ("studies.selection", "filters"): [(("repository",), "issues.repository")],
    ("taxonomy_app.changeoperation", "detail"): [(("proposal",), "taxonomy_app.proposal")],
    ("agreement.agreementrun", "result"): [
        (("study",), "studies.study"),
        (("codebook_version",), "taxonomy_app.codebookversion"),
        (("raters", "*", "id"), "auth.user"),
    ],
    ("agreement.agreementrun", "inputs"): [
        (("study",), "studies.study"),
        (("codebook_version",), "taxonomy_app.codebookversion"),
    ],
}
USERS = "auth.user"


def model_of(label: str) -> type[models.Model]:
    app, name = label.split(".")
    return apps.get_model(app, name)


def compared_fields(label: str) -> list[models.Field[Any, Any]]:
    skip = NOT_CARRIED.get(label, set())
    return [f for f in model_of(label)._meta.concrete_fields if f.name not in skip]


class Snapshot:
    """Every row of the given tables in one database, by table and id."""

    def __init__(self, cursor: Any, labels: list[str], *, json_as_text: bool) -> None:
        self.json_as_text = json_as_text
        self.rows: dict[str, dict[Any, dict[str, Any]]] = {}
        self.referenced: dict[str, set[Any]] = {}
        self._canonical: dict[tuple[str, Any], str] = {}
        for label in labels:
            self.rows[label] = self._read(cursor, label)

    def _read(self, cursor: Any, label: str) -> dict[Any, dict[str, Any]]:
        model = model_of(label)
        fields = compared_fields(label)
        pk = model._meta.pk
        assert pk is not None
        columns = ", ".join(f'"{f.column}"' for f in fields)
        cursor.execute(f'SELECT "{pk.column}", {columns} FROM "{model._meta.db_table}"')
        return {row[0]: dict(zip([f.name for f in fields], row[1:], strict=True)) for row in cursor}

    def canonical(self, label: str, pk: Any) -> str:
        key = (label, pk)
        if key not in self._canonical:
            self._canonical[key] = _digest(self.expanded(label, pk))
        return self._canonical[key]

    def expanded(self, label: str, pk: Any) -> dict[str, Any]:
        """The row's fields with references replaced by the canonical form of their rows."""
        row = self.rows[label].get(pk)
        if row is None:
            return {"missing": f"{label} {pk}"}
        out = {}
        for f in compared_fields(label):
            value = row[f.name]
            if f.is_relation and value is not None:
                target = f.related_model._meta.label_lower  # type: ignore[union-attr]
                self.referenced.setdefault(target, set()).add(value)
                out[f.name] = f"{target}:{self.canonical(target, value)}"
            elif isinstance(f, models.JSONField):
                out[f.name] = self._json(label, f.name, value)
            elif not f.primary_key:
                out[f.name] = _plain(value)
        return out

    def _json(self, label: str, name: str, value: Any) -> Any:
        value = json.loads(value) if self.json_as_text and isinstance(value, str) else value
        value = copy.deepcopy(value)
        for path, target in JSON_IDS.get((label, name), []):
            for holder, key in _slots(value, path):
                old = holder[key]
                if isinstance(old, int | str) and str(old).isdigit():
                    holder[key] = f"{target}:{self.canonical(target, int(old))}"
        return value

    def forms(self, label: str) -> Counter[str]:
        return Counter(self.canonical(label, pk) for pk in self.rows[label])


def differences(source: Snapshot, target: Snapshot, labels: list[str]) -> list[str]:
    """What differs, table by table (users: those the source's rows point to, against every
    user of the target); empty when the two databases hold the same rows."""
    problems = []
    for label in labels:
        if label == USERS:
            continue
        ours, theirs = source.forms(label), target.forms(label)
        if not ours:
            problems.append(f"{label}: no rows in the source: the test would prove nothing")
        if ours != theirs:
            problems.append(_describe(label, source, target, ours - theirs, theirs - ours))
    users = Counter(source.canonical(USERS, pk) for pk in source.referenced.get(USERS, ()))
    if users != target.forms(USERS):
        problems.append(
            _describe(
                USERS, source, target, users - target.forms(USERS), target.forms(USERS) - users
            )
        )
    return problems


def _describe(
    label: str, source: Snapshot, target: Snapshot, missing: Counter[str], extra: Counter[str]
) -> str:
    def show(snapshot: Snapshot, forms: Counter[str]) -> str:
        ids = [pk for pk in snapshot.rows[label] if snapshot.canonical(label, pk) in forms]
        return "; ".join(repr(snapshot.expanded(label, pk))[:600] for pk in ids[:3])

    return (
        f"{label}: {sum(missing.values())} source rows not restored as they were, "
        f"{sum(extra.values())} restored rows unlike any source row.\n"
        f"  source: {show(source, missing)}\n  restored: {show(target, extra)}"
    )


def _slots(value: Any, path: tuple[str, ...]) -> list[tuple[Any, str]]:
    if not path:
        return []
    head, rest = path[0], path[1:]
    if head == "*":
        return [s for v in (value if isinstance(value, list) else []) for s in _slots(v, rest)]
    if not isinstance(value, dict) or head not in value:
        return []
    return _slots(value[head], rest) if rest else [(value, head)]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _digest(expanded: dict[str, Any]) -> str:
    text = json.dumps(expanded, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
