"""`python -m little_loops.cli ...` runs `ll-loop` (used by `run --background`)."""

from __future__ import annotations

from little_loops.cli.app import main_loop

raise SystemExit(main_loop())
