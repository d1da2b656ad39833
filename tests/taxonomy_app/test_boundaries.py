"""taxonomy_app imports nothing from annotator (annotator apps may import it, never the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "taxonomy_app"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_taxonomy_app_imports_nothing_from_annotator():
    offenders = {
        str(path.relative_to(APP)): sorted(
            m for m in imported_modules(path) if m.split(".")[0] == "annotator"
        )
        for path in APP.rglob("*.py")
    }

    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_no_string_imports_of_annotator_either():
    # import_string / importlib paths would dodge the AST check above.
    for path in APP.rglob("*.py"):
        text = path.read_text()
        for line in text.splitlines():
            if "import_module(" in line or "import_string(" in line:
                assert '"annotator' not in line, f"{path}: {line}"
