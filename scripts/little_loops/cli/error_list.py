"""The errors a run met (the state file's `errors`), as the summary and `status` print them.

```
Errors during the run (2):
  iteration 2, build: action failed: exit code 2
    | make: *** [all] Error 2
  iteration 4, check: error: Action timed out after 5s
```
"""

from __future__ import annotations

from typing import Any

from little_loops.cli.display import one_line

# What each `source` of `guards.ErrorLog` is called on screen.
_SOURCE_LABELS = {"verdict": "error", "fatal_error": "FATAL_ERROR", "action": "action failed"}


def error_lines(
    errors: list[dict[str, Any]], loop_arg: str, *, last: int, stderr_lines: int
) -> list[str]:
    """The heading, then the `last` errors, each with up to `stderr_lines` of its stderr."""
    if not errors:
        return []
    lines = [f"Errors during the run ({len(errors)}):"]
    earlier = len(errors) - last
    if earlier > 0:
        lines.append(f"  ({earlier} earlier: ll-loop status {loop_arg} --json)")
    for entry in errors[-last:]:
        lines.extend(_entry_lines(entry, stderr_lines))
    return lines


def _entry_lines(entry: dict[str, Any], stderr_lines: int) -> list[str]:
    source = str(entry.get("source", ""))
    label = _SOURCE_LABELS.get(source, source)
    where = f"iteration {entry.get('iteration', '?')}, {entry.get('state', '?')}"
    lines = [f"  {where}: {label}: {one_line(entry.get('message', ''))}"]
    tail = entry.get("stderr_tail") or ""
    shown = tail.splitlines()[-stderr_lines:] if stderr_lines > 0 else []
    lines.extend(f"    | {line}" for line in shown)
    return lines
