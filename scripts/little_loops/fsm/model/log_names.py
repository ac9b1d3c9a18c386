"""The names of an action's log files, `<iteration>-<state>.log` and its retries (pure).

In the bottom layer so that the run core names the logs it asks for without importing
the process layer that writes them; `process.output_files` re-exports both names.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["action_log_name", "retry_log_path"]

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def action_log_name(iteration: int, state: str) -> str:
    """`<iteration>-<state>.log`, with characters unsafe in a file name replaced by `_`."""
    return f"{iteration}-{_UNSAFE_NAME_CHARS.sub('_', state)}.log"


def retry_log_path(log_path: Path, retry: int) -> Path:
    """`<iteration>-<state>.retry-<n>.log`: the log of the `retry`-th run of an action
    again after a limit, beside the first run's, which keeps claude's limit message."""
    return log_path.with_name(f"{log_path.name.removesuffix('.log')}.retry-{retry}.log")
