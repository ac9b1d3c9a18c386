"""The layers of `little_loops.fsm` (docs/architecture.md, "Layers"), checked on the source.

    model < process < loading < judging < engine < store < temporal < faces < cli

Every import of every module is read with `ast` (top-level, `if TYPE_CHECKING:` and
function-level imports alike) and the test asserts: a module imports only from its own
layer or below; no internal module imports a face; the modules import each other without
a cycle. No module is skipped: the graph's modules are exactly the `.py` files on disk
(an alias module, whose body swaps itself for another in `sys.modules`, is checked like
any other). The run core (`engine/` but its drivers) does no I/O of its own, and imports
from `process/` only what the table below allows. Every checker also runs on a small
synthetic package with a planted violation of each rule, so it is known to catch them.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    """Module -> the package modules (and cli modules) it imports, for every module."""
    trees: dict[str, tuple[ast.Module, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        trees[module_name(path, root, package)] = (tree, path.name == "__init__.py")
    known = set(trees)
    top = package.rsplit(".", 1)[0]
    graph: dict[str, set[str]] = {}
    for name, (tree, is_package) in trees.items():
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


@pytest.mark.slow
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
            "persistence.py": "import importlib, sys\n"
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


# -- no module is skipped ----------------------------------------------------------------


def modules_on_disk(root: Path, package: str) -> set[str]:
    """The dotted names of the `.py` files under `root`, found by walking its folders
    (apart from `import_graph`'s own listing, which must cover every one of them)."""
    return {
        module_name(Path(folder) / file, root, package)
        for folder, _, files in os.walk(root)
        for file in files
        if file.endswith(".py")
    }


@pytest.mark.slow
def test_the_graph_holds_exactly_the_modules_on_disk() -> None:
    """Issue 22 item 5: no module skipped (`evaluators.py` was, as a supposed alias)."""
    graph = import_graph(FSM_DIR, "little_loops.fsm")
    assert set(graph) == modules_on_disk(FSM_DIR, "little_loops.fsm")
    assert "little_loops.fsm.judging.head_evaluate" in graph["little_loops.fsm.evaluators"]
    whole = FSM_DIR.parent
    assert set(import_graph(whole, "little_loops")) == modules_on_disk(whole, "little_loops")


def test_an_alias_module_is_checked_like_any_other(tmp_path: Path) -> None:
    """An old path that swaps itself for the new module still imports what it imports."""
    fsm = _package(
        tmp_path,
        {
            "engine/__init__.py": "",
            "engine/steps.py": "",
            "process/__init__.py": "",
            "process/old_steps.py": "import sys\nfrom little_loops.fsm.engine import steps\n"
            "sys.modules[__name__] = steps\n",
        },
    )
    assert set(import_graph(fsm, "little_loops.fsm")) == modules_on_disk(fsm, "little_loops.fsm")
    assert layer_violations(fsm, "little_loops.fsm") == [
        "little_loops.fsm.process.old_steps (process): imports little_loops.fsm.engine.steps"
        " (engine), a higher layer"
    ]


# -- the run core does no I/O ------------------------------------------------------------

# The drivers of the run core: they serve its requests (run an action, load a child's
# file, add a worktree), so they do I/O and may use any of process/.
ENGINE_DRIVERS = ("engine.run_loop", "engine.child_loader", "engine.child_worktree")

# Modules whose only use is I/O (`os` too: the core needs none of it, not even `os.path`,
# since its paths are `pathlib` values it hands to the driver). Any alias counts.
IO_MODULES = frozenset(
    {"os", "time", "subprocess", "io", "shutil", "socket", "tempfile", "importlib", "builtins"}
)
# Builtins that reach the host: `open`, and `__import__` (a way round the import check).
IO_BUILTINS = frozenset({"open", "__import__"})
# The clock reads of `datetime.datetime` and `datetime.date`.
CLOCK_READS = frozenset({"now", "utcnow", "today"})
# `pathlib.Path` methods that touch the file system (the core only joins and names paths).
PATH_IO = frozenset(
    {"open", "read_text", "read_bytes", "write_text", "write_bytes", "exists", "is_file",
     "is_dir", "mkdir", "unlink", "rmdir", "iterdir", "glob", "rglob", "stat", "touch"}
)  # fmt: skip


def core_io(source: str) -> list[str]:
    """Every I/O in `source` that the run core may not do, one `line N: what` each."""
    tree = ast.parse(source)
    datetime_names = _datetime_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        found.extend(_io_imports(node))
        found.extend(_io_uses(node, datetime_names))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def _io_imports(node: ast.AST) -> list[tuple[int, str]]:
    if isinstance(node, ast.Import):
        return [
            (node.lineno, f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else ""))
            for alias in node.names
            if _is_io_module(alias.name)
        ]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_io_module(node.module):
        names = ", ".join(alias.name for alias in node.names)
        return [(node.lineno, f"from {node.module} import {names}")]
    return []


def _is_io_module(name: str | None) -> bool:
    return name is not None and name.split(".")[0] in IO_MODULES


