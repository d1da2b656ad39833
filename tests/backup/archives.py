"""Making archives for the tests: a small labelled study dumped once, and rewritten copies of
it (a member changed, the manifest changed, members added) to feed the restore."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotator.backup.archive import MANIFEST
from annotator.backup.dump import dump_study
from annotator.studies.services import next_assignment, submit_annotation
from tests.studies.factories import World, make_world


def labelled_world() -> World:
    """Two issues, both labelled by both annotators (one item agreed, one not)."""
    world = make_world(items=2)
    for n, person in enumerate(world.annotators):
        while (assignment := next_assignment(study=world.study, annotator=person)) is not None:
            agreed = n == 0 or assignment.item.issue_id == world.issues[0].pk
            symptom = "hang" if agreed else "oom"
            labels = world.labels(screening="relevant", symptom=symptom, fix=["version"])
            submit_annotation(assignment=assignment, user=person, labels=labels, notes="seen")
    return world


def dump_to(world: World, path: Path) -> Path:
    with path.open("wb") as out:
        dump_study(study=world.study, target=out)
    return path


def read(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and every member's bytes."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    return json.loads(members.pop(MANIFEST)), members


def rewrite(
    source: Path,
    target: Path,
    *,
    members: Callable[[dict[str, bytes]], None] | None = None,
    manifest: Callable[[dict[str, Any]], None] | None = None,
    reseal: bool = False,
) -> Path:
    """A copy of `source` with its members and/or manifest changed in place by the callables;
    `reseal` recomputes each member's counts and SHA-256 (a consistent archive with bad rows)."""
    data, files = read(source)
    if members:
        members(files)
    if reseal:
        for table in data["tables"]:
            content = files[table["member"]]
            table["sha256"] = hashlib.sha256(content).hexdigest()
            table["bytes"], table["rows"] = len(content), content.count(b"\n")
    if manifest:
        manifest(data)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
        archive.writestr(MANIFEST, json.dumps(data))
    return target


def edit_line(files: dict[str, bytes], member: str, line: int, change: dict[str, Any]) -> None:
    """Change fields of one row (1-based line) of a member."""
    rows = files[member].decode().splitlines()
    row = json.loads(rows[line - 1])
    row.update(change)
    rows[line - 1] = json.dumps(row)
    files[member] = ("\n".join(rows) + "\n").encode()
