"""Helpers for hand-written SQL statements: quoted names, row locks, rows built back into model
instances, inserts and child-row rewrites as the ORM stores them. The apps' own statements live in
their `sql.py` modules and use these."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model, QuerySet

Row = TypeVar("Row")
M = TypeVar("M", bound=Model)


def one_or_none(queryset: QuerySet[Any, Row]) -> Row | None:
    """The row of a query that matches at most one (a key lookup), or None.

    Unlike `.first()` it adds no ORDER BY: `.first()` orders by the model's Meta ordering, which
    Django compiles on every call (ordering by a foreign key follows that model's own ordering,
    with a join for each hop) and PostgreSQL then plans as ORDER BY … LIMIT 1, a search over
    sort orders. On the labeling path that cost more than the lookups themselves."""
    return next(iter(queryset.order_by()[:1]), None)


def table(model: type[Model]) -> str:
    """The model's table name, quoted, for a hand-written statement."""
    return connection.ops.quote_name(model._meta.db_table)


class Table:
    """A model's table in a hand-written statement, under an optional alias, with its columns by
    field name, so that no table or column name is written by hand:

        i = Table(Item, "i")
        f"SELECT {i.id} FROM {i} WHERE {i.study} = %s"
        # SELECT i."id" FROM "studies_item" i WHERE i."study_id" = %s

    A field that no longer exists raises FieldDoesNotExist when the statement is built (at
    import for a module-level statement), so a renamed field fails a test, not a request.
    `.bare()` is the table name without the alias (UPDATE, ANALYZE), `.c("field")` a column
    without the alias (SET lists). Every field name works as an attribute, except `c` and
    `bare`: use `.c("c")` for those."""

    def __init__(self, model: type[Model], alias: str = "") -> None:
        self._model = model
        self._alias = alias
        self._table = table(model)

    def __str__(self) -> str:
        return f"{self._table} {self._alias}" if self._alias else self._table

    def bare(self) -> str:
        """The table's name, quoted, without the alias."""
        return self._table

    def c(self, field: str) -> str:
        """The field's column, quoted, without the alias."""
        meta = self._model._meta
        found = meta.pk if field == "pk" else meta.get_field(field)
        column = getattr(found, "column", None)
        if column is None:
            raise ValueError(f"{self._model.__name__}.{field} is not a column")
        return connection.ops.quote_name(str(column))

    def __getattr__(self, field: str) -> str:
        if field.startswith("_"):
            raise AttributeError(field)
        column = self.c(field)
        return f"{self._alias}.{column}" if self._alias else column


def lock_clause(of: str = "", *, skip_locked: bool = False, no_key: bool = False) -> str:
    """ " FOR [NO KEY] UPDATE [OF table] [SKIP LOCKED]" for a hand-written SELECT, or "" on a
    database without row locks (SQLite, the demo), as the ORM's select_for_update does."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    key = "NO KEY " if no_key and features.has_select_for_no_key_update else ""
    return (
        f" FOR {key}UPDATE" + (f" OF {of}" if of else "") + (" SKIP LOCKED" if skip_locked else "")
    )


class Columns:
    """One model's columns under a table alias in a hand-written SELECT, and the instance built
    back from them as the ORM would: with each field's converters (JSON decoding, SQLite's dates
    and booleans) and `defer`red fields loaded on access.

    For the few queries on every request where composing the ORM query costs more than running
    it: the SQL is written once, and reading a row back costs no query compilation."""

    def __init__(self, model: type[Model], alias: str, *, defer: Collection[str] = ()) -> None:
        self.model = model
        self.alias = alias
        self.fields = [f for f in model._meta.concrete_fields if f.name not in defer]
        self.names = [f.attname for f in self.fields]
        self.pk_index = self.names.index(model._meta.pk.attname)
        self._converters: dict[str, list[tuple[int, list[Any], Any]]] = {}

    def sql(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(str(f.column))}" for f in self.fields)

    def build(self, row: Sequence[Any], start: int) -> Any:
        """The instance from `row[start:]`, or None where a LEFT JOIN found no row."""
        values = list(row[start : start + len(self.fields)])
        if values[self.pk_index] is None:
            return None
        for index, converters, column in self._converters_for_backend():
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        return self.model.from_db(connection.alias, self.names, values)

    def _converters_for_backend(self) -> list[tuple[int, list[Any], Any]]:
        found = self._converters.get(connection.vendor)
        if found is None:
            found = []
            for index, field in enumerate(self.fields):
                column = field.get_col(self.alias)
                converters = connection.ops.get_db_converters(column)
                converters += column.get_db_converters(connection)
                if converters:
                    found.append((index, converters, column))
            self._converters[connection.vendor] = found
        return found


def insert(instance: M, *, on_conflict: Sequence[str] = (), update: Sequence[str] = ()) -> M:
    """Insert a new `instance` in one hand-written INSERT … RETURNING, as `save()` would store
    it (defaults, `auto_now_add` and the other fields' pre_save), and return it with its key.
    With `on_conflict` (the fields of a unique constraint) an existing row is updated instead,
    its `update` fields set from `instance` (ON CONFLICT … DO UPDATE, as `bulk_create(...,
    update_conflicts=True)` does).

    No save signals are sent (nothing in this project listens to them). For the labeling loop,
    where compiling the ORM's insert cost more than the insert."""
    meta = instance._meta
    pk = meta.pk
    assert pk is not None
    fields = [f for f in meta.concrete_fields if f is not pk or getattr(instance, f.attname)]
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table(type(instance))} ({columns}) VALUES ({marks})"
    if on_conflict:
        target = ", ".join(_column(instance, name) for name in on_conflict)
        changed = [_column(instance, name) for name in update]
        sets = ", ".join(f"{column} = EXCLUDED.{column}" for column in changed)
        sql += f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} RETURNING {quote(str(pk.column))}", values)
        (key,) = cursor.fetchone()
    setattr(instance, pk.attname, key)
    instance._state.adding = False
    instance._state.db = connection.alias
    return instance


