"""The schema side of an archive: how tables and fields are described in the manifest, and
whether an archive's description fits this database's models before a restore writes a row."""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.migrations.loader import MigrationLoader
from django.db.models import NOT_PROVIDED

from .archive import Manifest, TableEntry
from .errors import RestoreError
from .tables import BY_LABEL, BY_MODEL, TABLES, Table


def app_version() -> str:
    try:
        return version("annotator")
    except PackageNotFoundError:
        pass
    try:
        pyproject = Path(settings.BASE_DIR) / "pyproject.toml"
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def describe_fields(table: Table) -> list[dict[str, Any]]:
    """Each archived field: name, Django type, the table a reference points to, nullability."""
    out = []
    for f in table.fields():
        entry: dict[str, Any] = {"name": f.name, "type": f.get_internal_type()}
        if f.primary_key:
            entry["primary_key"] = True
        if f.is_relation:
            entry["references"] = BY_MODEL[f.related_model].label  # type: ignore[index]
        if f.null:
            entry["null"] = True
        out.append(entry)
    return out


def migration_heads(apps: list[str]) -> dict[str, list[str]]:
    """The latest migration(s) of each app: the schema the archive's rows were read from."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    heads: dict[str, list[str]] = {app: [] for app in apps}
    for app, name in graph.leaf_nodes():
        if app in heads:
            heads[app].append(name)
    return heads


def check_compatible(manifest: Manifest) -> None:
    """Refuse an archive this database cannot hold as it is: a table or field unknown here, a
    reference to another table than here, a migration newer than this code (an archive made
    by a newer annotator), or a table missing. Fields this version has and the archive lacks
    (an older archive) take their defaults."""
    _check_migrations(manifest.migrations)
    labels = {t.table for t in manifest.tables}
    for label in sorted(labels - BY_LABEL.keys()):
        raise RestoreError(
            f"table {label!r} is not known to this version of annotator (a newer one made it?)"
        )
    for table in TABLES:
        entry = manifest.table(table.label)
        if entry is None:
            if made_before(table, manifest.migrations):
                continue  # an archive from before the table existed: restored without rows
            raise RestoreError(f"{table.member}: missing from the archive")
        _check_fields(table, entry)
    studies = manifest.table("studies.study")
    if studies is not None and studies.rows != 1:
        raise RestoreError(f"{studies.member}: holds {studies.rows} studies; a backup holds one")


def made_before(table: Table, heads: dict[str, list[str]]) -> bool:
    """Whether an archive with these migration heads was made before `table` existed: its
    app's heads do not reach the migration that created it."""
    if table.added_in is None:
        return False
    app, created = table.added_in
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    reached = {node for name in heads.get(app, []) for node in graph.forwards_plan((app, name))}
    return (app, created) not in reached


def _check_migrations(heads: dict[str, list[str]]) -> None:
    nodes = MigrationLoader(None, ignore_no_migrations=True).graph.nodes
    for app, names in sorted(heads.items()):
        for name in names:
            if (app, name) not in nodes:
                raise RestoreError(
                    f"the archive was made by a newer annotator: migration {app}.{name} is "
                    "unknown here; upgrade annotator, then restore"
                )


def _check_fields(table: Table, entry: TableEntry) -> None:
    model_fields = {f.name: f for f in table.fields()}
    described = {d["name"]: d for d in describe_fields(table)}
    for archived in entry.fields:
        here = described.get(archived.name)
        if here is None:
            raise RestoreError(f"{entry.member}: field {archived.name!r} is unknown here")
        if archived.references != here.get("references"):
            raise RestoreError(
                f"{entry.member}: field {archived.name!r} refers to {archived.references}, "
                f"here to {here.get('references')}"
            )
    pk = table.model._meta.pk
    if pk is None or pk.name not in entry.field_names():
        raise RestoreError(f"{entry.member}: the key field is missing")
    for name, f in model_fields.items():
        if name not in entry.field_names() and not has_default(f):
            raise RestoreError(f"{entry.member}: field {name!r} is missing and has no default")


def has_default(f: Any) -> bool:
    """Whether a field an archive lacks can still be filled: nullable, a default, or a time."""
    automatic = getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    return bool(f.null or f.default is not NOT_PROVIDED or automatic)
