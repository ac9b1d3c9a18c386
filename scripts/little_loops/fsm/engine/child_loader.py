"""The driver's side of `LoadChild` (find a sub-loop's file and load it, spec §4.1) and
of `AttachWorktree`/`DetachWorktree` (a sub-loop's worktree, §4.6).

Loading is I/O, so the run core asks for it; a driver serves the request here. Every way
the child cannot be had (no file, bad YAML, a validation error) becomes one line in a
`ChildLoadFailed`, which the core treats as the state's load failure (§4.3).
"""

from __future__ import annotations

from pathlib import Path

from little_loops.fsm.engine.sub_loop_requests import ChildLoadFailed, LoadedChild, WorktreeAttached
from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.loop_refs import loop_ref_candidates, resolve_loop_ref
from little_loops.fsm.loading.pipeline import load_loop, load_loop_mapping
from little_loops.fsm.process.sub_loop_worktrees import (
    WorktreeError,
    add_worktree,
    new_branch_worktree,
    remove_worktree,
)

__all__ = ["add_branch_worktree", "attach_worktree", "detach_worktree", "load_child"]


def load_child(
    name: str,
    loops_dir: Path,
    *,
    context_keys: tuple[str, ...] = (),
    cwd: Path | None = None,
) -> LoadedChild | ChildLoadFailed:
    """The loop `name` names, loaded with the whole pipeline, or why it cannot be.
    `context_keys` are given by the parent: the child's checks see them as defined
    (their values come with the binding)."""
    here = cwd if cwd is not None else Path.cwd()
    path = resolve_loop_ref(name.strip(), here, loops_dir)
    if path is None:
        tried = ", ".join(str(place) for place in loop_ref_candidates(name, here, loops_dir))
        return ChildLoadFailed(f"sub-loop '{name}' not found (tried: {tried})")
    try:
        given = _keys_not_in_file(path, context_keys)
        loop = load_loop(path, context_overrides=dict.fromkeys(given, ""))
    except LoopError as exc:
        return ChildLoadFailed(f"sub-loop '{name}': {_one_line(exc)}")
    for key in given:  # placeholders for the checks only: the binding gives the values
        loop.context.pop(key, None)
    return LoadedChild(loop, str(path))


def _keys_not_in_file(path: Path, keys: tuple[str, ...]) -> list[str]:
    """The given keys the child's own `context:` lacks (its own values must stay)."""
    written = load_loop_mapping(path).get("context")
    own = written if isinstance(written, dict) else {}
    return [key for key in dict.fromkeys(keys) if key not in own]


def _one_line(exc: LoopError) -> str:
    return "; ".join(line.strip() for line in exc.user_lines() if line.strip())


def attach_worktree(
    branch: str, loops_dir: Path, label: str, cwd: Path | None = None
) -> WorktreeAttached | ChildLoadFailed:
    """A sub-loop's fresh worktree of `branch` (§4.6), or why there is none. `cwd`: the
    project's directory (None: this process's)."""
    try:
        path = add_worktree(branch, loops_dir, label, cwd)
    except WorktreeError as exc:
        return ChildLoadFailed(f"worktree of branch '{branch}': {exc}")
    return WorktreeAttached(path, cwd if cwd is not None else Path.cwd())


def add_branch_worktree(
    branch: str, loops_dir: Path, label: str, fresh: bool, cwd: Path | None = None
) -> WorktreeAttached | ChildLoadFailed:
    """A `parallel:` item's worktree on `branch` (made from HEAD when `fresh`), or why
    there is none (issue 25)."""
    try:
        path = new_branch_worktree(branch, loops_dir, label, fresh=fresh, cwd=cwd)
    except WorktreeError as exc:
        return ChildLoadFailed(str(exc))
    return WorktreeAttached(path, cwd if cwd is not None else Path.cwd())


def detach_worktree(path: Path, cwd: Path | None = None) -> str | None:
    """Remove a sub-loop's worktree; None, or why it could not be removed."""
    return remove_worktree(path, cwd)
