"""docs/architecture.md's package map lists every module of `scripts/little_loops/`.

The map (the table under "## Package map") names modules by their path under
`scripts/little_loops/`; a bare name (`head_caps.py`) after a path in the same cell is a
module of that path's folder. Every module on disk (package `__init__.py` files aside) must
be named, and every name must be a module on disk, so the map cannot drift again.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "little_loops"
ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
_NAME = re.compile(r"`([A-Za-z0-9_./]+\.py)`")


def map_rows(text: str) -> list[str]:
    """The first cell of each row of the package map's table."""
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [row.split(" | ", 1)[0] for row in rows]


def named_modules(cell: str) -> set[str]:
    """The module paths (relative to the package) one cell names."""
    names: set[str] = set()
    folder = ""
    for name in _NAME.findall(cell):
        if "/" in name:
            folder = name.rsplit("/", 1)[0] + "/"
            names.add(name)
        else:
            names.add(folder + name)
    return names


def modules_on_disk() -> set[str]:
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }


def test_named_modules_reads_bare_names_in_the_folder_before_them() -> None:
    cell = "| `fsm/engine/a.py`, `b.py`, `cli/c.py`, `d.py`"
    assert named_modules(cell) == {"fsm/engine/a.py", "fsm/engine/b.py", "cli/c.py", "cli/d.py"}


def test_the_package_map_names_every_module() -> None:
    """Issue 22 item 8: every module of `scripts/little_loops/` has a row in the map."""
    named = set().union(*(named_modules(cell) for cell in map_rows(ARCHITECTURE.read_text())))
    assert sorted(modules_on_disk() - named) == []


def test_every_module_the_package_map_names_exists() -> None:
    """A renamed or removed module leaves no stale name in the map."""
    named = set().union(*(named_modules(cell) for cell in map_rows(ARCHITECTURE.read_text())))
    assert sorted(named - modules_on_disk()) == []
