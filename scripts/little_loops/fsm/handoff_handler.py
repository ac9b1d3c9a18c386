"""What a context handoff does: pause, terminate, spawn a fresh Claude session, or continue.

The handler never saves state (persistence does that). A spawned session starts detached:
its own session, stdin from /dev/null, output appended to a log file, never waited on. A
spawn that cannot start (claude missing, log file unusable) is reported in the result,
not raised.

A spawn can be *held* (`hold_spawn=True`): the process is created at once, so its pid is
known, but claude itself only starts when `release_spawned()` is called (or when this
process exits). Persistence uses this to record the pid and every event of the ending
run before the new session can run `ll-loop resume` and write the same files.

When `subprocess.Popen` has been replaced (a test written for the reference), spawn calls
the replacement as the reference did instead (see `reference_seams`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO

from little_loops.fsm.process import reference_seams
from little_loops.fsm.process.runner import CLAUDE_BIN_ENV, CLAUDE_NOT_FOUND

# The held session: a shell that waits for its stdin to close, then becomes claude (same
# pid) with stdin from /dev/null. The loop name is $0, so `ps` shows what it is for.
_HELD_START = 'read -r _ || :; exec "$@" </dev/null'


class HandoffBehavior(Enum):
    """What to do when an action asks for a fresh context."""

    TERMINATE = "terminate"
    PAUSE = "pause"
    SPAWN = "spawn"
    # Addition: the executor runs the state again at once (a fresh process, so a fresh
    # agent session) with the continuation prompt; the handler has nothing to do.
    CONTINUE = "continue"


@dataclass
class HandoffResult:
    """Outcome of handling a handoff. `error` says why a spawn did not start."""

    behavior: HandoffBehavior
    continuation_prompt: str | None
    spawned_process: subprocess.Popen[str] | None = None
    error: str | None = None


class SpawnError(Exception):
    """The continuation session could not be started; the message says why."""


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
        hold_spawn: bool = False,
    ) -> None:
        self.behavior = behavior
        self.claude_bin = claude_bin
        self.log_dir = log_dir
        self.hold_spawn = hold_spawn
        self._held: subprocess.Popen[str] | None = None

    def handle(self, loop_name: str, continuation: str | None) -> HandoffResult:
        """Pause, terminate and continue do nothing here; spawn starts the new session."""
        if self.behavior is HandoffBehavior.SPAWN:
            return self._spawn(loop_name, continuation)
        return HandoffResult(self.behavior, continuation)

    def log_path(self, loop_name: str) -> Path | None:
        """Where the spawned session's output goes (None: discarded)."""
        if self.log_dir is None:
            return None
        return self.log_dir / f"{loop_name}.handoff.log"

    def release_spawned(self) -> None:
        """Let a held session start claude (nothing happens when none is held)."""
        held, self._held = self._held, None
        if held is not None and held.stdin is not None:
            held.stdin.close()

    def claude_path(self) -> str:
        """The claude executable to run, or `SpawnError` saying why there is none."""
        claude = self.claude_bin or os.environ.get(CLAUDE_BIN_ENV) or "claude"
        found = shutil.which(claude)
        if found is not None:
            return found
        if os.sep in claude and os.path.exists(claude):
            message = f"Cannot start claude for the handoff: {claude}: not an executable file"
            raise SpawnError(message)
        raise SpawnError(CLAUDE_NOT_FOUND)

    def _spawn(self, loop_name: str, continuation: str | None) -> HandoffResult:
        if reference_seams.popen_replaced():  # a test double of the reference's seam
            return self._spawn_as_reference(loop_name, continuation)
        try:
            claude = self.claude_path()
            argv = [claude, "--dangerously-skip-permissions", "-p"]
            argv.append(spawn_prompt(loop_name, continuation))
            process = self._start_held(loop_name, argv)
        except SpawnError as exc:
            return HandoffResult(HandoffBehavior.SPAWN, continuation, error=str(exc))
        except OSError as exc:
            error = f"Cannot start claude for the handoff: {exc.filename or exc}: {exc.strerror}"
            return HandoffResult(HandoffBehavior.SPAWN, continuation, error=error)
        self._held = process
        if not self.hold_spawn:
            self.release_spawned()
        return HandoffResult(HandoffBehavior.SPAWN, continuation, spawned_process=process)

    def _spawn_as_reference(self, loop_name: str, continuation: str | None) -> HandoffResult:
        """`subprocess.Popen` was replaced: call it as the reference did (argv `[claude, "-p",
        prompt]`, text mode, nothing held, nothing looked up), and hand back what it gave."""
        claude = self.claude_bin or os.environ.get(CLAUDE_BIN_ENV) or "claude"
        argv = [claude, "-p", spawn_prompt(loop_name, continuation)]
        process: subprocess.Popen[str] = subprocess.Popen(argv, text=True)
        return HandoffResult(HandoffBehavior.SPAWN, continuation, spawned_process=process)

    def _start_held(self, loop_name: str, argv: list[str]) -> subprocess.Popen[str]:
        with self._open_log(loop_name) as log:
            return subprocess.Popen(
                ["/bin/sh", "-c", _HELD_START, f"ll-loop-handoff:{loop_name}", *argv],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                text=True,
                start_new_session=True,
            )

    def _open_log(self, loop_name: str) -> IO[bytes]:
        path = self.log_path(loop_name)
        if path is None:
            return open(os.devnull, "wb")
        path.parent.mkdir(parents=True, exist_ok=True)
        # Append: several handoffs of one run share the log.
        return open(path, "ab")
