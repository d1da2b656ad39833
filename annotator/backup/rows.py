"""How archived rows become database rows, table by table: each field's converter from its
JSON value (strict: a row written by `dump_study` has every value in its JSON type), the values
of fields an archive does not carry, and one multi-row INSERT … RETURNING per batch
(`sql.RowInsert`).

Why not Django's bulk insert: it builds a model instance per row and runs every value through
the SQL compiler, two thirds of a restore's time at 200,000 rows. Here a table's plan is made
once; values that need no adapting (ids, numbers, text, booleans — already checked) go to the
driver as they are, the others (times, JSON) through the field's own `get_db_prep_save`. Rows
go in raw, as `loaddata` writes them: timestamps are the archive's, not the restore's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from .sql import RowInsert
from .tables import Table

INTEGERS = {
    "AutoField",
    "BigAutoField",
    "SmallAutoField",
    "IntegerField",
    "BigIntegerField",
    "SmallIntegerField",
    "PositiveIntegerField",
    "PositiveSmallIntegerField",
    "PositiveBigIntegerField",
    "ForeignKey",
    "OneToOneField",
}
TEXTS = {"CharField", "TextField", "SlugField", "EmailField", "URLField", "FileField"}
# Passed to the driver as they are; every other type goes through get_db_prep_save.
PLAIN = INTEGERS | TEXTS | {"BooleanField", "FloatField"}


class BadValue(ValueError):
    """A value that does not fit its field; the message says how (the caller names where)."""


def converter(f: models.Field[Any, Any]) -> Callable[[Any], Any]:
    """The function turning an archived JSON value into the field's Python value."""
    kind = f.get_internal_type()
    choices = frozenset(c[0] for c in f.flatchoices) if f.choices else None
    if kind in TEXTS:
        return lambda raw: _text(f, raw, choices)
    if kind in INTEGERS:
        return _integer
    if kind == "BooleanField":
        return lambda raw: _typed(raw, bool, "true or false")
    if kind == "FloatField":
        return _float
    if kind == "DateTimeField":
        return _datetime
    if kind == "DateField":
        return lambda raw: _parsed(raw, parse_date, "a date (YYYY-MM-DD)")
    if kind == "JSONField":
        return lambda raw: raw
    return f.to_python


def _text(f: Any, raw: Any, choices: frozenset[Any] | None) -> str:
    if not isinstance(raw, str):
        raise BadValue(f"{raw!r} is not text")
    if f.max_length and len(raw) > f.max_length:
        raise BadValue(f"longer than {f.max_length} characters")
    if choices is not None and raw not in choices and not (f.blank and raw == ""):
        raise BadValue(f"{raw!r} is not one of {sorted(choices)}")
    return raw


def _integer(raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise BadValue(f"{raw!r} is not a whole number")
    return raw


def _float(raw: Any) -> float:
    if not isinstance(raw, int | float) or isinstance(raw, bool):
        raise BadValue(f"{raw!r} is not a number")
    return float(raw)


def _typed(raw: Any, kind: type, words: str) -> Any:
    if not isinstance(raw, kind):
        raise BadValue(f"{raw!r} is not {words}")
    return raw


def _parsed(raw: Any, parse: Callable[[str], Any], words: str) -> Any:
    try:
        value = parse(raw) if isinstance(raw, str) else None
    except ValueError:
        value = None
    if value is None:
        raise BadValue(f"{raw!r} is not {words}")
    return value


def _datetime(raw: Any) -> Any:
    value = _parsed(raw, parse_datetime, "a date and time (ISO 8601)")
    if timezone.is_naive(value):
        raise BadValue(f"{raw!r} has no time zone")
    return value


def default(f: Any) -> Any:
    """The value of a field an archive does not carry (an older archive, or left out)."""
    if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
        return timezone.now()
    return f.get_default()


class TablePlan:
    """Everything about one table a restore needs per row, worked out once."""

    def __init__(self, table: Table, connection: Any) -> None:
        model = table.model
        pk = model._meta.pk
        assert pk is not None
        self.pk = pk
        self.generated = not pk.is_relation
        self.archived = table.fields()
        self.converters = {f.name: converter(f) for f in self.archived}
        self.columns = [
            f for f in model._meta.concrete_fields if not (f.primary_key and self.generated)
        ]
        # Every column's, not only those left out of archives: an older archive lacks the
        # fields added since (schema.check_compatible admits those that have a default).
        self.defaults = {f.attname: default(f) for f in self.columns}
        self.adapters = [
            None if f.get_internal_type() in PLAIN else _adapter(f, connection)
            for f in self.columns
        ]
        # Parameters per statement stay under SQLite's and PostgreSQL's limits.
        batch = max(1, min(1000, 30_000 // len(self.columns)))
        self.statement = RowInsert(model, self.columns, returning=self.generated, batch=batch)

    def database_row(self, values: dict[str, Any]) -> list[Any]:
        row = []
        for f, adapt in zip(self.columns, self.adapters, strict=True):
            value = values[f.attname] if f.attname in values else self.defaults[f.attname]
            row.append(value if adapt is None or value is None else adapt(value))
        return row

    def insert(self, rows: list[list[Any]]) -> list[int]:
        """Insert the rows; the new primary keys in the same order (generated keys only)."""
        return self.statement.insert(rows)


def _adapter(f: Any, connection: Any) -> Callable[[Any], Any]:
    return lambda value: f.get_db_prep_save(value, connection)
