"""The import graph keeps one home for each concern (DESIGN "Layout", "SQL modules"):

- no two apps import each other, directly or through a cycle of modules (a strongly connected
  component of the module graph spanning two apps); the project package's own modules
  (annotator/jobs.py, annotator/sql.py, …) count as one more app, "the project";
- the project's shared machinery (jobs, dispatch, SQL helpers, cache, middleware, uploads)
  imports no app: job models name their own task and clean-up;
- no module imports another app's `views` (access checks live in `access.py` modules);
- `taxonomy_app` imports no `annotator.*` app.

The graph is read with `ast`, without importing anything (no Django setup): every `import` and
`from … import …` at any depth (a lazy import inside a function is an edge too), relative imports
resolved, `from package import name` an edge to `package.name` when that is a module. Migrations
are left out. IMPORT_GRAPH_ROOT points the checks at another checkout.
"""

from __future__ import annotations

import ast
import os
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("IMPORT_GRAPH_ROOT") or Path(__file__).resolve().parents[1])
TOP_PACKAGES = ("annotator", "taxonomy_app")
PROJECT = "annotator"
# Shared machinery every app uses: importing an app from here would tie them all together.
PROJECT_MODULES_IMPORTING_NO_APP = (
    "annotator.jobs",
    "annotator.job_sweep",
    "annotator.dispatch",
    "annotator.sql",
    "annotator.cache",
    "annotator.middleware",
    "annotator.uploads",
    "annotator.upload_handling",
)

Graph = dict[str, set[str]]


