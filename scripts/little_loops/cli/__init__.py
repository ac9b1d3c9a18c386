"""ll-loop command line: `main_loop(argv) -> int` (the `ll-loop` console script)."""

from __future__ import annotations

from little_loops.cli.app import main_loop

__all__ = ["main_loop"]
