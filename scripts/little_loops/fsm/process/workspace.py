"""A fingerprint of the project's files, so the stall guard can tell work from going round.

`WorkspaceWatcher.fingerprint()` returns a short hash that changes when the files a loop
works on change, or None when nothing is watched. What is watched:

- In a git work tree: HEAD, and every changed, staged, deleted or untracked file
  (`.gitignore` respected), identified by its path, its status and its content. Only the
  dirty paths are read, so a clean tree of any size costs one `git status`; the contents
  are hashed by `git hash-object --stdin-paths` (no `-w`: nothing is written into the
  repository), files over `CONTENT_HASH_LIMIT` by their size and modification time.
  The loop's runtime folders (`.loops/.running/`, `.loops/.history/`) are left out: they
  change at every state.
- `progress_paths` (files, directories or globs, relative to the working directory) are
  watched too, in a git work tree or not (ignored files included): each matching file by
  path, size, modification time and, up to `CONTENT_HASH_LIMIT`, content.
- Outside git with no `progress_paths`, nothing is watched: None.

Git is asked with a time limit and never prompts; a git that fails is treated as "not a
work tree" for the rest of the run. Nothing here raises for the user's files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from little_loops.fsm.process.checkpoint import RUNTIME_DIRS

__all__ = ["CONTENT_HASH_LIMIT", "GIT_TIMEOUT", "WorkspaceWatcher", "runtime_excludes"]

CONTENT_HASH_LIMIT = 1024 * 1024
GIT_TIMEOUT = 30.0
_GLOB_CHARS = frozenset("*?[")


class _GitUnavailable(Exception):
    """Git could not answer (no git, not a work tree, a failure or a timeout)."""


def runtime_excludes(top: Path, loops_dir: Path) -> list[str]:
    """Git pathspecs that leave out the loop's runtime folders under `loops_dir`."""
    excludes = []
    for name in RUNTIME_DIRS:
        runtime = (loops_dir / name).resolve()
        if runtime.is_relative_to(top):
            excludes.append(f":(top,exclude){runtime.relative_to(top).as_posix()}")
    return excludes


class WorkspaceWatcher:
    """Fingerprints the work tree of `workdir` (see the module doc)."""

    def __init__(
        self,
        workdir: Path | None = None,
        *,
        loops_dir: Path | None = None,
        progress_paths: list[str] | None = None,
        git: str = "git",
    ) -> None:
        self.workdir = workdir or Path.cwd()
        self.loops_dir = self.workdir / (loops_dir or Path(".loops"))
        self.progress_paths = list(progress_paths or [])
        self.git = git
        self._top: Path | None = None  # the work tree's top, once git said there is one
        self._probed = False

    def fingerprint(self) -> str | None:
        """A short hash of everything watched, or None when nothing is."""
        parts = self._git_tree_parts()
        if self.progress_paths:
            parts = (parts or []) + self._progress_path_parts()
        if parts is None:
            return None
        import hashlib  # here: asked only after a failing step, a healthy run never loads it

        return hashlib.sha256(b"\0\0".join(parts)).hexdigest()[:16]

    # --- git ------------------------------------------------------------------------

    def _git_tree_parts(self) -> list[bytes] | None:
        """HEAD, the status lines and the dirty contents; None outside a git work tree."""
        if not self._probed:
            self._probed = True
            self._top = self._work_tree_top()
        top = self._top
        if top is None:
            return None
        try:
            head = self._git(top, "rev-parse", "--verify", "-q", "HEAD", allow_failure=True)
            specs = [":(top)", *runtime_excludes(top, self.loops_dir)]
            status = self._git(
                top, "status", "--porcelain", "-z", "--untracked-files=all", "--", *specs
            )
            return [head, status, self._dirty_contents(top, _dirty_paths(status))]
        except _GitUnavailable:
            self._top = None  # git stopped answering: watch what is left
            return None

    def _work_tree_top(self) -> Path | None:
        try:
            top = self._git(self.workdir, "rev-parse", "--show-toplevel")
        except _GitUnavailable:
            return None
        return Path(os.fsdecode(top.strip())).resolve()

    def _dirty_contents(self, top: Path, paths: list[str]) -> bytes:
        """Object ids of the dirty files, sizes and times of the big ones."""
        small: list[str] = []
        stamps: list[bytes] = []
        for relative in paths:
            stat = _stat(top / relative)
            if stat is None or not os.path.isfile(top / relative):
                continue  # deleted (its status line says so), or a folder (a submodule)
            if stat.st_size > CONTENT_HASH_LIMIT:
                stamps.append(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
            else:
                small.append(relative)
        if small:
            names = "".join(f"{path}\n" for path in small).encode()
            stamps.append(self._git(top, "hash-object", "--stdin-paths", stdin=names))
        return b"\0".join(stamps)

    def _git(self, cwd: Path, *args: str, stdin: bytes = b"", allow_failure: bool = False) -> bytes:
        environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
        try:
            completed = subprocess.run(
                [self.git, *args],
                cwd=cwd,
                env=environment,
                input=stdin,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            raise _GitUnavailable from None
        if completed.returncode != 0 and not allow_failure:
            raise _GitUnavailable
        return completed.stdout

    # --- progress_paths -------------------------------------------------------------

    def _progress_path_parts(self) -> list[bytes]:
        parts: list[bytes] = []
        for pattern in self.progress_paths:
            parts.append(f"pattern\0{pattern}".encode())
            parts.extend(
                _file_stamp(self.workdir, path) for path in _matching_files(self.workdir, pattern)
            )
        return parts


def _dirty_paths(status: bytes) -> list[str]:
    """The paths of `git status --porcelain -z` entries (a rename's old path skipped)."""
    paths: list[str] = []
    entries = iter(status.split(b"\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if b"R" in code or b"C" in code:
            next(entries, None)  # the path it was renamed or copied from
        paths.append(os.fsdecode(path))
    return paths


def _matching_files(workdir: Path, pattern: str) -> list[Path]:
    """The files `pattern` names under `workdir`: a file, every file of a folder, a glob."""
    if _GLOB_CHARS.isdisjoint(pattern):
        candidates = [workdir / pattern]
    else:
        try:
            candidates = sorted(workdir.glob(pattern))
        except (ValueError, OSError):
            return []
    files: list[Path] = []
    for candidate in candidates:
        if candidate.is_dir():
            files.extend(sorted(item for item in candidate.rglob("*") if item.is_file()))
        elif candidate.is_file():
            files.append(candidate)
    return files


def _file_stamp(workdir: Path, path: Path) -> bytes:
    """A file's path and content hash (a big one's size and time: reading it costs)."""
    stat = _stat(path)
    name = os.fsencode(os.path.relpath(path, workdir))
    if stat is None:
        return name
    if stat.st_size > CONTENT_HASH_LIMIT:
        return name + f"\0{stat.st_size}\0{stat.st_mtime_ns}".encode()
    import hashlib  # see WorkspaceWatcher.fingerprint

    try:
        return name + b"\0" + hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return name


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
