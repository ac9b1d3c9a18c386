"""Running one action as a process: start, stream, time out, cancel, kill.

`DefaultActionRunner` owns everything about the child process and nothing about verdicts.
It starts each action in its own session (so the whole process group can be signalled),
with stdin from /dev/null and stdout going straight into a file: the per-action log when
the caller gives a `log_path`, an anonymous temporary file otherwise (see
`output_streams`). The runner follows that file as it grows and hands each line to an
optional callback; stderr is a pipe drained whenever it is readable, so a chatty stderr
never blocks the child. Memory holds only the tails (`output_cap` bytes of each stream).
Every expected failure (missing program, timeout, cancellation) becomes an
`ActionResult` instead of an exception.

When the action's shell exits while something it put in the background still runs in its
group, the action is over but that group is kept (`background_groups`): it runs on, its
output still going to the action's logs, until `stop_background()` at the end of the run.

All waiting happens in one `select` on the calling thread, over the stderr pipe and a
pidfd that becomes readable when the action exits; it wakes at least every
`POLL_SECONDS`, so `cancel()` (safe from another thread or from a signal handler) is
seen at once when the action dies of it, and within `POLL_SECONDS` otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from little_loops.fsm.model.action_result import ActionResult as ActionResult
from little_loops.fsm.model.agent_hosts import DEFAULT_HOST
from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.slash_commands import is_slash_command as is_slash_command
from little_loops.fsm.process import reference_seams
from little_loops.fsm.process.background_groups import BackgroundGroups, group_exists
from little_loops.fsm.process.claude_refusal import CLAUDE_NOT_FOUND as CLAUDE_NOT_FOUND
from little_loops.fsm.process.claude_refusal import claude_not_found, claude_refusal
from little_loops.fsm.process.output_files import SpareFiles, truncation_marker
from little_loops.fsm.process.output_streams import (
    LineCallback,
    OutputReaders,
    StderrPipe,
    StdoutFile,
    TextCallback,
)
from little_loops.fsm.process.process_groups import ActionGroup

if TYPE_CHECKING:
    from little_loops.fsm.process.hosts import AgentHost, HostStream
    from little_loops.fsm.process.hosts.claude import ClaudeHost
    from little_loops.fsm.process.idle_watch import IdleWatch


@functools.cache
def _claude_host() -> ClaudeHost:
    """Builds a slash command's claude command line; the agent hosts are imported only
    by a run that runs a prompt (a shell-only run starts without them)."""
    from little_loops.fsm.process.hosts.claude import ClaudeHost

    return ClaudeHost()


DEFAULT_OUTPUT_CAP = 1024 * 1024
"""Bytes of stdout (and of stderr) kept in memory per action: the tail survives."""

KILL_GRACE_SECONDS = 2.0
"""Time between SIGTERM and SIGKILL when stopping a process group."""

PIPE_DRAIN_SECONDS = 0.5
"""How long stderr may stay open after the action itself exited before the action counts
as done and what it left in the background is kept running (`background_groups`)."""

ABANDON_READERS_SECONDS = 1.0
"""After SIGKILL, how long to wait for stderr to close before giving up on it."""

POLL_SECONDS = 0.05
"""Longest wait between checks for a cancel, for new lines, and (without pidfd) an exit."""

GROUP_NOTICE_SECONDS = 0.2
"""How long an action runs before `on_group_running` is told its group: a shorter action
costs nothing more, and one killed with its runner within that time has ended anyway."""

TIMEOUT_EXIT_CODE = 124
MISSING_PROGRAM_EXIT_CODE = 127
CANCELLED_EXIT_CODE = 130

CLAUDE_BIN_ENV = "LL_CLAUDE_BIN"
CANCELLED_MESSAGE = "Action cancelled"


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits; None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        return None


class _RunningAction:
    """One started process, its two output streams, and the wait for its end."""

    def __init__(self, process: subprocess.Popen[bytes], stdout: StdoutFile, cap: int) -> None:
        assert process.stderr is not None
        self.process = process
        # Called once when the action has run `GROUP_NOTICE_SECONDS` (see the runner).
        self.notice: Callable[[ActionGroup], None] | None = None
        self.notice_at = 0.0
        self.stdout = stdout
        self.stderr = StderrPipe(process.stderr, cap, stdout.wanted_log_path)
        self.cancelled = False
        # Whether the cancel's signal reached the action while it still ran; a cancel
        # landing after the action exited on its own does not cost it its result.
        self.killed_by_cancel = False
        self.adopted = False  # its group was kept running: the streams are not ours now
        # HEAD's idle timeout (kill after this much silence); on the action, not an
        # argument of `_supervise`, whose signature code outside overrides.
        self.idle: IdleWatch | None = None
        # Issue 24: the agent host of a slash command (None: a shell action); on the action
        # too, for the same reason. Only claude's refusals are explained (`claude_refusal`).
        self.agent: AgentHost | None = None
        self.exited_at: float | None = None
        self.stderr_reads = 0  # times stderr had something (the idle timeout watches it)
        self._behind = False  # the last follow stopped with lines still unread
        # poll(), not epoll: two descriptors, and no epoll instance to make, fill and
        # close per action (six system calls).
        self._selector = selectors.PollSelector()
        self._selector.register(self.stderr.fd, selectors.EVENT_READ)
        self._pidfd = _open_pidfd(process.pid)
        if self._pidfd is not None:
            self._selector.register(self._pidfd, selectors.EVENT_READ)

    @property
    def finished(self) -> bool:
        return self.exited_at is not None and not self.stderr.open

    def wait(self, deadline: float, readers: OutputReaders, idle: IdleWatch | None = None) -> str:
        """Watch the action until something decides the outcome; return that outcome.

        `finished`: exited and stderr closed. `cancelled`: `cancel()` was called.
        `timeout`: the deadline passed while the action was still running. `idle`: it
        printed nothing for `idle.seconds`. `lingering`: the action exited but a
        background child kept stderr open past the drain time.
        """
        while not self.finished:
            if self.cancelled:
                return "cancelled"
            self._give_notice()
            if self.exited_at is None and self._too_quiet(idle):
                return "idle"
            limit = deadline
            if self.exited_at is not None:
                limit = min(deadline, self.exited_at + PIPE_DRAIN_SECONDS)
            if not self._step(limit, readers):
                return "lingering" if self.exited_at is not None else "timeout"
        # A cancel that killed the action shows up as its exit: it is still a cancel.
        return "cancelled" if self.cancelled else "finished"

    def _too_quiet(self, idle: IdleWatch | None) -> bool:
        """Whether the action has written nothing (stdout's size, stderr's reads) for the
        idle timeout."""
        if idle is None:
            return False
        marker = (os.fstat(self.stdout.fd).st_size, self.stderr_reads)
        return idle.too_quiet(marker, time.monotonic())

    def _give_notice(self) -> None:
        due = self.exited_at is None and time.monotonic() >= self.notice_at
        if self.notice is not None and due:
            notice, self.notice = self.notice, None
            notice(ActionGroup.of(self.process.pid))  # dated now: only long actions pay

    def collect(self, until: float, readers: OutputReaders) -> bool:
        """Watch until finished or `until`; True when finished."""
        while not self.finished:
            if not self._step(until, readers):
                return False
        return True

    def _step(self, limit: float, readers: OutputReaders) -> bool:
        """Wait for one change (at most until `limit`) and take it in; False past `limit`."""
        remaining = limit - time.monotonic()
        if remaining <= 0:
            return False
        timeout = 0.0 if self._behind else min(remaining, POLL_SECONDS)
        if self._pidfd is None and not self.stderr.open and self.exited_at is None:
            # Nothing left to select on: wait for the exit itself (no pidfd to watch).
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
            timeout = 0.0
        for key, _ in self._selector.select(timeout):
            if key.fd == self.stderr.fd:
                self._drain_stderr()
        if readers.present:
            self._behind = self.stdout.follow(readers)
        self.stdout.publish_log()
        self._note_exit()
        return True

    def _drain_stderr(self) -> None:
        self.stderr_reads += 1
        self.stderr.drain()
        if not self.stderr.open:
            self._selector.unregister(self.stderr.fd)

    def _note_exit(self) -> None:
        if self.exited_at is None and self.process.poll() is not None:
            self.exited_at = time.monotonic()
            self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            self._selector.unregister(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def has_exited(self) -> bool:
        """Whether the action has exited (a zombie counts), without reaping it."""
        if self.exited_at is not None or self.process.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped meanwhile
            return True
        return info is not None

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # group already gone
            os.killpg(self.process.pid, signum)

    def stop_group(self, readers: OutputReaders) -> None:
        """SIGTERM the group, wait the grace period, SIGKILL, then collect what is left."""
        self.signal_group(signal.SIGTERM)
        if self.collect(time.monotonic() + KILL_GRACE_SECONDS, readers):
            return
        self.signal_group(signal.SIGKILL)
        self.collect(time.monotonic() + ABANDON_READERS_SECONDS, readers)

    def close(self) -> None:
        """Release the descriptors (the process is reaped or abandoned by now)."""
        self._close_pidfd()
        self._selector.close()
        if not self.adopted:
            self.stderr.close()
            self.stdout.close()


class DefaultActionRunner:
    """Runs shell actions with `bash -c` and slash commands with the `claude` CLI.

    `supports_streaming`: `run` takes `on_line`; `supports_text_blocks`: and `on_text`.
    `supports_output_log`: `run` takes `log_path`, the file that receives the action's
    whole stdout. `supports_resume_session`: `run` takes `resume_session`, a claude
    session a slash command continues (`--resume`). `supports_head_options`: `run` takes
    `claude_flags` (more flags for claude: HEAD's `--agent`, `--tools`, `--model`) and
    `idle_timeout` (stop an action silent that long).

    Slash commands run with `--output-format stream-json --verbose`: the readers get only
    what the agent says (`claude_stream`), the log keeps the lines claude printed.
    """

    supports_streaming = True
    supports_text_blocks = True
    supports_output_log = True
    supports_resume_session = True
    supports_head_options = True
    supports_hosts = True

    def __init__(
        self,
        *,
        claude_bin: str | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        cwd: Path | str | None = None,
    ) -> None:
        self.claude_bin = claude_bin
        self.output_cap = output_cap
        # Addition: the working directory of every action (None: this process's).
        self.cwd = cwd
        self._current: _RunningAction | None = None
        self._spare_logs = SpareFiles()
        # A cancel that arrives while no process runs (between actions, or just before one
        # starts) must still stop the next action, or Ctrl-C would wait for it to finish.
        self._cancel_requested = False
        self.background = BackgroundGroups()
        # Told the group of an action that has run `GROUP_NOTICE_SECONDS` (e.g. to record
        # it in the state, so a later process finds what a runner that died left running).
        self.on_group_running: Callable[[ActionGroup], None] | None = None
        # A Temporal worker's ledger must know the group at once: its watchdog stops it
        # should the worker be killed the next moment (`group_watchdog`).
        self.group_notice_seconds = GROUP_NOTICE_SECONDS

    def run(
        self,
        action: str,
        timeout: float,
        is_slash_command: bool,
        *,
        on_line: LineCallback | None = None,
        log_path: Path | None = None,
        on_text: TextCallback | None = None,
        resume_session: str | None = None,
        claude_flags: tuple[str, ...] = (),
        idle_timeout: float | None = None,
        host: str | None = None,
        model: str | None = None,
    ) -> ActionResult:
        """Run `action` for at most `timeout` seconds; never raises for expected failures.

        `on_line` gets each line of stdout (without its line break) as it is written,
        `on_text` the same text in blocks of whole lines (see `OutputReaders`); for a
        slash command, that is the text the agent says (and any plain-text line claude
        prints), and `output` is claude's final result text. `resume_session` makes a
        slash command continue that claude session (`--resume`); shell actions ignore it.
        `log_path` (its folder is created, an old file there replaced) receives all of
        stdout, and `<log_path minus .log>.stderr.log` all of stderr; each appears once
        the action has printed something to it (see `output_files.PendingLog`).
        `claude_flags` go on a slash command's claude command line; `idle_timeout` stops
        an action that writes nothing for that many seconds (exit 124, `timeout_kind`
        `idle`). `host` names the agent CLI a slash command runs on (`process.hosts`;
        None: claude), `model` the model it is asked for.
        """
        if reference_seams.subprocess_run_replaced():  # a test double of the reference's seam
            ran = reference_seams.run_as_reference(
                action, timeout, is_slash_command, self._claude_bin(), self.cwd, on_line, on_text
            )
            return ActionResult(*ran)
        started = time.monotonic()
        agent = _agent_named(host or DEFAULT_HOST) if is_slash_command else None
        argv, env = self._command(
            agent, action, is_slash_command, resume_session, claude_flags, model
        )
        try:
            running = self._start(argv, log_path, env)
        except (OSError, ValueError) as exc:
            message = _start_failure_message(argv[0], exc, is_slash_command, agent)
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
            running.notice = self.on_group_running
            running.notice_at = started + self.group_notice_seconds
            readers = OutputReaders(on_line, on_text)
            claude = agent.stream(readers, cap=self.output_cap) if agent is not None else None
            if claude is not None:  # the agent's lines go through it, always followed
                readers = OutputReaders(on_text=claude.feed)
            running.idle = _idle_watch(idle_timeout) if idle_timeout else None
            running.agent = agent
            result = self._supervise(running, started, timeout, readers, claude)
            if agent is not None and claude is not None:
                _note_host_ending(result, agent, claude.run)
            return result
        except BaseException:
            # Ctrl-C or a raising line callback: never leave the action running behind us.
            running.signal_group(signal.SIGKILL)
            raise
        finally:
            self._current = None
            self._cancel_requested = False
            running.close()

    def stop_background(self) -> None:
        """Stop what the actions of this run left running in the background (run end)."""
        self.background.stop_all(KILL_GRACE_SECONDS, ABANDON_READERS_SECONDS)

    def cancel(self) -> None:
        """Stop the running action, or the next one to start (safe from signal handlers)."""
        self._cancel_requested = True
        running = self._current
        if running is not None:
            self._cancel_running(running)

    @staticmethod
    def _cancel_running(running: _RunningAction) -> None:
        # Flag before signalling, so the exit the signal causes is seen as a cancel. An
        # action still running now is cut off by it; one that exits between this check
        # and the signal counts as cut off too (it runs again: the safe side).
        running.killed_by_cancel = running.killed_by_cancel or not running.has_exited()
        running.cancelled = True
        running.signal_group(signal.SIGTERM)

    def _command(
        self,
        agent: AgentHost | None,
        action: str,
        is_slash_command: bool,
        resume_session: str | None,
        claude_flags: tuple[str, ...],
        model: str | None,
    ) -> tuple[list[str], dict[str, str] | None]:
        """The argv and the environment (None: ours) of the action's process."""
        if agent is None or agent.name == DEFAULT_HOST:
            return self._argv(action, is_slash_command, resume_session, claude_flags), None
        from little_loops.fsm.process.hosts import program_of

        program = program_of(agent)
        chosen = model if agent.takes_model else None
        command = agent.command(program, action, resume_session=resume_session, model=chosen)
        env = {**os.environ, **command.env} if command.env else None
        if self.cwd is not None:
            # Some CLIs (opencode) take their project from $PWD, not their working directory.
            env = {**(env or os.environ), "PWD": str(Path(self.cwd).resolve())}
        return command.argv, env

    def _argv(
        self,
        action: str,
        is_slash_command: bool,
        resume_session: str | None = None,
        claude_flags: tuple[str, ...] = (),
    ) -> list[str]:
        if not is_slash_command:
            return ["bash", "-c", action]
        command = _claude_host().command(
            self._claude_bin(), action, resume_session=resume_session, extra_flags=claude_flags
        )
        return command.argv

    @staticmethod
    def _executable(argv: list[str]) -> str | None:
        """Where `bash` is, looked up once per PATH: the child would otherwise try each
        PATH entry with an `execve` of its own, while we wait for it to start."""
        return _find_program(argv[0], os.environ.get("PATH")) if argv[0] == "bash" else None

    def _claude_bin(self) -> str:
        return self.claude_bin or os.environ.get(CLAUDE_BIN_ENV) or "claude"

    def _start(
        self, argv: list[str], log_path: Path | None, env: dict[str, str] | None = None
    ) -> _RunningAction:
        stdout = StdoutFile(log_path, self._spare_logs)
        try:
            process = subprocess.Popen(
                argv,
                executable=self._executable(argv),
                stdin=_devnull(),
                stdout=stdout.fd,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=self.cwd,
                env=env,
            )
        except BaseException:
            stdout.close()
            raise
        try:
            running = _RunningAction(process, stdout, self.output_cap)
        except BaseException:
            _kill_and_reap(process)
            stdout.close()
            raise
        if log_path is not None:
            self._spare_logs.prepare(log_path.parent)  # for the next action, while this runs
        return running

    def _supervise(
        self,
        running: _RunningAction,
        started: float,
        timeout: float,
        readers: OutputReaders,
        claude: HostStream | None,
    ) -> ActionResult:
        idle = running.idle
        agent = running.agent
        outcome = running.wait(started + timeout, readers, idle)
        if outcome not in ("finished", "lingering"):
            running.stop_group(readers)
        running.stdout.finish(readers)
        running.stdout.publish_log()
        result = self._result(running, readers.present, claude)
        if outcome == "lingering" or (outcome == "finished" and group_exists(running.process.pid)):
            self._keep_in_background(running)
        result.duration_ms = _ms_since(started)
        if outcome == "cancelled" and running.killed_by_cancel:
            _mark_interrupted(result, CANCELLED_EXIT_CODE, CANCELLED_MESSAGE)
            result.cancelled = True
        elif outcome == "timeout":
            _mark_interrupted(result, TIMEOUT_EXIT_CODE, f"Action timed out after {timeout:g}s")
            result.timeout_kind = "wall"
        elif outcome == "idle":
            assert idle is not None
            message = f"Action idle for {idle.seconds:g}s (no output)"
            _mark_interrupted(result, TIMEOUT_EXIT_CODE, message)
            result.timeout_kind = "idle"
        elif claude is not None and (agent is None or agent.name == DEFAULT_HOST):
            _explain_claude_refusal(result)
        return result

    def _keep_in_background(self, running: _RunningAction) -> None:
        """The shell exited but its group runs on: keep it until the run ends."""
        running.adopted = True
        group = ActionGroup.left_behind(running.process.pid)
        self.background.adopt(group, running.stdout, running.stderr)

    def _result(
        self, running: _RunningAction, followed: bool, claude: HostStream | None
    ) -> ActionResult:
        log_path = str(running.stdout.log_path) if running.stdout.log_path else None
        if claude is not None:
            # claude's final result text (or, without one, the text handed on), not the
            # JSON lines of its stdout.
            claude.close()
            output, truncated = claude.output_with_marker(log_path)
        else:
            output, truncated = self._stdout_tail(running, followed, log_path)
        # None only for a process that could not be reaped after a timeout or cancel,
        # whose exit code is replaced by 124 or 130 anyway.
        exit_code = running.process.returncode
        return ActionResult(
            output=output,
            stderr=running.stderr.text(),
            exit_code=exit_code if exit_code is not None else -1,
            duration_ms=0,
            output_truncated=truncated,
            log_path=log_path,
            claude=claude.run if claude is not None else None,
        )

    def _stdout_tail(
        self, running: _RunningAction, followed: bool, log_path: str | None
    ) -> tuple[str, bool]:
        output, dropped = running.stdout.tail(self.output_cap, followed=followed)
        if dropped:
            return truncation_marker("output", dropped, log_path) + output, True
        return output, False


@functools.lru_cache(maxsize=4)
def _find_program(name: str, search_path: str | None) -> str | None:
    """`name` found on `search_path` (None: not found; Popen then reports it)."""
    return shutil.which(name, path=search_path)


_devnull_fd: int | None = None


def _devnull() -> int:
    """A descriptor on /dev/null for the actions' stdin, opened once per process."""
    global _devnull_fd
    if _devnull_fd is None:
        _devnull_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _devnull_fd


def _kill_and_reap(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert process.stderr is not None  # started with stderr=PIPE
    process.stderr.close()


def _explain_claude_refusal(result: ActionResult) -> None:
    # claude refused to start (not logged in, running as root, bad flags...): its own
    # message and what to do about it are the useful part, and the state must get the
    # `error` verdict (see `claude_refusal`).
    refusal = claude_refusal(result.exit_code, result.output, result.stderr)
    if refusal is not None:
        result.error = refusal


def _mark_interrupted(result: ActionResult, exit_code: int, message: str) -> None:
    if result.stderr and not result.stderr.endswith("\n"):
        result.stderr += "\n"
    result.stderr += message
    result.exit_code = exit_code
    result.timed_out = exit_code == TIMEOUT_EXIT_CODE
    result.error = message


def _note_host_ending(result: ActionResult, agent: AgentHost, run: ClaudeRun) -> None:
    """Keep how the agent CLI ended (`HostEnding`) on `result`; another host than claude
    also names itself on its run record (`ClaudeRun.host`) and in its error."""
    if agent.name != DEFAULT_HOST:
        run.host = agent.name
    if result.timed_out or result.cancelled:
        return  # cut off by us: the CLI did not end on its own
    ending = agent.ending(
        run,
        exit_code=result.exit_code,
        output=result.output,
        stderr=result.stderr,
        now=time.time(),
    )
    result.host_ending = ending
    refused = ending.kind == "auth" or (ending.kind == "other" and not result.output.strip())
    if agent.name != DEFAULT_HOST and refused and result.error is None:
        # As for claude (`claude_refusal`): the state gets the `error` verdict with the
        # CLI's own words, never a judgement as if the model had answered.
        result.error = f"{agent.name} exited with code {result.exit_code}: {ending.message}"


def _idle_watch(idle_timeout: float) -> IdleWatch:
    """The watch of an action with an `idle_timeout:` (imported only for one)."""
    from little_loops.fsm.process.idle_watch import IdleWatch

    return IdleWatch(idle_timeout)


def _agent_named(host: str) -> AgentHost:
    """The adapter of the agent CLI `host` (see `_claude_host` for why it is imported here)."""
    from little_loops.fsm.process.hosts import host_named

    return host_named(host)


def _start_failure_message(
    program: str,
    exc: OSError | ValueError,
    is_slash_command: bool,
    agent: AgentHost | None = None,
) -> str:
    if agent is not None and agent.name != DEFAULT_HOST and isinstance(exc, FileNotFoundError):
        from little_loops.fsm.process.hosts.missing import host_not_found

        return host_not_found(agent, program)
    if is_slash_command and isinstance(exc, FileNotFoundError):
        return claude_not_found(program)
    if isinstance(exc, FileNotFoundError):
        return f"Cannot run action: program '{program}' not found"
    if isinstance(exc, OSError):
        return f"Cannot run action: {program}: {exc.strerror or exc}"
    return f"Cannot run action: {exc}"


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
