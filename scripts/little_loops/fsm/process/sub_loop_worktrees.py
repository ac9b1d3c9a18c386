"""Git worktrees for sub-loops that run on another branch (`worktree:`, spec §4.6).

A fresh worktree of an existing branch is added for each entry of the `loop:` state
(`git worktree add <path> <branch>`), under `<loops dir>/.worktrees/`, and removed
afterwards (`git worktree remove --force`); the branch stays. Failures come back as one
line (`WorktreeError`), never as a traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["WorktreeError", "add_worktree", "new_branch_worktree", "remove_worktree"]

GIT_TIMEOUT = 60.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class WorktreeError(Exception):
    """A worktree that could not be added (the message says why, in one line)."""


def add_worktree(branch: str, loops_dir: Path, label: str, cwd: Path | None = None) -> Path:
    """A fresh worktree of `branch` (which must exist); its absolute path. `cwd`: the
    repository's directory (None: this process's), which a relative `loops_dir` is in."""
    import uuid  # here, not at the top: most runs add no worktree (uuid loads platform)

    base = loops_dir if cwd is None else cwd / loops_dir
    path = (base / ".worktrees" / f"{_UNSAFE.sub('_', label)}-{uuid.uuid4().hex[:8]}").resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    _git("worktree", "add", "--quiet", str(path), branch, cwd=cwd)
    return path


def new_branch_worktree(
    branch: str, loops_dir: Path, label: str, *, fresh: bool, cwd: Path | None = None
) -> Path:
    """A `parallel:` item's worktree (issue 25) on `branch`: made (or moved) to the
    project's HEAD when `fresh`, else the branch as a resumed item left it (made from
    HEAD if it is gone). Its absolute path."""
    import uuid  # (see add_worktree)

    base = loops_dir if cwd is None else cwd / loops_dir
    path = (base / ".worktrees" / f"{_UNSAFE.sub('_', label)}-{uuid.uuid4().hex[:8]}").resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if fresh or not _branch_exists(branch, cwd):
        _git("worktree", "add", "--quiet", "-B", branch, str(path), "HEAD", cwd=cwd)
    else:
        _git("worktree", "add", "--quiet", str(path), branch, cwd=cwd)
    return path


def _branch_exists(branch: str, cwd: Path | None) -> bool:
    try:
        _git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=cwd)
    except WorktreeError:
        return False
    return True


def remove_worktree(path: Path, cwd: Path | None = None) -> str | None:
    """Remove the worktree at `path` (its branch stays); None, or why it could not be."""
    try:
        _git("worktree", "remove", "--force", str(path), cwd=cwd)
    except WorktreeError as exc:
        return str(exc)
    return None


def _git(*args: str, cwd: Path | None = None) -> None:
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        completed = subprocess.run(
            ["git", *args],
            env=environment,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git {args[0]} {args[1]}: {exc}") from None
    if completed.returncode != 0:
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        said = lines[0].strip() if lines else f"exit code {completed.returncode}"
        raise WorktreeError(f"git {args[0]} {args[1]} failed: {said}")
