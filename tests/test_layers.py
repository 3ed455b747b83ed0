"""Layers point down only, and no module imports itself in a circle (docs/architecture.md): read from the sources'
import statements, those inside functions included."""

import ast
import functools
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "commprof"
# lowest first; a module may import its own package and the layers below its own, nothing else
LAYERS = (
    {"errors", "backends", "native_logs", "commprof"},
    {"fields"},
    {"settings"},
    {"config", "values"},
    {"plans"},
    {"trace", "results"},
    {"kinds"},
    {"analysis", "instrument", "workloads", "launch", "render"},
    {"worker"},
    {"commands"},
    {"cli"},
    {"__main__"},
)


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The commprof modules `path` imports (`from commprof.x import y` counts as commprof.x.y when that is one)."""
    return _imports(path, frozenset(known))


@functools.cache  # both tests read every module's imports
def _imports(path: Path, known: frozenset[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("commprof"):
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
            }
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
    return found


def layer(module: str) -> tuple[int, str]:
    part = module.split(".")[1] if "." in module else module
    return next(i for i, names in enumerate(LAYERS) if part in names), part


def test_every_import_points_down_or_stays_in_its_package():
    known = modules()
    upward = []
    for module, path in known.items():
        level, package = layer(module)
        for target in imports(path, known):
            target_level, target_package = layer(target)
            if target_package != package and target_level >= level:
                upward.append(f"{module} -> {target}")
    assert not upward, "\n".join(upward)


def test_no_module_imports_itself_in_a_circle():
    known = modules()
    graph = {m: imports(p, known) - {m} for m, p in known.items()}
    circles = []
    for start in graph:  # depth-first from each module: is it reachable from what it imports?
        seen, todo = set(), list(graph[start])
        while todo:
            current = todo.pop()
            if current == start:
                circles.append(start)
                break
            if current not in seen:
                seen.add(current)
                todo += graph.get(current, ())
    assert not circles, circles


def test_the_layers_name_every_package():
    named = set().union(*LAYERS)
    assert {layer(m)[1] for m in modules()} <= named
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} <= named
