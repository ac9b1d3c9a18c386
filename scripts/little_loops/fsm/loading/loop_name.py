"""A loop's `name:` must be a plain file name, because run files are named after it.

The state, events, lock and log files of a run are `.loops/.running/<name>.*` (and
`.loops/.history/<name>/`). A name with a `/` (`x/y`, `/abs/name`, `../escape`), `.` or
`..` would put them elsewhere, and an empty name or one with a NUL cannot name a file, so
such a name is an error before anything is written. The reference accepted any string
and wrote wherever it pointed.
"""

from __future__ import annotations

from little_loops.fsm.model.findings import ValidationError


def loop_name_problem(name: str) -> str | None:
    """Why `name` cannot name the run files, or None when it can."""
    if name not in ("", ".", "..") and "/" not in name and "\0" not in name:
        return None
    return (
        "must be a plain file name: not empty, '.' or '..', no '/' "
        f"or NUL (run files are .loops/.running/<name>.*), got {name!r}"
    )


def loop_name_errors(name: str) -> list[ValidationError]:
    problem = loop_name_problem(name)
    return [] if problem is None else [ValidationError(problem, "name")]