def _column(instance: Model, name: str) -> str:
    field = instance._meta.get_field(name)
    assert isinstance(field, Field), name
    return connection.ops.quote_name(str(field.column))


def replace_rows(
    model: type[Model],
    parent: str,
    parent_id: int,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    new: bool = False,
) -> None:
    """Replace the rows of `model` whose `parent` field is `parent_id` by `rows` (values of the
    fields `columns`, after the parent's): a DELETE (none when the parent is `new`) and one
    multi-row INSERT. For the child rows (labels, facets) the labeling loop rewrites. Field
    names (or their attnames, "facet_id") are resolved through the model's `_meta`."""
    t = Table(model)
    with connection.cursor() as cursor:
        if not new:
            cursor.execute(f"DELETE FROM {t} WHERE {t.c(parent)} = %s", [parent_id])
        if rows:
            names = ", ".join(t.c(name) for name in (parent, *columns))
            marks = ", ".join(["%s"] * (len(columns) + 1))
            cursor.execute(
                f"INSERT INTO {t} ({names}) VALUES " + ", ".join([f"({marks})"] * len(rows)),
                [value for row in rows for value in (parent_id, *row)],
            )


# --- background jobs (annotator/jobs.py) --------------------------------------------------------
def touch_heartbeat(model: type[Model], pk: int, *, worker: str, status: str, at: datetime) -> bool:
    """Set `heartbeat_at` of job row `pk` to `at` if it is still `status` in `worker`'s hands;
    False when it is not, or when its row is locked (the job's own transaction finishing it).

    Not the ORM: the heartbeat thread must skip a locked row, not wait for it (the job's
    transaction may hold it for minutes), and an UPDATE takes SKIP LOCKED only through a
    locking subquery, which the ORM's `update()` does not compose."""
    t = Table(model)
    key, beat = t.c("pk"), t.c("heartbeat_at")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {t} SET {beat} = %s WHERE {key} = (SELECT {key} FROM {t} WHERE {key} = %s"
            f" AND {t.c('status')} = %s AND {t.c('worker')} = %s{lock_clause(skip_locked=True)})",
            [at, pk, status, worker],
        )
        return bool(cursor.rowcount)


def update_row_through(side: Any, model: type[Model], pk: int, values: Mapping[str, Any]) -> None:
    """Set `values` (field name → value) on row `pk` of `model` through the connection `side`,
    a second connection to the default database that autocommits, so that other connections see
    the change while the caller's transaction is still open (a job's progress).

    Not the ORM: the ORM runs a query on `django.db.connections[alias]`, this thread's one
    connection per alias, which is inside the job's transaction; `side` is none of those."""
    t = Table(model)
    params = []
    for name, value in values.items():
        field = model._meta.get_field(name)
        if not isinstance(field, Field) or field.column is None:
            raise ValueError(f"{model.__name__}.{name} is not a concrete field")
        params.append(field.get_db_prep_save(value, side))
    sets = ", ".join(f"{t.c(name)} = %s" for name in values)
    with side.cursor() as cursor:
        cursor.execute(f"UPDATE {t} SET {sets} WHERE {t.c('pk')} = %s", [*params, pk])