# --- reading the graph ---------------------------------------------------------------------------
def modules_under(root: Path) -> dict[str, Path]:
    """Every module of the project's packages (dotted name → file), migrations left out."""
    found = {}
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def import_graph(root: Path) -> Graph:
    """Module → the project's modules it imports (at module level or inside a function)."""
    modules = modules_under(root)
    return {name: set(_imported(name, path, modules)) - {name} for name, path in modules.items()}


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterable[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _nearest_module(alias.name, modules)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                yield from _nearest_module(target if target in modules else base, modules)


def _absolute(module: str | None, level: int, package: str) -> str:
    if not level:
        return module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def _nearest_module(target: str, modules: dict[str, Path]) -> Iterable[str]:
    """`target`, or the nearest module above it (none outside the project's packages)."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in modules:
            yield prefix
            return


def app_of(module: str, root: Path = ROOT) -> str:
    """`annotator.<pkg>` for a module of an app package, `taxonomy_app`, or "annotator" (the
    project) for the project package's own modules."""
    parts = module.split(".")
    if parts[0] == PROJECT and len(parts) > 1 and (root / PROJECT / parts[1]).is_dir():
        return f"{PROJECT}.{parts[1]}"
    return parts[0]


def is_views(module: str, root: Path = ROOT) -> bool:
    """An app's views: its `views` package or module, or a `views_*` module beside it."""
    app = app_of(module, root)
    rest = module[len(app) + 1 :].split(".") if module != app else []
    return app != PROJECT and bool(rest) and (rest[0] == "views" or rest[0].startswith("views_"))


# --- the checks ----------------------------------------------------------------------------------
def components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of `graph` (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(sorted(component))
    return found


def cross_app_cycles(graph: Graph, root: Path = ROOT) -> list[str]:
    """Each component spanning more than one app, as the shortest cycle through one of its
    edges between apps: "a.x → b.y → a.x (component: …)"."""
    found = []
    for component in components(graph):
        if len({app_of(module, root) for module in component}) < 2:
            continue
        members = set(component)
        cycles = [
            [*_path(graph, members, target, source), target]
            for source in component
            for target in sorted(graph[source] & members)
            if app_of(source, root) != app_of(target, root)
        ]
        shortest = min(cycles, key=lambda cycle: (len(cycle), cycle))
        found.append(" → ".join(shortest) + f"  (component of {len(component)} modules)")
    return found


def _path(graph: Graph, members: set[str], start: str, end: str) -> list[str]:
    """The shortest path from `start` to `end` inside `members` (breadth first)."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == end:
            break
        for successor in sorted(graph[node] & members):
            if successor not in came_from:
                came_from[successor] = node
                queue.append(successor)
    path: list[str] = []
    step: str | None = end
    while step is not None:
        path.append(step)
        step = came_from[step]
    return path[::-1]


def edges(graph: Graph) -> Iterable[tuple[str, str]]:
    return ((source, target) for source in sorted(graph) for target in sorted(graph[source]))


def project_modules_importing_apps(graph: Graph, root: Path = ROOT) -> list[str]:
    return [
        f"{source} imports {target}"
        for source, target in edges(graph)
        if source in PROJECT_MODULES_IMPORTING_NO_APP and app_of(target, root) != PROJECT
    ]


def imports_of_other_apps_views(graph: Graph, root: Path = ROOT) -> list[str]:
    return [
        f"{source} imports {target}"
        for source, target in edges(graph)
        if is_views(target, root) and app_of(source, root) != app_of(target, root)
    ]


def taxonomy_imports_of_annotator_apps(graph: Graph, root: Path = ROOT) -> list[str]:
    return [
        f"{source} imports {target}"
        for source, target in edges(graph)
        if app_of(source, root) == "taxonomy_app" and app_of(target, root).startswith("annotator.")
    ]


# --- the tests -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT)


def test_no_two_apps_import_each_other_directly_or_through_a_cycle(graph: Graph) -> None:
    found = cross_app_cycles(graph)
    assert not found, "\n".join(found)


def test_the_projects_shared_modules_import_no_app(graph: Graph) -> None:
    found = project_modules_importing_apps(graph)
    assert not found, "\n".join(found)


def test_no_module_imports_another_apps_views(graph: Graph) -> None:
    found = imports_of_other_apps_views(graph)
    assert not found, "\n".join(found)


def test_taxonomy_app_imports_no_annotator_app(graph: Graph) -> None:
    found = taxonomy_imports_of_annotator_apps(graph)
    assert not found, "\n".join(found)


def test_the_graph_is_read_whole(graph: Graph) -> None:
    # A walker that missed modules or edges would pass the checks above vacuously.
    assert len(graph) > 150
    assert "annotator.jobs" in graph["annotator.exports.models"]  # absolute, module level
    assert "annotator.exports.models" in graph["annotator.exports.services"]  # relative
    assert "annotator.studies.views.annotate" in graph["annotator.studies.urls"]  # a module
    assert "annotator.job_sweep" in graph["annotator.jobs"]  # inside a function


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    files = {
        "annotator/__init__.py": "",
        "annotator/jobs.py": "def sweep():\n    from annotator.shop.services import tidy\n",
        "annotator/shop/__init__.py": "",
        "annotator/shop/models.py": "from annotator.jobs import sweep\n",
        "annotator/shop/services.py": "from . import models\n",
        "annotator/shop/views/__init__.py": "",
        "annotator/shop/views/access.py": "",
        "annotator/till/__init__.py": "",
        "annotator/till/api.py": "from annotator.shop.views import access\n",
        "annotator/till/migrations/0001_initial.py": "import annotator.shop.views.access\n",
        "taxonomy_app/__init__.py": "",
        "taxonomy_app/models.py": "import annotator.till.api\nimport annotator.sql\n",
        "annotator/sql.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    small = import_graph(tmp_path)

    assert "annotator.till.migrations.0001_initial" not in small
    assert cross_app_cycles(small, tmp_path) == [
        "annotator.jobs → annotator.shop.services → annotator.shop.models → annotator.jobs"
        "  (component of 3 modules)"
    ]
    assert project_modules_importing_apps(small, tmp_path) == [
        "annotator.jobs imports annotator.shop.services"
    ]
    assert imports_of_other_apps_views(small, tmp_path) == [
        "annotator.till.api imports annotator.shop.views.access"
    ]
    assert taxonomy_imports_of_annotator_apps(small, tmp_path) == [
        "taxonomy_app.models imports annotator.till.api"
    ]
