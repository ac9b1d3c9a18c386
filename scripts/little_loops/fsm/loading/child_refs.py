"""Finding the file of a sub-loop from the name a `loop:` state gives (spec §4.1).

Stand-in until the loader's own resolver (`loop_refs.resolve_loop_ref`) lands: same
order. The name (already interpolated) is tried as a path relative to the working
directory when it names a file, then as `<loops dir>/<name>.fsm.yaml`, then as
`<loops dir>/<name>.yaml` (the name may contain `/`). This package ships no loops, so
the fourth place of the spec has nothing to offer.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["child_candidates", "resolve_child_loop"]


def child_candidates(name: str, loops_dir: Path, cwd: Path) -> list[Path]:
    """The places tried for `name`, in order."""
    return [cwd / name, loops_dir / f"{name}.fsm.yaml", loops_dir / f"{name}.yaml"]


def resolve_child_loop(name: str, loops_dir: Path, cwd: Path) -> Path | None:
    """The first candidate that is a file, or None when none is."""
    if not name.strip():
        return None
    for candidate in child_candidates(name, loops_dir, cwd):
        if candidate.is_file():
            return candidate
    return None
