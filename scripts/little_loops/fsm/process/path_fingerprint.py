"""The (modification time, size) fingerprint of a few paths, for HEAD's
`circuit.repeated_failure.progress_paths` (spec/ll-head-dialect.md §7.7).

Each path (a file, a directory walked whole, or a glob; relative to the working
directory) contributes every file under it as (path, mtime, size); files matching an
`exclude_paths` entry (the same forms) are left out, and a missing path counts as missing.
The result is a short hash that changes when any of those files is written, created or
removed. Nothing here raises for the user's files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["paths_fingerprint"]

_GLOB_CHARS = frozenset("*?[")


def paths_fingerprint(
    paths: Iterable[str], exclude: Iterable[str] = (), cwd: Path | None = None
) -> str:
    """The fingerprint of `paths` minus `exclude`, relative to `cwd` (default: here)."""
    import hashlib  # here: only HEAD's circuit asks, a plain run never loads OpenSSL's hashes

    base = cwd if cwd is not None else Path.cwd()
    excluded = {file for pattern in exclude for file in _files(base, pattern)}
    digest = hashlib.sha256()
    for pattern in sorted(set(paths)):
        files = sorted(set(_files(base, pattern)) - excluded)
        digest.update(f"{pattern}\0{len(files)}\n".encode())
        for file in files:
            digest.update(f"{file}\0{_stat(base / file)}\n".encode())
    return digest.hexdigest()[:16]


def _files(base: Path, pattern: str) -> Iterator[str]:
    """The files `pattern` names, relative to `base` (as written: posix paths)."""
    if _GLOB_CHARS & set(pattern):
        matches: Iterable[Path] = base.glob(pattern)
    else:
        matches = [base / pattern]
    for match in matches:
        if match.is_dir():
            yield from _walk(base, match)
        elif match.exists():
            yield _relative(base, match)


def _walk(base: Path, folder: Path) -> Iterator[str]:
    for root, _dirs, names in os.walk(folder, onerror=lambda _exc: None):
        for name in names:
            yield _relative(base, Path(root) / name)


def _relative(base: Path, path: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()  # an absolute path outside the project


def _stat(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return "gone"
    return f"{info.st_mtime_ns}:{info.st_size}"
