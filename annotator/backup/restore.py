"""Restore a study from a backup archive into this database: all of it, or nothing.

The archive is checked whole before a row is written (manifest, member names and sizes,
SHA-256 and row counts; tables and fields against this database's models and migrations). Then
one transaction writes the tables in foreign-key order, a batch at a time: every row gets a new
primary key and every reference is mapped from the archive's ids to the new ones. Rows that may
already exist here are found by natural key instead (see `matching.py` and `codebooks.py`): users
by username, repositories by owner/name, issues by repository and number, comments by issue and
key, codebook versions by codebook slug and number — reused when identical, refused (naming the
member, line and field) when the same key holds different content.

Rows are inserted raw (as `loaddata` does), so created/updated timestamps are the archive's, not
the moment of the restore.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, models, transaction

from annotator.issues.search import index_pending_issues
from annotator.studies.models import Membership, Study

from .archive import ArchiveReader, Limits, TableEntry
from .errors import RestoreError
from .rows import BadValue, TablePlan
from .schema import check_compatible
from .tables import BY_MODEL, TABLES, Table, referenced_labels

BATCH = 1000
SKIP = -1  # a rule's answer: leave this row out (and every row that points to it)
# A reference to a row later in the same table: (old id, attname, old id it points to, line).
Deferred = tuple[int, str, int, int]


@dataclass
class RestoreOptions:
    name: str = ""  # the restored study's name; empty: the archive's (renamed when taken)
    owner: Any = None  # made owner of the restored study unless already a member
    prefer_existing_issues: bool = False  # keep this server's copy of an issue that differs
    on_progress: Callable[[int, int], None] | None = None


@dataclass
class RestoreResult:
    study: Study | None = None
    written: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    users_created: list[str] = field(default_factory=list)
    kept_existing: int = 0  # issues and comments that differ here, kept as they are here
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        assert self.study is not None
        text = (
            f"restored study {self.study.name!r} (id {self.study.pk}): "
            f"{sum(self.written.values())} rows written, {sum(self.reused.values())} reused"
        )
        reused = ", ".join(f"{label} {n}" for label, n in self.reused.items() if n)
        if reused:
            text += f" ({reused})"
        if self.kept_existing:
            text += f"; kept this server's copy of {self.kept_existing} changed issues/comments"
        if self.users_created:
            text += (
                f"; new accounts without a password: {', '.join(self.users_created)} "
                "(set one with `manage.py changepassword NAME` or in the admin)"
            )
        return "\n".join([text, *self.notes])


@dataclass
class Pending:
    """A decoded row on its way in: its line, its id in the archive, its values by attname,
    and the row as archived (old ids)."""

    line: int
    old: int
    values: dict[str, Any]
    row: dict[str, Any]


def configured_limits() -> Limits:
    """Archive bounds; settings may lower or raise them (BACKUP_MAX_INFLATED_MB, …)."""
    default = Limits()
    inflated = getattr(settings, "BACKUP_MAX_INFLATED_MB", default.max_inflated // 1024**2)
    return Limits(max_inflated=int(inflated) * 1024**2)


def open_archive(
    path: str | Path | IO[bytes], *, name: str = "", limits: Limits | None = None
) -> ArchiveReader:
    """Open and check an archive whole (structure, checksums, schema); raises a refusal."""
    reader = ArchiveReader(path, limits=limits or configured_limits(), name=name)
    try:
        reader.verify()
        check_compatible(reader.manifest)
    except BaseException:
        reader.close()
        raise
    return reader


def restore_study(
    path: str | Path | IO[bytes],
    *,
    options: RestoreOptions | None = None,
    name: str = "",
    index_for_search: bool = True,
) -> RestoreResult:
    """Restore the archive at `path` as a new study; returns what was written and reused.
    Raises ArchiveError or RestoreError (nothing written) when it cannot."""
    with open_archive(path, name=name) as reader, transaction.atomic():
        result = Restorer(reader, options or RestoreOptions()).run()
    if index_for_search:
        index_pending_issues()
    return result


class Restorer:
    """One restore: the archive's tables written in order, the old → new id maps of the tables
    other rows point to, the rows left out, and what each table's rule found here."""

    def __init__(self, reader: ArchiveReader, options: RestoreOptions) -> None:
        from .codebooks import CodebookRules
        from .matching import row_rules

        self.reader, self.options = reader, options
        self.ids: dict[str, dict[int, int]] = {label: {} for label in referenced_labels()}
        self.skipped: dict[str, set[int]] = defaultdict(set)
        self.result = RestoreResult()
        self.done, self.total = 0, reader.manifest.total_rows
        self.plans: dict[str, TablePlan] = {}
        self.rules = {**row_rules(self), **CodebookRules(self).rules()}

    def run(self) -> RestoreResult:
        for table in TABLES:
            entry = self.reader.manifest.table(table.label)
            if entry is None:  # check_compatible let only a table newer than the archive lack
                continue
            self.load(table, entry)
        study = Study.objects.get(pk=next(iter(self.ids["studies.study"].values())))
        self._add_owner(study)
        self.result.study = study
        return self.result

    def entry(self, label: str) -> TableEntry:
        entry = self.reader.manifest.table(label)
        assert entry is not None
        return entry

    # --- one table ---------------------------------------------------------------------------

    def load(self, table: Table, entry: TableEntry) -> None:
        deferred: list[Deferred] = []
        rule = self.rules.get(table.label)
        written, found_here = 0, set[int]()
        for batch in _batched(self.reader.rows(entry), BATCH):
            pending: list[Pending] = []
            for line, row in batch:
                decoded = self.decode(table, entry, line, row, deferred)
                if decoded is None:
                    self.skipped[table.label].add(row[_pk_name(table)])
                else:
                    pending.append(decoded)
            matched = rule(pending) if rule else {}
            fresh = [p for p in pending if p.old not in matched]
            for old, new in matched.items():
                if new == SKIP:
                    self.skipped[table.label].add(old)
                elif table.label in self.ids:
                    self.ids[table.label][old] = new
            self.insert(table, entry, fresh)
            written += len(fresh)
            found_here.update(old for old, new in matched.items() if new != SKIP)
            self._progress(len(batch))
        self._resolve(table, entry, [d for d in deferred if d[0] not in found_here])
        self.result.written[table.label] = written
        self.result.reused[table.label] = len(found_here)

    def decode(
        self,
        table: Table,
        entry: TableEntry,
        line: int,
        row: dict[str, Any],
        deferred: list[Deferred],
    ) -> Pending | None:
        """The row's values by attname, references mapped to new ids; None when it points to
        a row a rule left out."""
        plan = self.plan(table)
        old = row[plan.pk.name]
        if not isinstance(old, int) or isinstance(old, bool):
            raise RestoreError(f"{entry.member} line {line}, field {plan.pk.name!r}: not an id")
        values: dict[str, Any] = {}
        for f in plan.archived:
            if f.name not in row:
                continue  # an older archive: the plan's default fills it
            raw = row[f.name]
            if f.is_relation:
                target = BY_MODEL[f.related_model].label  # type: ignore[index]
                if raw is not None and raw in self.skipped[target]:
                    return None
                if target == table.label and raw is not None and raw not in self.ids[target]:
                    deferred.append((old, f.attname, raw, line))  # later in this same table
                    values[f.attname] = None
                else:
                    values[f.attname] = self.reference(entry, line, f, raw, target)
            elif not f.primary_key:
                values[f.attname] = self.convert(plan, entry, line, f, raw)
        for name, refs in table.json_refs.items():
            where = f"{entry.member} line {line}, field {name!r}"
            for path, target in refs:
                self._remap_json(values.get(name), path, target, where)
        return Pending(line=line, old=old, values=values, row=row)

    def plan(self, table: Table) -> TablePlan:
        if table.label not in self.plans:
            self.plans[table.label] = TablePlan(table, connection)
        return self.plans[table.label]

    def convert(self, plan: TablePlan, entry: TableEntry, line: int, f: Any, raw: Any) -> Any:
        if raw is None:
            if f.null:
                return None
            raise RestoreError(f"{entry.member} line {line}, field {f.name!r}: empty, but required")
        try:
            return plan.converters[f.name](raw)
        except (BadValue, ValidationError) as error:
            reason = " ".join(error.messages) if isinstance(error, ValidationError) else error
            raise RestoreError(f"{entry.member} line {line}, field {f.name!r}: {reason}") from None

    def reference(
        self, entry: TableEntry, line: int, f: models.Field[Any, Any], raw: Any, target: str
    ) -> int | None:
        where = f"{entry.member} line {line}, field {f.name!r}"
        if raw is None:
            if not f.null:
                raise RestoreError(f"{where}: empty, but every row needs one")
            return None
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise RestoreError(f"{where}: {raw!r} is not an id")
        new = self.ids[target].get(raw)
        if new is None:
            raise RestoreError(f"{where}: {raw} is not a row of {target}.jsonl")
        return new

    def insert(self, table: Table, entry: TableEntry, rows: list[Pending]) -> None:
        """Insert the rows and record their new ids."""
        if not rows:
            return
        plan = self.plan(table)
        database_rows = [plan.database_row(p.values) for p in rows]
        try:
            with transaction.atomic():
                new = plan.insert(database_rows)
        except DatabaseError:
            self._explain_refusal(plan, entry, rows, database_rows)
            raise
        if table.label in self.ids:
            if not plan.generated:
                new = [p.values[plan.pk.attname] for p in rows]
            self.ids[table.label].update(zip((p.old for p in rows), new, strict=True))

    def _explain_refusal(
        self, plan: TablePlan, entry: TableEntry, rows: list[Pending], database_rows: list[Any]
    ) -> None:
        """A batch the database refused: insert its rows one by one to name the line."""
        for p, values in zip(rows, database_rows, strict=True):
            try:
                with transaction.atomic():
                    plan.insert([values])
            except DatabaseError as error:
                reason = str(error).strip().splitlines()[0]
                raise RestoreError(
                    f"{entry.member} line {p.line}: the database refused the row: {reason}"
                ) from None

    def _resolve(self, table: Table, entry: TableEntry, deferred: list[Deferred]) -> None:
        """Set references to rows later in the same table (a category's parent, …)."""
        ids = self.ids.get(table.label, {})
        manager = table.model._base_manager
        for old, attname, raw, line in deferred:
            if old in self.skipped[table.label] or old not in ids:
                continue
            if raw not in ids:
                name = attname.removesuffix("_id")
                raise RestoreError(
                    f"{entry.member} line {line}, field {name!r}: {raw} is not a row of "
                    f"{entry.member}"
                )
            manager.filter(pk=ids[old]).update(**{attname: ids[raw]})

    def _remap_json(self, value: Any, path: tuple[str, ...], target: str, where: str) -> None:
        """Rewrite an id inside a JSON column (e.g. a run's result names its study); `where`
        names the member, line and column in a note about an id that names no row."""
        for holder, key in _json_slots(value, path):
            old = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(old, bool) or not (
                isinstance(old, int) or (isinstance(old, str) and old.isdigit())
            ):
                continue
            new = self.ids[target].get(int(old))
            if new is None:
                self.result.notes.append(
                    f"{where}: {'.'.join(path)} = {old} names no row of {target}.jsonl; cleared"
                )
            holder[key] = None if new is None else (str(new) if isinstance(old, str) else new)

    def _progress(self, rows: int) -> None:
        before, self.done = self.done, self.done + rows
        callback = self.options.on_progress
        if callback and (self.done // 5000 != before // 5000 or self.done == self.total):
            callback(self.done, self.total)

    def _add_owner(self, study: Study) -> None:
        owner = self.options.owner
        if owner is None or Membership.objects.filter(study=study, user=owner).exists():
            return
        Membership.objects.create(study=study, user=owner, role=Membership.Role.OWNER)
        self.result.notes.append(f"{owner.get_username()} was made an owner of the study")


def _pk_name(table: Table) -> str:
    pk = table.model._meta.pk
    assert pk is not None
    return pk.name


def _json_slots(value: Any, path: tuple[str, ...]) -> Iterator[tuple[Any, str]]:
    """(container, key) of every place `path` reaches in `value`; "*" walks a list."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if head == "*":
        for element in value if isinstance(value, list) else []:
            yield from _json_slots(element, rest)
    elif isinstance(value, dict):
        if rest:
            yield from _json_slots(value.get(head), rest)
        else:
            yield value, head


def _batched(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch
