"""What a context handoff does: pause, terminate, or spawn a fresh Claude session.

The handler never saves state (persistence does that, before calling it for a spawn). A
spawned session starts detached: its own session, stdin from /dev/null, output to a log
file, never waited on. A spawn that cannot start is reported in the result, not raised.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO

from little_loops.fsm.runner import CLAUDE_BIN_ENV, CLAUDE_NOT_FOUND


class HandoffBehavior(Enum):
    """What to do when an action asks for a fresh context."""

    TERMINATE = "terminate"
    PAUSE = "pause"
    SPAWN = "spawn"


@dataclass
class HandoffResult:
    """Outcome of handling a handoff. `error` says why a spawn did not start."""

    behavior: HandoffBehavior
    continuation_prompt: str | None
    spawned_process: subprocess.Popen[str] | None = None
    error: str | None = None


def spawn_prompt(loop_name: str, continuation: str | None) -> str:
    """The prompt given to the spawned session."""
    prompt = f"Continue loop execution. Run: ll-loop resume {loop_name}"
    if continuation:
        prompt += "\n\n" + continuation
    return prompt


class HandoffHandler:
    """Carries out the configured `HandoffBehavior`."""

    def __init__(
        self,
        behavior: HandoffBehavior = HandoffBehavior.PAUSE,
        *,
        claude_bin: str | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self.behavior = behavior
        self.claude_bin = claude_bin
        self.log_dir = log_dir

    def handle(self, loop_name: str, continuation: str | None) -> HandoffResult:
        """Pause and terminate do nothing here; spawn starts the new session."""
        if self.behavior is HandoffBehavior.SPAWN:
            return self._spawn(loop_name, continuation)
        return HandoffResult(self.behavior, continuation)

    def log_path(self, loop_name: str) -> Path | None:
        """Where the spawned session's output goes (None: discarded)."""
        if self.log_dir is None:
            return None
        return self.log_dir / f"{loop_name}.handoff.log"

    def _spawn(self, loop_name: str, continuation: str | None) -> HandoffResult:
        claude = self.claude_bin or os.environ.get(CLAUDE_BIN_ENV) or "claude"
        argv = [
            claude,
            "--dangerously-skip-permissions",
            "-p",
            spawn_prompt(loop_name, continuation),
        ]
        try:
            with self._open_log(loop_name) as log:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    text=True,
                    start_new_session=True,
                )
        except OSError as exc:
            error = _spawn_failure_message(claude, exc)
            return HandoffResult(HandoffBehavior.SPAWN, continuation, error=error)
        return HandoffResult(HandoffBehavior.SPAWN, continuation, spawned_process=process)

    def _open_log(self, loop_name: str) -> IO[bytes]:
        path = self.log_path(loop_name)
        if path is None:
            return open(os.devnull, "wb")
        path.parent.mkdir(parents=True, exist_ok=True)
        # Append: several handoffs of one run share the log.
        return open(path, "ab")


def _spawn_failure_message(claude: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename == claude:
        return CLAUDE_NOT_FOUND
    return f"Cannot start claude for the handoff: {exc.filename or claude}: {exc.strerror or exc}"