def _datetime_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names bound to the `datetime` module, and to its `datetime`/`date` classes."""
    modules: set[str] = set()
    classes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "datetime"}
        elif isinstance(node, ast.ImportFrom) and node.module == "datetime":
            classes |= {a.asname or a.name for a in node.names if a.name in ("datetime", "date")}
    return modules, classes


def _io_uses(node: ast.AST, datetime_names: tuple[set[str], set[str]]) -> list[tuple[int, str]]:
    if isinstance(node, ast.Name) and node.id in IO_BUILTINS:
        return [(node.lineno, f"builtin {node.id}")]
    if not isinstance(node, ast.Attribute):
        return []
    modules, classes = datetime_names
    value = node.value
    clock_class = (isinstance(value, ast.Name) and value.id in classes) or (
        isinstance(value, ast.Attribute)
        and value.attr in ("datetime", "date")
        and isinstance(value.value, ast.Name)
        and value.value.id in modules
    )
    if node.attr in CLOCK_READS and clock_class:
        return [(node.lineno, f"{ast.unparse(node)} (the clock)")]
    if node.attr in PATH_IO:
        return [(node.lineno, f".{node.attr} (the file system)")]
    return []


def core_io_by_module(root: Path, package: str) -> dict[str, list[str]]:
    """`core_io` of every engine module but the drivers (only those with findings)."""
    drivers = {f"{package}.{name}" for name in ENGINE_DRIVERS}
    found = {
        module_name(path, root, package): core_io(path.read_text(encoding="utf-8"))
        for path in sorted((root / "engine").rglob("*.py"))
    }
    return {name: io for name, io in found.items() if io and name not in drivers}


def test_the_run_core_does_no_io() -> None:
    """Issue 22 item 5; docs/architecture.md: the run core (engine/ but its drivers) asks
    its driver for every I/O through a request."""
    assert core_io_by_module(FSM_DIR, "little_loops.fsm") == {}


PLANTED_IO = {
    "clock under an alias": (
        "from datetime import datetime as dt, UTC\nimport datetime as d\n"
        "a = dt.now(UTC)\nb = d.datetime.utcnow()\nc = d.date.today()\n"
        "e = dt.fromtimestamp(0, UTC)\n",
        [
            "line 3: dt.now (the clock)",
            "line 4: d.datetime.utcnow (the clock)",
            "line 5: d.date.today (the clock)",
        ],
    ),
    "time under any alias": (
        "import time as t\nfrom time import monotonic\ndef f():\n    import time\n",
        ["line 1: import time as t", "line 2: from time import monotonic", "line 4: import time"],
    ),
    "subprocess": (
        "import subprocess\nfrom subprocess import run as go\n",
        ["line 1: import subprocess", "line 2: from subprocess import run"],
    ),
    "builtin open": (
        "def f(p):\n    with open(p) as f:\n        return f.read()\nreader = __import__\n",
        ["line 2: builtin open", "line 4: builtin __import__"],
    ),
    "os": (
        "import os.path\nfrom os import environ\nimport os as o\n",
        ["line 1: import os.path", "line 2: from os import environ", "line 3: import os as o"],
    ),
    "the file system through a path": (
        "from pathlib import Path\nname = Path('a') / 'b'\ntext = name.read_text()\n",
        ["line 3: .read_text (the file system)"],
    ),
}


@pytest.mark.parametrize("planted", sorted(PLANTED_IO))
def test_a_planted_io_in_the_core_is_caught(planted: str) -> None:
    source, expected = PLANTED_IO[planted]
    assert core_io(source) == expected


def test_the_drivers_may_do_io_and_the_core_may_not(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "engine/__init__.py": "",
            "engine/run_loop.py": "import subprocess\n",
            "engine/steps.py": "import json\nfrom time import sleep as nap\n",
        },
    )
    assert core_io_by_module(fsm, "little_loops.fsm") == {
        "little_loops.fsm.engine.steps": ["line 2: from time import sleep"]
    }


# -- the run core imports only records from process/ -------------------------------------

# What the run core (engine/ but its drivers) may import from process/, and why. The
# records it reads (`ActionResult`, `ClaudeRun`, `CheckpointResult`, `LimitHit`) and the
# pure names it uses (`is_slash_command`, log names) live in model/. Left: two pure
# readers of claude's words (no I/O), which belong to the host adapter: once it hands the
# core a classified ending on `ActionResult`, this table is empty.
CORE_PROCESS_IMPORTS = {
    "engine.limit_step": {"process.claude_limits"},  # classify_claude_result/shell_failure
    "engine.head_auth": {"process.claude_refusal"},  # is_auth_failure
}


def core_process_imports(root: Path, package: str) -> list[str]:
    """Every import of process/ by the run core that `CORE_PROCESS_IMPORTS` does not allow."""
    drivers = {f"{package}.{name}" for name in ENGINE_DRIVERS}
    process = f"{package}.process"
    problems: list[str] = []
    for name, targets in sorted(import_graph(root, package).items()):
        if not name.startswith(f"{package}.engine") or name in drivers:
            continue
        allowed = CORE_PROCESS_IMPORTS.get(name.removeprefix(f"{package}."), set())
        problems.extend(
            f"{name}: the run core imports {target} (only records, from model/)"
            for target in sorted(targets)
            if (target == process or target.startswith(process + "."))
            and target.removeprefix(f"{package}.") not in allowed
        )
    return problems


def test_the_run_core_imports_only_records_from_below_the_process_layer() -> None:
    """Issue 22 item 5: engine/ takes records from model/, not from process/."""
    assert core_process_imports(FSM_DIR, "little_loops.fsm") == []


def test_a_run_core_import_of_process_is_caught(tmp_path: Path) -> None:
    fsm = _package(
        tmp_path,
        {
            "engine/__init__.py": "",
            "engine/run_loop.py": "from little_loops.fsm.process.runner import Runner\n",
            "engine/steps.py": "from little_loops.fsm.process import runner\n"
            "from little_loops.fsm.model.action_result import ActionResult\n",
            "engine/limit_step.py": "from little_loops.fsm.process.claude_limits import f\n",
            "model/__init__.py": "",
            "model/action_result.py": "",
            "process/__init__.py": "",
            "process/runner.py": "",
            "process/claude_limits.py": "",
        },
    )
    assert core_process_imports(fsm, "little_loops.fsm") == [
        "little_loops.fsm.engine.steps: the run core imports little_loops.fsm.process.runner"
        " (only records, from model/)"
    ]
