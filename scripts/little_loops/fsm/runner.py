"""Running one action as a process: start, stream, time out, cancel, kill.

`DefaultActionRunner` owns everything about the child process and nothing about verdicts.
It starts each action in its own session (so the whole process group can be signalled),
with stdin from /dev/null, reads stdout line by line as it arrives (handing each line to an
optional callback), drains stderr on a thread so a chatty stderr never blocks the child,
and turns every expected failure (missing program, timeout, cancellation) into an
`ActionResult` instead of an exception.

All waiting happens on one `queue.SimpleQueue` fed by helper threads, so `cancel()` is safe
to call from another thread or from a signal handler running on the caller's thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

DEFAULT_OUTPUT_CAP = 1024 * 1024
"""Characters of stdout (and of stderr) kept in memory per action: the tail survives."""

KILL_GRACE_SECONDS = 2.0
"""Time between SIGTERM and SIGKILL when stopping a process group."""

PIPE_DRAIN_SECONDS = 0.5
"""How long pipes may stay open after the action itself exited (background children)."""

ABANDON_READERS_SECONDS = 1.0
"""After SIGKILL, how long to wait for the pipes before giving up on them."""

LINE_CHUNK_CHARS = 64 * 1024
"""Longest piece of a line read at once (a longer line reaches `on_line` in pieces)."""

TIMEOUT_EXIT_CODE = 124
MISSING_PROGRAM_EXIT_CODE = 127
CANCELLED_EXIT_CODE = 130

CLAUDE_BIN_ENV = "LL_CLAUDE_BIN"
CLAUDE_NOT_FOUND = "claude CLI not found: install Claude Code or set LL_CLAUDE_BIN"
CANCELLED_MESSAGE = "Action cancelled"

LineCallback = Callable[[str], None]


@dataclass
class ActionResult:
    """What an action produced. `error` says why it could not run or finish."""

    output: str
    stderr: str
    exit_code: int
    duration_ms: int
    timed_out: bool = False
    error: str | None = None


def is_slash_command(action: str) -> bool:
    """True when `action` starts with `/` and its first word has no other `/`.

    So `/ll:check_code types` is a slash command and `/usr/bin/env make` is a shell command.
    """
    if not action.startswith("/"):
        return False
    first_word = action.split(maxsplit=1)[0]
    return "/" not in first_word[1:]


class _TailBuffer:
    """Keeps the last `cap` characters appended to it and counts what it dropped."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._chunks: deque[str] = deque()
        self._size = 0
        self.dropped = 0

    def append(self, text: str) -> None:
        self._chunks.append(text)
        self._size += len(text)
        while self._size > self._cap:
            excess = self._size - self._cap
            first = self._chunks[0]
            if len(first) <= excess:
                self._chunks.popleft()
                cut = len(first)
            else:
                self._chunks[0] = first[excess:]
                cut = excess
            self._size -= cut
            self.dropped += cut

    def text(self) -> str:
        body = "".join(self._chunks)
        if self.dropped:
            return f"[output truncated: {self.dropped} earlier characters dropped]\n{body}"
        return body


# Messages the helper threads put on the queue. Lines arrive as ("line", text).
_STDOUT_EOF = ("stdout_eof", "")
_STDERR_EOF = ("stderr_eof", "")
_EXITED = ("exited", "")
_CANCEL = ("cancel", "")
_STREAM_OF_EOF = {"stdout_eof": "stdout", "stderr_eof": "stderr"}


