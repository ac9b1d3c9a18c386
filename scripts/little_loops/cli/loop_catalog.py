"""The loops `ll-loop list` shows (spec/ll-head-dialect.md §2.5, `ll-loop list` bullet).

`.loops/*.yaml` and `*.yml` at the top are listed as the reference lists them (every file,
by stem, whatever it holds), except a HEAD-dialect file that is not runnable once its
`from:` is resolved (a fragment library, an abstract template). Subdirectories (not hidden
ones, not `runs/`) add their runnable HEAD files, named by their path relative to `.loops/`
without the suffix (`gates/lint`, which `run` accepts). So a project of legacy loops lists
exactly as before.

A HEAD file also has a category, labels, a visibility and a description; a legacy one lists
as `public` with none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.dialect import loop_dialect
from little_loops.fsm.loading.inheritance import resolve_inheritance
from little_loops.fsm.loading.pipeline import load_loop_mapping
from little_loops.fsm.model.head_parts import DIALECT_HEAD, HEAD_VISIBILITIES

__all__ = ["LoopEntry", "catalog", "runnable"]

_SUFFIXES = (".yaml", ".yml")
# Directories under `.loops/` that hold runs, not loops (`.running`, `.history` are hidden).
_NOT_LOOP_DIRS = frozenset({"runs"})


@dataclass
class LoopEntry:
    """One listed loop. `head` False: a legacy (or unreadable) file, listed as today."""

    name: str
    path: Path
    head: bool = False
    category: str = ""
    labels: list[str] = field(default_factory=list)
    visibility: str = "public"
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        """`{"loop", "path"}` as today; a HEAD loop adds the keys §2.5 gives."""
        out: dict[str, Any] = {"loop": self.name, "path": str(self.path)}
        if self.head:
            out |= {
                "name": self.name,
                "category": self.category,
                "labels": self.labels,
                "visibility": self.visibility,
                "description": self.description,
            }
        return out


def catalog(loops_dir: Path) -> list[LoopEntry]:
    """Every listable loop under `loops_dir`, sorted by name."""
    entries: dict[str, LoopEntry] = {}
    for path in sorted(_top_files(loops_dir), key=lambda p: (p.stem, p.name)):
        entry = _entry(path, path.stem, top=True)
        if entry is not None:
            entries.setdefault(entry.name, entry)
    for path in sorted(_nested_files(loops_dir)):
        name = _relative_name(path, loops_dir)
        entry = _entry(path, name, top=False)
        if entry is not None:
            entries.setdefault(name, entry)
    return sorted(entries.values(), key=lambda entry: entry.name)


def _top_files(loops_dir: Path) -> Iterator[Path]:
    for path in loops_dir.iterdir():
        if path.suffix in _SUFFIXES and path.is_file():
            yield path


def _nested_files(loops_dir: Path) -> Iterator[Path]:
    for child in loops_dir.iterdir():
        if child.is_dir() and not child.name.startswith(".") and child.name not in _NOT_LOOP_DIRS:
            for path in child.rglob("*"):
                hidden = any(part.startswith(".") for part in path.relative_to(loops_dir).parts)
                if path.suffix in _SUFFIXES and path.is_file() and not hidden:
                    yield path


def _relative_name(path: Path, loops_dir: Path) -> str:
    relative = path.relative_to(loops_dir).as_posix()
    return relative[: -len(path.suffix)]


def _entry(path: Path, name: str, *, top: bool) -> LoopEntry | None:
    """The entry of `path`; None for what is not listed there."""
    try:
        data = load_loop_mapping(path)
    except LoopError:
        return LoopEntry(name, path) if top else None  # listed as today, run tells why
    if loop_dialect(data) != DIALECT_HEAD:
        return LoopEntry(name, path) if top else None
    try:
        data = resolve_inheritance(data, path, load_loop_mapping)
    except LoopError:
        return None  # a broken `from:` chain: `validate` says why
    if not runnable(data):
        return None
    return LoopEntry(
        name,
        path,
        head=True,
        category=_text(data.get("category")),
        labels=[str(label) for label in data.get("labels") or [] if label is not None],
        visibility=_visibility(data.get("visibility")),
        description=_one_line(_text(data.get("description"))),
    )


def runnable(data: dict[str, Any]) -> bool:
    """A loop `run` can start (after `from:` is resolved): `name`, `initial`, and `states`
    or `flow`. Fragment libraries and abstract templates are not."""
    has_states = data.get("states") is not None or data.get("flow") is not None
    return bool(data.get("name")) and bool(data.get("initial")) and has_states


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _one_line(text: str) -> str:
    """Description lines joined with single spaces."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _visibility(value: Any) -> str:
    """Another value than HEAD's three counts as `public` (the loader warns about it)."""
    return value if value in HEAD_VISIBILITIES else "public"
