"""The reference's test seams: functions that code written for it replaces, still honoured.

Tests written for little-loops at aada157e1 replace `subprocess.run` (through
`little_loops.fsm.executor.subprocess`) to fake shell actions, `time.time` (through
`little_loops.fsm.executor.time`) to fake the loop clock, and `subprocess.Popen` to see a
`spawn` handoff start a session. Our runner streams with `Popen`, the loop clock is
monotonic and the spawned session starts held, so none of those replacements would be
reached. Each `*_replaced()` says whether the name no longer holds the function it held
when this module was imported; the callers then call the replacement the way the reference
did. The check is one identity comparison at call time, so the ordinary path costs nothing
measurable.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

from little_loops.fsm.process.output_streams import LineCallback, OutputReaders, TextCallback

__all__ = [
    "REFERENCE_TIMEOUT_MESSAGE",
    "TIMEOUT_EXIT_CODE",
    "ReferenceRun",
    "popen_replaced",
    "run_as_reference",
    "subprocess_run_replaced",
    "time_replaced",
]

# What the names held before anyone could replace them (this module loads with the package).
_ORIGINAL_RUN = subprocess.run
_ORIGINAL_TIME = time.time
_ORIGINAL_POPEN = subprocess.Popen

TIMEOUT_EXIT_CODE = 124
REFERENCE_TIMEOUT_MESSAGE = "Action timed out"


def subprocess_run_replaced() -> bool:
    """Whether `subprocess.run` has been replaced (e.g. `mock.patch` of the executor's)."""
    return subprocess.run is not _ORIGINAL_RUN


def time_replaced() -> bool:
    """Whether `time.time` has been replaced (e.g. `mock.patch` of the executor's)."""
    return time.time is not _ORIGINAL_TIME


def popen_replaced() -> bool:
    """Whether `subprocess.Popen` has been replaced (e.g. `mock.patch("subprocess.Popen")`)."""
    return subprocess.Popen is not _ORIGINAL_POPEN


class ReferenceRun(NamedTuple):
    """An action run through a replaced `subprocess.run`: the first fields of `ActionResult`."""

    output: str
    stderr: str
    exit_code: int
    duration_ms: int
    timed_out: bool = False


def run_as_reference(
    action: str,
    timeout: float,
    is_slash_command: bool,
    claude: str,
    cwd: Path | str | None,
    on_line: LineCallback | None = None,
    on_text: TextCallback | None = None,
) -> ReferenceRun:
    """Run `action` with `subprocess.run` as the reference's `DefaultActionRunner` did.

    The argv is `[claude, "--dangerously-skip-permissions", "-p", action]` for a slash
    command and `["bash", "-c", action]` otherwise; text output captured whole, the
    timeout passed on, the duration from `time.time()`; a timeout gives exit code 124,
    "Action timed out" and the timeout as the duration. Any other exception propagates,
    as it did there. `on_line`/`on_text` get stdout afterwards, so the progress still shows it.
    """
    if is_slash_command:
        argv = [claude, "--dangerously-skip-permissions", "-p", action]
    else:
        argv = ["bash", "-c", action]
    started_ms = int(time.time() * 1000)
    options: dict[str, Any] = {"capture_output": True, "text": True, "timeout": timeout}
    if cwd is not None:  # only when set, so a test's `assert_called_once_with` still holds
        options["cwd"] = cwd
    try:
        completed = subprocess.run(argv, **options)
    except subprocess.TimeoutExpired:
        timed_out_ms = int(timeout * 1000)
        return ReferenceRun("", REFERENCE_TIMEOUT_MESSAGE, TIMEOUT_EXIT_CODE, timed_out_ms, True)
    _hand_on(completed.stdout, OutputReaders(on_line, on_text))
    duration_ms = int(time.time() * 1000) - started_ms
    return ReferenceRun(completed.stdout, completed.stderr, completed.returncode, duration_ms)


def _hand_on(output: Any, readers: OutputReaders) -> None:
    """Give the readers the captured stdout: whole lines, then a last piece without a break."""
    if not readers.present or not isinstance(output, str) or not output:
        return
    whole, newline, rest = output.rpartition("\n")
    if newline:
        readers.lines(whole + newline)
    if rest:
        readers.piece(rest)
