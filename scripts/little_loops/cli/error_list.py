"""The errors a run met (the state file's `errors`), as the summary and `status` print them.

```
Errors during the run (4):
  iteration 2, build: action failed: exit code 2
    | make: *** [all] Error 2
  iterations 3 to 5, check: error: Action timed out after 5s (3 times)
```

Each cause is printed once: the same error met again is counted, not repeated, and a
stderr that only repeats the message is not shown again.
"""

from __future__ import annotations

from typing import Any

from little_loops.cli.display import one_line

# What each `source` of `guards.ErrorLog` is called on screen.
_SOURCE_LABELS = {"verdict": "error", "fatal_error": "FATAL_ERROR", "action": "action failed"}
# What makes two entries the same error (the iteration does not).
_SAME_ERROR_KEYS = ("state", "source", "message", "stderr_tail")


def error_lines(
    errors: list[dict[str, Any]], loop_arg: str, *, last: int, stderr_lines: int
) -> list[str]:
    """The heading, then the `last` distinct errors, each with up to `stderr_lines` of its
    stderr. The same error seen again (a state retried) is listed once, with its count."""
    if not errors:
        return []
    lines = [f"Errors during the run ({len(errors)}):"]
    groups = _grouped(errors)
    shown = groups[-last:] if last > 0 else []
    earlier = len(errors) - sum(len(group) for group in shown)
    if earlier > 0:
        lines.append(f"  ({earlier} earlier: ll-loop status {loop_arg} --json)")
    for group in shown:
        lines.extend(_entry_lines(group, stderr_lines))
    return lines


def _grouped(errors: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Identical errors (state, source, message, stderr) together, ordered by last sighting."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for entry in errors:
        key = tuple(str(entry.get(name, "")) for name in _SAME_ERROR_KEYS)
        group = groups.pop(key, [])
        group.append(entry)
        groups[key] = group  # re-inserted: the order is that of the latest sighting
    return list(groups.values())


def _entry_lines(group: list[dict[str, Any]], stderr_lines: int) -> list[str]:
    entry = group[-1]
    source = str(entry.get("source", ""))
    label = _SOURCE_LABELS.get(source, source)
    message = one_line(entry.get("message", ""))
    lines = [f"  {_where(group)}: {label}: {message}{_times(group)}"]
    tail = entry.get("stderr_tail") or ""
    if one_line(tail) == message:
        return lines  # e.g. a timeout: its message is all the stderr there is
    shown = tail.splitlines()[-stderr_lines:] if stderr_lines > 0 else []
    lines.extend(f"    | {line}" for line in shown)
    return lines


def _where(group: list[dict[str, Any]]) -> str:
    first, latest = group[0], group[-1]
    state = latest.get("state", "?")
    if len(group) == 1:
        return f"iteration {latest.get('iteration', '?')}, {state}"
    return f"iterations {first.get('iteration', '?')} to {latest.get('iteration', '?')}, {state}"


def _times(group: list[dict[str, Any]]) -> str:
    return f" ({len(group)} times)" if len(group) > 1 else ""
