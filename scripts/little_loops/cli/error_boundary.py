"""What an exception that reaches `ll-loop`'s entry becomes: a line and an exit code.

A user mistake (`LoopError`) is its one-line message and exit 1 (a loop that may not start
now, `LoopBusyError`: 6); anything else is a bug: one line on stderr and the traceback in a
file for the bug report. Imported only when an exception got that far.
"""

from __future__ import annotations

import os
from pathlib import Path

from little_loops.cli.exit_codes import BUSY, FAILED
from little_loops.cli.output import Logger, write_error_line

__all__ = ["exit_for_error", "report_internal_error"]


def exit_for_error(exc: Exception) -> int:
    """A user mistake (`LoopError`) is its one-line message and exit code; the rest is a bug."""
    from little_loops.fsm.errors import LoopError
    from little_loops.fsm.store.locking import LoopBusyError

    if isinstance(exc, LoopError):
        Logger().error_lines(exc.user_lines())
        return BUSY if isinstance(exc, LoopBusyError) else FAILED
    report_internal_error(exc)
    return FAILED


def report_internal_error(exc: BaseException) -> None:
    """One line for the user; the traceback goes to a file for the bug report."""
    import traceback
    from datetime import datetime

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = _traceback_dir() / f"ll-loop-crash-{stamp}-{os.getpid()}.txt"
    text = "".join(traceback.format_exception(exc))
    try:
        path.write_text(text, encoding="utf-8")
        where = f"traceback written to {path}"
    except OSError as write_error:
        where = f"traceback could not be written to {path}: {write_error.strerror}"
    write_error_line(f"ll-loop: internal error: {type(exc).__name__}: {exc} ({where})")


def _traceback_dir() -> Path:
    import tempfile

    from little_loops.cli.resolve import LOOPS_DIR
    from little_loops.fsm.store.state_files import RUNNING_DIR

    running_dir = LOOPS_DIR / RUNNING_DIR
    return running_dir if running_dir.is_dir() else Path(tempfile.gettempdir())
