"""The fixed choices of some `ll-loop` options, in one light module.

`app.py` (argument parsing, which must import little at start-up) and the modules that
act on the choices (`diagram.py`, `cmd_history.py`) both read them from here, so the list
is written once.
"""

from __future__ import annotations

DIAGRAM_FORMATS = ("mermaid", "dot")
"""`ll-loop show --diagram FORMAT`; the first is the default."""

HISTORY_OUTPUTS = ("lines", "json", "jsonl", "raw")
"""How `ll-loop history` prints: readable lines (the default), `--json`, `--jsonl`, `--raw`."""
