"""Running a person's notify command: detached, bounded by a timeout, logged.

`start_notify_command` starts a small supervisor (this file, run by the same Python in
isolated mode) in its own session with no terminal and no pipes to us, and returns at
once: the loop never waits for the command, and the command still runs when `ll-loop`
exits right after starting it (the final `completed`). The
supervisor runs the command with `/bin/sh -c` in its own process group, waits at most
`timeout` seconds, then stops the whole group (SIGTERM, a grace period, SIGKILL), and
appends one line to the log: when, which event, and how the command ended. Nothing here
raises or prints: a notify command that fails, is missing or hangs is only logged.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

NOTIFY_TIMEOUT_SECONDS = 60.0
"""How long a notify command may run before its process group is killed."""

KILL_GRACE_SECONDS = 5.0
"""Time between SIGTERM and SIGKILL when the command outlives its timeout."""

_STDERR_SHOWN = 200  # characters of the command's last stderr line kept in the log line
# The supervisor runs this file with `python -I`: no PYTHONPATH to add for it, and none
# leaks into the command's environment, but it may import only the standard library.
_SUPERVISOR = [sys.executable, "-I", str(Path(__file__).resolve())]


def start_notify_command(
    command: str,
    env: Mapping[str, str],
    *,
    label: str,
    log_path: Path,
    timeout: float = NOTIFY_TIMEOUT_SECONDS,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes] | None:
    """Start the supervisor of `command` (environment `env`, log line tagged `label`,
    working directory `cwd`, default ours) and return it without waiting; None when it
    could not start (that is logged)."""
    # `--log-fd 2`: the supervisor appends its line to the log it was started with, even
    # when the run's files were moved to the history meanwhile (a new `run` of the loop):
    # by path, the line would land in the next run's log.
    argv = [*_SUPERVISOR, "--timeout", str(timeout), "--log", str(log_path), "--log-fd", "2"]
    argv += ["--label", label, "--", command]
    try:
        # The supervisor's own stderr goes to the log: a crash of it is seen there.
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                env=dict(env),
                cwd=cwd,
            )
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the command or a variable
        append_log_line(log_path, label, f"could not start: {exc}")
        return None


def append_log_line(log_path: Path, label: str, outcome: str) -> None:
    """Append `<time> <label> <outcome>` as one write (lines of parallel calls never mix);
    a log that cannot be written is given up silently (nothing may fail the loop)."""
    with contextlib.suppress(OSError):
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _write_log_line(fd, label, outcome)
        finally:
            os.close(fd)


def _write_log_line(fd: int, label: str, outcome: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {label} {' '.join(outcome.split())}\n"
    os.write(fd, line.encode("utf-8", errors="backslashreplace"))


# --- the supervisor -----------------------------------------------------------------------


def supervise(command: str, timeout: float) -> str:
    """Run `command` bounded by `timeout`; how it ended, as the log says it."""
    import tempfile  # here: only a run with --notify supervises a command

    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        except OSError as exc:
            return f"could not start: {exc}"
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_group(process)
            return f"timed out after {timeout:g}s, killed"
        return _exit_outcome(code, _last_line(stderr))


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE_SECONDS)
    _signal_group(process.pid, signal.SIGKILL)  # what is left of the group, if anything
    process.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _exit_outcome(code: int, stderr_line: str) -> str:
    outcome = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    if code != 0 and stderr_line:
        outcome += f": {stderr_line}"
    return outcome


def _last_line(stream: IO[bytes]) -> str:
    """The last non-empty line the command wrote to stderr (cut to a readable length)."""
    stream.seek(0, os.SEEK_END)
    stream.seek(max(stream.tell() - 4096, 0))
    text = stream.read().decode("utf-8", errors="backslashreplace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:_STDERR_SHOWN] if lines else ""


def main(argv: Sequence[str] | None = None) -> int:
    """The supervisor's entry: run the command, append its log line."""
    parser = argparse.ArgumentParser(prog="notify_command")
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--log-fd", type=int, default=None)
    parser.add_argument("command")
    args = parser.parse_args(argv)
    outcome = supervise(args.command, args.timeout)
    if args.log_fd is None:
        append_log_line(args.log, args.label, outcome)
    else:  # opened for appending by `start_notify_command`
        with contextlib.suppress(OSError):
            _write_log_line(args.log_fd, args.label, outcome)
    return 0


if __name__ == "__main__":
    sys.exit(main())
