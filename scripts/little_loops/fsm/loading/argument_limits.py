"""Actions too long for the operating system to pass to the program that runs them.

A shell action runs as `bash -c <action>` and a slash command as `claude ... -p <action>`:
either way the whole action is ONE argument of `execve`. Linux refuses any single
argument longer than MAX_ARG_STRLEN (32 pages = 131072 bytes, its terminating NUL
included) with E2BIG, however large the total limit `SC_ARG_MAX` is; other systems only
have the total limit. Such an action cannot start, so it is reported before the run.

The action is checked as written: interpolation may still make it longer at run time.
"""

from __future__ import annotations

import os
import sys

from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.schema import FSMLoop

LINUX_MAX_ARG_STRLEN = 131072
_FALLBACK_ARG_MAX = 262144  # POSIX lets sysconf say "unknown"; this is a common minimum


def max_argument_bytes() -> int:
    """The longest single argument (in bytes, without its NUL) this system passes on."""
    try:
        total = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        total = -1
    if total <= 0:
        total = _FALLBACK_ARG_MAX
    if sys.platform.startswith("linux"):
        total = min(total, LINUX_MAX_ARG_STRLEN)
    return total - 1  # the terminating NUL counts


def action_length_errors(fsm: FSMLoop) -> list[ValidationError]:
    """An error for each action longer than one command argument may be."""
    limit = max_argument_bytes()
    errors: list[ValidationError] = []
    for name, state in fsm.states.items():
        size = len(state.action.encode("utf-8", "surrogatepass")) if state.action else 0
        if size > limit:
            message = (
                f"action is {size:,} bytes, longer than one command argument may be "
                f"on this system ({limit:,} bytes); put the commands in a script file "
                "and run that"
            )
            errors.append(ValidationError(message, f"states.{name}.action"))
    return errors
