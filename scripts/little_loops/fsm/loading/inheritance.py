"""`from:`: a loop file built over a parent loop file (spec/ll-head-dialect.md §6).

The parent is found from the child file's directory (`loop_refs`), resolved first (its
own `from:`, relative to its own directory), then the child is deep-merged over it: maps
merge key by key at every depth, scalars and lists are replaced whole, and a child `null`
removes the key. `from` is dropped from the result. Every problem is a load error naming
the child file: a `from` that is not a string, a parent that cannot be found, a parent
that is not a mapping, a chain that comes back to a file already in it.

The file reader is passed in by the pipeline (`read_mapping`), so that a parent is read
exactly like any loop file (file checks, YAML, repeated keys).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.loading.loop_refs import resolve_loop_ref
from little_loops.fsm.loading.mapping_merge import deep_merge

ReadMapping = Callable[[Path], dict[str, Any]]


def resolve_inheritance(
    data: dict[str, Any], path: Path, read_mapping: ReadMapping
) -> dict[str, Any]:
    """The mapping of the file at `path` with its `from:` chain merged in (unchanged when
    it has no `from:`)."""
    return _resolved(data, path, read_mapping, [(path.resolve(), _display_name(path))])


def _resolved(
    data: dict[str, Any], path: Path, read_mapping: ReadMapping, chain: list[tuple[Path, str]]
) -> dict[str, Any]:
    if "from" not in data:
        return data
    name = data["from"]
    if not isinstance(name, str):
        raise LoopFileError(str(path), "`from:` must be a string")
    parent_path = resolve_loop_ref(name, path.parent)
    if parent_path is None:
        raise LoopFileError(str(path), f"Loop not found: {name}")
    resolved = parent_path.resolve()
    names = [shown for _, shown in chain]
    if any(seen == resolved for seen, _ in chain):
        cycle = " -> ".join([*names, name])
        raise LoopFileError(str(path), f"Circular `from:` chain: {cycle}")
    parent = _resolved(
        read_mapping(parent_path), parent_path, read_mapping, [*chain, (resolved, name)]
    )
    child = {key: value for key, value in data.items() if key != "from"}
    return deep_merge(parent, child)


def _display_name(path: Path) -> str:
    name = path.name
    for suffix in (".fsm.yaml", ".fsm.yml", ".yaml", ".yml"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name