class _RunningAction:
    """One started process and the threads that watch it."""

    def __init__(self, process: subprocess.Popen[str], output_cap: int) -> None:
        self.process = process
        self.events: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self.stdout = _TailBuffer(output_cap)
        self.stderr = _TailBuffer(output_cap)
        self.open_streams = {"stdout", "stderr"}
        self.exited = False
        self.exited_at: float | None = None
        self.cancelled = False
        assert process.stdout is not None and process.stderr is not None
        self._start_thread(self._pump, process.stdout, "line", _STDOUT_EOF)
        self._start_thread(self._pump, process.stderr, "err", _STDERR_EOF)
        self._start_thread(self._wait_for_exit)

    def _start_thread(self, target: Callable[..., None], *args: object) -> None:
        # Daemon threads: a reader stuck on a pipe held by an escaped grandchild must never
        # keep the program alive.
        threading.Thread(target=target, args=args, daemon=True).start()

    def _pump(self, stream: IO[str], kind: str, eof: tuple[str, str]) -> None:
        # The reader owns its pipe and closes it at the end, even if nobody waits any more.
        with stream:
            # Bounded reads: one enormous line without a newline arrives in pieces.
            for line in iter(lambda: stream.readline(LINE_CHUNK_CHARS), ""):
                self.events.put((kind, line))
        self.events.put(eof)

    def _wait_for_exit(self) -> None:
        self.process.wait()
        self.events.put(_EXITED)

    @property
    def finished(self) -> bool:
        return self.exited and not self.open_streams

    def handle(self, kind: str, text: str, on_line: LineCallback | None) -> None:
        """Apply one queue message to the collected state."""
        if kind == "line":
            self.stdout.append(text)
            if on_line is not None:
                on_line(text.removesuffix("\n"))
        elif kind == "err":
            self.stderr.append(text)
        elif kind == "exited":
            self.exited = True
            self.exited_at = time.monotonic()
        elif kind == "cancel":
            self.cancelled = True
        else:
            self.open_streams.discard(_STREAM_OF_EOF[kind])

    def wait(self, deadline: float, on_line: LineCallback | None) -> str:
        """Handle messages until something decides the outcome; return that outcome.

        `finished`: exited and both pipes closed. `cancelled`: `cancel()` was called.
        `timeout`: the deadline passed while the action was still running. `lingering`:
        the action exited but a background child kept its pipes open past the drain time.
        """
        while not self.finished:
            if self.cancelled:
                return "cancelled"
            limit = deadline
            if self.exited_at is not None:
                limit = min(deadline, self.exited_at + PIPE_DRAIN_SECONDS)
            if not self._handle_next(limit, on_line):
                return "lingering" if self.exited else "timeout"
        return "finished"

    def collect(self, until: float, on_line: LineCallback | None) -> bool:
        """Handle messages until finished or `until`; True when finished."""
        while not self.finished:
            if not self._handle_next(until, on_line):
                return False
        return True

    def _handle_next(self, limit: float, on_line: LineCallback | None) -> bool:
        remaining = limit - time.monotonic()
        if remaining <= 0:
            return False
        try:
            kind, text = self.events.get(timeout=remaining)
        except queue.Empty:
            return False
        self.handle(kind, text, on_line)
        return True

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # group already gone
            os.killpg(self.process.pid, signum)

    def stop_group(self, on_line: LineCallback | None) -> None:
        """SIGTERM the group, wait the grace period, SIGKILL, then collect what is left."""
        self.signal_group(signal.SIGTERM)
        if self.collect(time.monotonic() + KILL_GRACE_SECONDS, on_line):
            return
        self.signal_group(signal.SIGKILL)
        self.collect(time.monotonic() + ABANDON_READERS_SECONDS, on_line)


