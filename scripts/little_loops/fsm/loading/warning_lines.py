"""How a loader warning is printed.

A HEAD file's warnings name the file (`[WARNING] .loops/x.yaml: states.a.tamper_guard: ...`,
spec/ll-head-dialect.md §1.2), so a sub-loop's or a `from:` parent's warnings say whose they
are. A legacy file's warnings stay as the reference printed them (`[WARNING] states.a: ...`).
"""

from __future__ import annotations

from pathlib import Path

from little_loops.fsm.model.findings import ValidationError

__all__ = ["warning_line"]


def warning_line(warning: ValidationError, path: Path, *, head: bool) -> str:
    """The line printed for `warning` of the loop file at `path`."""
    if not head:
        return str(warning)
    where = f"{_shown(path)}: {warning.path}" if warning.path else _shown(path)
    return f"[{warning.severity.value.upper()}] {where}: {warning.message}"


def _shown(path: Path) -> str:
    """`path` relative to the current directory when it lies inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)
