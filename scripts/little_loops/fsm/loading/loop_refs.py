"""Where a loop named by another loop lives (spec/ll-head-dialect.md §4.1, §6).

A `loop:` name (sub-loop) or a `from:` name (parent) is tried, in order, as a path
relative to a base directory (the parent file's directory when validating or inheriting;
the working directory at run time), as `<name>.fsm.yaml` and `<name>.yaml` there, then as
`<loops dir>/<name>.fsm.yaml` and `<loops dir>/<name>.yaml`. The name may contain `/`
(`lib/review-template`). No loops are shipped with this package yet, so the lookup ends
there.
"""

from __future__ import annotations

from pathlib import Path

LOOPS_DIR = Path(".loops")
LOOP_REF_SUFFIXES = ("", ".fsm.yaml", ".yaml")


def loop_ref_candidates(
    name: str, base_dir: Path, loops_dir: Path | None = LOOPS_DIR
) -> list[Path]:
    """The paths `name` may stand for, in the order they are tried."""
    candidates = [base_dir / f"{name}{suffix}" for suffix in LOOP_REF_SUFFIXES]
    if loops_dir is not None:
        candidates += [loops_dir / f"{name}{suffix}" for suffix in LOOP_REF_SUFFIXES[1:]]
    unique: list[Path] = []
    for path in candidates:
        if path not in unique:
            unique.append(path)
    return unique


def resolve_loop_ref(name: str, base_dir: Path, loops_dir: Path | None = LOOPS_DIR) -> Path | None:
    """The loop file `name` names, looked up from `base_dir` then `loops_dir`; None when
    there is none (or `name` is empty)."""
    if not name:
        return None
    for path in loop_ref_candidates(name, base_dir, loops_dir):
        if path.is_file():
            return path
    return None
