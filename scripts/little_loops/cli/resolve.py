"""Turning what the user typed into a loop file, a loaded loop, or a loop name.

`run`, `validate` and `resume` need a file (§2 of the CLI contract plus our additions:
`.fsm.yaml` preferred, `.yml` tried, a name with its suffix accepted, a directory
refused). `status`, `stop` and `history` need the loop's `name:` (state files are keyed by
it), and accept a name, a file stem or a path.

When the file found is a compiled `x.fsm.yaml` whose source `x.yaml` was changed after it,
the compiled file still runs (the reference's order), and a note on stderr says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from little_loops.cli.output import write_error_line
from little_loops.fsm.errors import LoopError, LoopFileError, LoopNotFoundError
from little_loops.fsm.loading.paradigms import compile_paradigm
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.loading.yaml_text import parse_yaml
from little_loops.fsm.schema import FSMLoop

LOOPS_DIR = Path(".loops")
LOOP_SUFFIXES = (".yaml", ".yml")


def candidate_paths(arg: str) -> list[Path]:
    """Where `arg` may live, in the order they are tried."""
    candidates = [Path(arg)]
    candidates += [LOOPS_DIR / f"{arg}{suffix}" for suffix in (".fsm.yaml", ".yaml", ".yml")]
    if arg.endswith(LOOP_SUFFIXES):
        candidates.append(LOOPS_DIR / arg)
    return candidates


def resolve_loop_path(arg: str) -> Path:
    """The loop file `arg` names; a directory only counts if nothing else matches."""
    candidates = candidate_paths(arg)
    for path in candidates:
        if path.is_file():
            return path
    if Path(arg).is_dir():
        raise LoopFileError(arg, "is a directory, not a loop file (give a .yaml file or a name)")
    raise LoopNotFoundError(
        f"Loop not found: {arg}",
        searched=[str(path) for path in candidates],
        hint=_found_above(arg),
    )


def _found_above(arg: str) -> str | None:
    """Where `arg` is when ll-loop runs in a subfolder of a project: loops are looked up in
    `./.loops/` only (as the reference did; paths in a loop are relative to where it
    runs), so the loop is pointed at, not run from there."""
    if LOOPS_DIR.is_dir() or Path(arg).is_absolute():
        return None
    here = Path.cwd()
    for folder in here.parents:
        for path in candidate_paths(arg)[1:]:
            if (folder / path).is_file():
                shown = os.path.relpath(folder / path, here)
                return f"found {shown}: run ll-loop from {folder} (it looks in ./.loops/ only)"
    return None


def load_resolved(
    arg: str, *, context_overrides: Mapping[str, str] | None = None
) -> tuple[Path, FSMLoop]:
    """Resolve `arg` and load the loop (paradigm files are compiled on the fly), with the
    `run --context` values set in its `context`."""
    path = resolve_loop_path(arg)
    note = stale_compiled_note(path)
    if note is not None:
        write_error_line(note)
    return path, load_loop(path, context_overrides=context_overrides)


def stale_compiled_note(path: Path) -> str | None:
    """For `x.fsm.yaml` older than its source `x.yaml`: which one is used, and the fix."""
    name = path.name
    for suffix in (".yaml", ".yml"):
        compiled_suffix = ".fsm" + suffix
        if name.endswith(compiled_suffix) and len(name) > len(compiled_suffix):
            source = path.with_name(name[: -len(compiled_suffix)] + suffix)
            if _is_newer(source, path):
                return (
                    f"note: using {path}; {source} is newer "
                    f"(recompile with: ll-loop compile {source})"
                )
    return None


def _is_newer(source: Path, compiled: Path) -> bool:
    try:
        return source.is_file() and source.stat().st_mtime_ns > compiled.stat().st_mtime_ns
    except OSError:
        return False


def shadowing_loop_file(word: str) -> Path | None:
    """A loop file in `.loops/` named like `word` (used to hint `ll-loop run <word>`)."""
    for path in candidate_paths(word)[1:]:
        if path.is_file():
            return path
    return None


def loop_name_for(arg: str) -> str:
    """The `name:` under which the state of `arg` is kept.

    A loop file (by path or by stem) gives its `name:`; anything that is not a file is
    taken as the name itself. A file that cannot be read still yields its stem, so a
    broken loop file never hides the state of the run that used it.
    """
    try:
        path = resolve_loop_path(arg)
    except LoopError:
        return arg
    return _declared_name(path) or loop_file_stem(path)


def loop_file_stem(path: Path) -> str:
    """`x` for `x.yaml`, `x.yml`, `x.fsm.yaml`; the whole name for other files."""
    name = path.name
    for suffix in (".fsm.yaml", ".fsm.yml", *LOOP_SUFFIXES):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _declared_name(path: Path) -> str | None:
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"), path)
    except (OSError, UnicodeDecodeError, LoopError):
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("name")
    if isinstance(name, str) and name:
        return name
    return _compiled_name(data) if "paradigm" in data else None


def _compiled_name(data: dict[str, Any]) -> str | None:
    """Paradigms like `goal` derive the name from other fields."""
    try:
        return compile_paradigm(data).name
    except (LoopError, ValueError, KeyError, TypeError):
        return None