class DefaultActionRunner:
    """Runs shell actions with `bash -c` and slash commands with the `claude` CLI."""

    supports_streaming = True

    def __init__(
        self, *, claude_bin: str | None = None, output_cap: int = DEFAULT_OUTPUT_CAP
    ) -> None:
        self.claude_bin = claude_bin
        self.output_cap = output_cap
        self._current: _RunningAction | None = None
        # A cancel that arrives while no process runs (between actions, or just before one
        # starts) must still stop the next action, or Ctrl-C would wait for it to finish.
        self._cancel_requested = False

    def run(
        self,
        action: str,
        timeout: float,
        is_slash_command: bool,
        *,
        on_line: LineCallback | None = None,
    ) -> ActionResult:
        """Run `action` for at most `timeout` seconds; never raises for expected failures."""
        started = time.monotonic()
        argv = self._argv(action, is_slash_command)
        try:
            running = self._start(argv)
        except (OSError, ValueError) as exc:
            message = _start_failure_message(argv[0], exc, is_slash_command)
            return ActionResult(
                output="",
                stderr=message,
                exit_code=MISSING_PROGRAM_EXIT_CODE,
                duration_ms=_ms_since(started),
                error=message,
            )
        self._current = running
        if self._cancel_requested:
            self._cancel_running(running)
        try:
            return self._supervise(running, started, timeout, on_line, is_slash_command)
        except BaseException:
            # Ctrl-C or a raising line callback: never leave the action running behind us.
            running.signal_group(signal.SIGKILL)
            raise
        finally:
            self._current = None
            self._cancel_requested = False

    def cancel(self) -> None:
        """Stop the running action, or the next one to start (safe from signal handlers)."""
        self._cancel_requested = True
        running = self._current
        if running is not None:
            self._cancel_running(running)

    @staticmethod
    def _cancel_running(running: _RunningAction) -> None:
        # Queue the cancel before signalling, so it is seen before the exit it causes.
        running.events.put(_CANCEL)
        running.signal_group(signal.SIGTERM)

    def _argv(self, action: str, is_slash_command: bool) -> list[str]:
        if is_slash_command:
            return [self._claude_bin(), "--dangerously-skip-permissions", "-p", action]
        return ["bash", "-c", action]

    def _claude_bin(self) -> str:
        return self.claude_bin or os.environ.get(CLAUDE_BIN_ENV) or "claude"

    def _start(self, argv: list[str]) -> _RunningAction:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="backslashreplace",
            start_new_session=True,
        )
        return _RunningAction(process, self.output_cap)

    def _supervise(
        self,
        running: _RunningAction,
        started: float,
        timeout: float,
        on_line: LineCallback | None,
        is_slash_command: bool,
    ) -> ActionResult:
        outcome = running.wait(started + timeout, on_line)
        if outcome != "finished":
            running.stop_group(on_line)
        if outcome == "cancelled":
            return _interrupted(running, started, CANCELLED_EXIT_CODE, CANCELLED_MESSAGE)
        if outcome == "timeout":
            message = f"Action timed out after {timeout:g}s"
            return _interrupted(running, started, TIMEOUT_EXIT_CODE, message)
        return self._completed(running, started, is_slash_command)

    def _completed(
        self, running: _RunningAction, started: float, is_slash_command: bool
    ) -> ActionResult:
        exit_code = running.process.returncode
        output = running.stdout.text()
        stderr = running.stderr.text()
        error = None
        if is_slash_command and exit_code != 0 and not output.strip():
            # claude refused to start (not logged in, running as root, bad flags...): its
            # own message is the useful one, and the state must get the `error` verdict.
            error = f"claude exited with code {exit_code}: {stderr.strip() or 'no message'}"
        return ActionResult(output, stderr, exit_code, _ms_since(started), False, error)


def _start_failure_message(program: str, exc: OSError | ValueError, is_slash_command: bool) -> str:
    if is_slash_command and isinstance(exc, FileNotFoundError):
        return CLAUDE_NOT_FOUND
    if isinstance(exc, FileNotFoundError):
        return f"Cannot run action: program '{program}' not found"
    if isinstance(exc, OSError):
        return f"Cannot run action: {program}: {exc.strerror or exc}"
    return f"Cannot run action: {exc}"


def _interrupted(
    running: _RunningAction, started: float, exit_code: int, message: str
) -> ActionResult:
    stderr = running.stderr.text()
    if stderr and not stderr.endswith("\n"):
        stderr += "\n"
    return ActionResult(
        output=running.stdout.text(),
        stderr=stderr + message,
        exit_code=exit_code,
        duration_ms=_ms_since(started),
        timed_out=exit_code == TIMEOUT_EXIT_CODE,
        error=message,
    )


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
