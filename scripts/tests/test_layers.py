"""The layers of `little_loops.fsm` (docs/architecture.md, "Layers"), checked on the source.

    model < process < loading < judging < engine < store < temporal < faces < cli

Every import of every module is read with `ast` (top-level, `if TYPE_CHECKING:` and
function-level imports alike) and the test asserts: a module imports only from its own
layer or below; no internal module imports a face; the modules import each other without
a cycle. Alias modules (old paths whose body swaps itself for the new module in
`sys.modules`) are not modules of their own and are skipped. The checker also runs on a
small synthetic package with planted violations, so it is known to catch them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import little_loops.fsm

# `temporal` (loops as Temporal workflows) drives the engine's run core and keeps its
# status in the store's state-file format, so it sits above both; the faces and the CLI
# start its workers and clients, so it sits below them.
LAYERS = (
    "model",
    "process",
    "loading",
    "judging",
    "engine",
    "store",
    "temporal",
    "faces",
    "cli",
)
RANK = {name: rank for rank, name in enumerate(LAYERS)}

# A subpackage is a layer of its own name.
SUBPACKAGES = ("model", "process", "loading", "judging", "engine", "store", "temporal")
# Top-level modules: the leaves of each layer, and the faces.
TOP_LEVEL = {
    "schema": "model",
    "interpolation": "model",
    "signal_detector": "model",
    "errors": "model",
    "handoff_handler": "process",
    "evaluators": "judging",
    "validation": "faces",
    "compilers": "faces",
    "executor": "faces",
    "persistence": "faces",
    "__init__": "faces",
}

FSM_DIR = Path(little_loops.fsm.__file__).parent


def module_name(path: Path, root: Path, package: str) -> str:
    """The dotted name of the module at `path` in the package whose folder is `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def layer_of(name: str, package: str) -> str | None:
    """The layer of module `name` (None: not mapped); anything in little_loops.cli is cli."""
    top = package.rsplit(".", 1)[0]
    if name == f"{top}.cli" or name.startswith(f"{top}.cli."):
        return "cli"
    if name == package:
        return "faces"
    if not name.startswith(package + "."):
        return None
    parts = name[len(package) + 1 :].split(".")
    if parts[0] in SUBPACKAGES:
        return parts[0]
    return TOP_LEVEL.get(parts[0]) if len(parts) == 1 else None


def is_alias(tree: ast.Module) -> bool:
    """An alias module: its body replaces itself in `sys.modules` with the new module."""
    return "sys.modules[__name__]" in ast.unparse(tree)


def imported_modules(
    tree: ast.Module, name: str, is_package: bool, known: set[str]
) -> Iterator[str]:
    """Every module `tree` imports, anywhere in it (`known`: the package's modules, so that
    `from pkg import x` counts as importing `pkg.x` when `x` is a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, name, is_package)
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = name.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package modules (and cli modules) it imports; aliases skipped."""
    trees: dict[str, tuple[ast.Module, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        trees[module_name(path, root, package)] = (tree, path.name == "__init__.py")
    known = set(trees)
    top = package.rsplit(".", 1)[0]
    graph: dict[str, set[str]] = {}
    for name, (tree, is_package) in trees.items():
        if is_alias(tree):
            continue
        graph[name] = {
            target
            for target in imported_modules(tree, name, is_package, known)
            if target != name
            and (target.startswith(package + ".") or target.startswith(f"{top}.cli"))
        }
    return graph


def layer_violations(root: Path, package: str) -> list[str]:
    """Every broken rule of the layers in the package at `root`, one line each."""
    graph = import_graph(root, package)
    problems: list[str] = []
    for name, targets in sorted(graph.items()):
        layer = layer_of(name, package)
        if layer is None:
            problems.append(f"{name}: not in any layer (add it to the layer table)")
            continue
        for target in sorted(targets):
            problems.extend(_import_problems(name, layer, target, package))
    problems.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in import_cycles(graph))
    return problems


def _import_problems(name: str, layer: str, target: str, package: str) -> list[str]:
    target_layer = layer_of(target, package)
    if target_layer is None:
        return [f"{name}: imports {target}, which is not in any layer"]
    if target_layer == "faces" and layer != "faces" and layer != "cli":
        return [f"{name} ({layer}): imports the face {target}"]
    if RANK[target_layer] > RANK[layer]:
        return [f"{name} ({layer}): imports {target} ({target_layer}), a higher layer"]
    return []


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that comes back to its start) per strongly connected group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(_cycle_through(sorted(group), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def _cycle_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A path from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node] & members):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return group  # unreachable for a strongly connected group


# -- the package ------------------------------------------------------------------------


def test_the_fsm_package_keeps_its_layers() -> None:
    violations = layer_violations(FSM_DIR, "little_loops.fsm")
    assert violations == []


def test_the_whole_package_has_no_import_cycles() -> None:
    """The CLI sits above every fsm layer; no cycle among its modules either."""
    root = FSM_DIR.parent
    graph = import_graph(root, "little_loops")
    assert "little_loops.cli.app" in graph
    assert import_cycles(graph) == []


def test_every_module_of_the_package_is_checked() -> None:
    graph = import_graph(FSM_DIR, "little_loops.fsm")
    assert "little_loops.fsm.engine.run_loop" in graph
    assert "little_loops.fsm.engine.context" in graph["little_loops.fsm.engine.run_loop"]
    assert "little_loops.fsm.store.persistent_executor" in graph


# -- the checker, on planted violations ---------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    fsm = root / "little_loops" / "fsm"
    for relative, body in {"__init__.py": "", **files}.items():
        path = fsm / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return fsm


def test_a_clean_synthetic_package_passes(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "schema.py": "",
            "engine/__init__.py": "",
            "engine/steps.py": "from little_loops.fsm.schema import X\n",
            "executor.py": "from little_loops.fsm.engine import steps\n",
            "runner.py": "import importlib, sys\n"
            "sys.modules[__name__] = importlib.import_module('little_loops.fsm.store.x')\n",
        },
    )
    assert layer_violations(fsm, "little_loops.fsm") == []


def test_an_import_of_a_higher_layer_is_caught(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "engine/__init__.py": "",
            "engine/steps.py": "",
            "process/__init__.py": "",
            "process/runner.py": "def f():\n    from little_loops.fsm.engine import steps\n",
        },
    )
    assert layer_violations(fsm, "little_loops.fsm") == [
        "little_loops.fsm.process.runner (process): imports little_loops.fsm.engine.steps"
        " (engine), a higher layer"
    ]


def test_an_internal_module_importing_a_face_is_caught(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "executor.py": "",
            "store/__init__.py": "",
            "store/files.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from little_loops.fsm.executor import FSMExecutor\n",
        },
    )
    assert layer_violations(fsm, "little_loops.fsm") == [
        "little_loops.fsm.store.files (store): imports the face little_loops.fsm.executor"
    ]


def test_an_import_cycle_inside_a_layer_is_caught(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "engine/__init__.py": "",
            "engine/a.py": "from . import b\n",
            "engine/b.py": "from little_loops.fsm.engine.a import thing\n",
        },
    )
    assert layer_violations(fsm, "little_loops.fsm") == [
        "import cycle: little_loops.fsm.engine.a -> little_loops.fsm.engine.b"
        " -> little_loops.fsm.engine.a"
    ]


def test_a_module_outside_the_layer_table_is_caught(tmp_path: Path) -> None:
    fsm = _package(tmp_path, {"stray.py": ""})
    assert layer_violations(fsm, "little_loops.fsm") == [
        "little_loops.fsm.stray: not in any layer (add it to the layer table)"
    ]


# -- the engine reads no clock and no environment of its own ------------------------------

HOST_READS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("os", "environ"),
    ("os", "getenv"),
}


def host_reads(source: str) -> list[str]:
    """`module.name` reads of the host's clocks or environment in `source` (also through
    `from time import monotonic`)."""
    tree = ast.parse(source)
    found = [
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and (node.value.id, node.attr) in HOST_READS
    ]
    found += [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (node.module, alias.name) in HOST_READS
    ]
    return found


def test_the_engine_gets_its_clock_and_environment_injected() -> None:
    reads = {
        path.name: host_reads(path.read_text(encoding="utf-8"))
        for path in sorted((FSM_DIR / "engine").glob("*.py"))
    }
    assert {name: found for name, found in reads.items() if found} == {}


def test_a_host_clock_read_is_caught() -> None:
    source = "import time\nfrom os import environ\ndef f():\n    return time.monotonic()\n"
    assert host_reads(source) == ["time.monotonic", "os.environ"]
