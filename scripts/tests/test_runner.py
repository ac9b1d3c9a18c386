"""DefaultActionRunner against real bash processes and a fake `claude` script."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from little_loops.cli.processes import is_running
from little_loops.fsm.process import output_streams
from little_loops.fsm.process import runner as runner_module
from little_loops.fsm.process.runner import (
    CLAUDE_NOT_FOUND,
    ActionResult,
    DefaultActionRunner,
    is_slash_command,
)


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def process_gone(pid: int, within: float = 3.0) -> bool:
    """True when `pid` has exited (gone, or a zombie waiting for its new parent)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):  # gone (possibly mid-read)
            return True
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def fast_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shorten the SIGTERM grace so kill escalation can be tested quickly."""
    monkeypatch.setattr(runner_module, "KILL_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(runner_module, "ABANDON_READERS_SECONDS", 0.2)


# -- is_slash_command -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("/ll:check_code types", True),
        ("/commit", True),
        ("/review-pr 12 /tmp/x", True),
        ("/usr/bin/env make", False),
        ("/bin/true", False),
        ("echo /ll:x", False),
        ("", False),
        ("/", True),
    ],
)
def test_is_slash_command(action: str, expected: bool) -> None:
    assert is_slash_command(action) is expected


# -- ordinary shell actions -----------------------------------------------------------


def test_shell_action_returns_stdout_stderr_and_exit_code() -> None:
    result = DefaultActionRunner().run("echo out; echo err >&2; exit 3", 10, False)
    assert (result.output, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert (result.timed_out, result.error) == (False, None)
    assert 0 <= result.duration_ms < 5000


def test_action_result_defaults() -> None:
    result = ActionResult(output="o", stderr="e", exit_code=0, duration_ms=5)
    assert (result.timed_out, result.error) == (False, None)


def test_lines_reach_the_callback_as_they_are_printed() -> None:
    arrivals: list[tuple[str, float]] = []
    started = time.monotonic()

    def on_line(line: str) -> None:
        arrivals.append((line, time.monotonic() - started))

    result = DefaultActionRunner().run(
        "echo first; sleep 0.6; echo second", 10, False, on_line=on_line
    )
    assert [line for line, _ in arrivals] == ["first", "second"]
    assert arrivals[0][1] < 0.5  # seen before the action finished
    assert result.output == "first\nsecond\n"


def test_stdin_is_closed() -> None:
    result = DefaultActionRunner().run('read -r line; echo "read exit $?"', 10, False)
    assert result.output == "read exit 1\n"


def test_action_runs_in_its_own_session() -> None:
    result = DefaultActionRunner().run('read -ra f < /proc/$$/stat; echo "${f[5]} $$"', 10, False)
    session_id, pid = result.output.split()
    assert session_id == pid
    assert int(session_id) != os.getsid(0)


def test_non_utf8_bytes_are_escaped_not_fatal() -> None:
    result = DefaultActionRunner().run(r"printf 'a\xffb\n'; printf '\xfe' >&2", 10, False)
    assert result.output == "a\\xffb\n"
    assert result.stderr == "\\xfe"
    assert result.exit_code == 0


def folded(char: str, total: int, width: int) -> str:
    """What `head -c total /dev/zero | tr '\\0' char | fold -w width` prints."""
    return "\n".join(char * len(piece) for piece in _pieces(total, width))


def _pieces(total: int, width: int) -> list[range]:
    return [range(start, min(start + width, total)) for start in range(0, total, width)]


def test_megabytes_of_stdout_are_kept_whole_under_the_cap() -> None:
    runner = DefaultActionRunner(output_cap=8 * 1024 * 1024)
    result = runner.run("head -c 3000000 /dev/zero | tr '\\0' x | fold -w 99", 30, False)
    assert result.output == folded("x", 3_000_000, 99)


def test_output_beyond_the_cap_keeps_the_tail_with_a_marker() -> None:
    result = DefaultActionRunner().run(
        "head -c 3000000 /dev/zero | tr '\\0' x | fold -w 99; echo; echo END", 30, False
    )
    full = folded("x", 3_000_000, 99) + "\nEND\n"
    dropped = len(full) - 1024 * 1024
    marker = f"[output truncated: {dropped} earlier bytes dropped]\n"
    assert result.output == marker + full[dropped:]


def test_a_line_longer_than_the_cap_is_cut_inside_the_line() -> None:
    result = DefaultActionRunner(output_cap=10).run("echo 0123456789abcdef", 10, False)
    assert result.output == "[output truncated: 7 earlier bytes dropped]\n789abcdef\n"


def test_a_huge_line_reaches_the_callback_in_pieces() -> None:
    pieces: list[str] = []
    result = DefaultActionRunner().run(
        "head -c 100000 /dev/zero | tr '\\0' y; echo", 10, False, on_line=pieces.append
    )
    assert [len(piece) for piece in pieces] == [65536, 100000 - 65536]
    assert result.output == "y" * 100000 + "\n"


def test_heavy_stderr_does_not_block_the_action() -> None:
    result = DefaultActionRunner().run(
        "head -c 900000 /dev/zero | tr '\\0' e | fold -w 79 >&2; echo done", 10, False
    )
    assert result.output == "done\n"
    assert result.stderr == folded("e", 900_000, 79)
    assert result.exit_code == 0


# -- timeouts, background children, cancellation -------------------------------------


def test_timeout_keeps_earlier_output_and_reports_124() -> None:
    started = time.monotonic()
    result = DefaultActionRunner().run("echo before; printf oops >&2; sleep 30", 0.3, False)
    assert time.monotonic() - started < 2.0
    assert result.output == "before\n"
    assert result.stderr == "oops\nAction timed out after 0.3s"
    assert (result.exit_code, result.timed_out) == (124, True)
    assert result.error == "Action timed out after 0.3s"
    assert result.duration_ms >= 300


def test_zero_timeout_stops_at_once_with_a_whole_seconds_message() -> None:
    result = DefaultActionRunner().run("sleep 30", 0, False)
    assert (result.stderr, result.exit_code) == ("Action timed out after 0s", 124)


@pytest.mark.usefixtures("fast_kill")
def test_a_process_ignoring_sigterm_is_killed() -> None:
    started = time.monotonic()
    result = DefaultActionRunner().run("trap '' TERM; echo stubborn; sleep 30", 0.2, False)
    assert time.monotonic() - started < 1.5
    assert (result.output, result.exit_code) == ("stubborn\n", 124)


def test_timeout_kills_background_children_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    result = DefaultActionRunner().run(f"sleep 30 & echo $! > {pid_file}; sleep 30", 0.3, False)
    assert time.monotonic() - started < 2.0
    assert result.exit_code == 124
    assert process_gone(int(pid_file.read_text()))


def test_background_child_holding_the_pipe_does_not_hang_the_run(tmp_path: Path) -> None:
    """The action is over when its shell exits; the child runs on until the run ends."""
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    runner = DefaultActionRunner()
    result = runner.run(f"sleep 30 & echo $! > {pid_file}; echo done", 20, False)
    assert time.monotonic() - started < 2.0
    assert (result.output, result.exit_code, result.timed_out) == ("done\n", 0, False)
    pid = int(pid_file.read_text())
    assert is_running(pid)  # still there: the run has not ended
    runner.stop_background()
    assert process_gone(pid)


def test_output_written_by_a_background_child_shortly_after_exit_is_kept() -> None:
    result = DefaultActionRunner().run("(sleep 0.1; echo late) & echo early", 10, False)
    assert result.output == "early\nlate\n"


def test_background_child_with_its_own_output_is_left_alone(tmp_path: Path) -> None:
    started = time.monotonic()
    result = DefaultActionRunner().run("sleep 30 >/dev/null 2>&1 & echo $!", 10, False)
    pid = int(result.output)
    try:
        assert time.monotonic() - started < 0.4
        assert not process_gone(pid, within=0.1)
    finally:
        os.kill(pid, signal.SIGKILL)


@pytest.mark.usefixtures("fast_kill")
def test_child_escaping_the_group_does_not_hang_the_run(tmp_path: Path) -> None:
    started = time.monotonic()
    result = DefaultActionRunner().run("setsid sleep 30 & echo $!; echo done", 20, False)
    pid = int(result.output.split()[0])
    try:
        assert time.monotonic() - started < 2.0
        assert (result.output.split()[1], result.exit_code) == ("done", 0)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_cancel_from_another_thread_stops_the_action() -> None:
    runner = DefaultActionRunner()
    timer = threading.Timer(0.3, runner.cancel)
    timer.start()
    started = time.monotonic()
    result = runner.run("echo start; sleep 30", 20, False)
    timer.join()
    assert time.monotonic() - started < 2.0
    assert result.output == "start\n"
    assert result.stderr == "Action cancelled"
    assert (result.exit_code, result.timed_out, result.error) == (130, False, "Action cancelled")


def test_a_raising_line_callback_kills_the_action_and_propagates() -> None:
    def explode(line: str) -> None:
        raise RuntimeError(f"display broke on {line}")

    runner = DefaultActionRunner()
    seen: list[str] = []

    def record_then_explode(line: str) -> None:
        seen.append(line)
        explode(line)

    with pytest.raises(RuntimeError, match=r"^display broke on [0-9]+$"):
        runner.run("echo $$; sleep 30", 20, False, on_line=record_then_explode)
    assert process_gone(int(seen[0]))


# -- programs that cannot start ------------------------------------------------------


def test_missing_bash_is_exit_127_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = DefaultActionRunner().run("echo hi", 10, False)
    message = "Cannot run action: program 'bash' not found"
    assert result == ActionResult("", message, 127, result.duration_ms, False, message)


def test_bash_is_looked_up_again_when_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bash` is found once per PATH value, so a changed PATH is still honoured."""
    write_script(tmp_path / "bash", 'echo "fake bash: $*"')
    runner = DefaultActionRunner()
    assert runner.run("echo real", 10, False).output == "real\n"
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert runner.run("echo real", 10, False).output == "fake bash: -c echo real\n"
    monkeypatch.undo()
    assert runner.run("echo real", 10, False).output == "real\n"


def test_action_with_a_nul_byte_is_reported() -> None:
    result = DefaultActionRunner().run("echo a\0b", 10, False)
    assert (result.exit_code, result.error) == (127, "Cannot run action: embedded null byte")


# -- slash commands through a fake claude --------------------------------------------

ECHO_ARGS = 'for arg in "$@"; do printf "[%s]\\n" "$arg"; done\n'
# The prompt is claude's last argument (`-p <prompt>` comes after the flags).
LAST_ARG = "for last; do :; done\n"


def test_slash_command_runs_claude_from_the_constructor(tmp_path: Path) -> None:
    claude = write_script(tmp_path / "my-claude", ECHO_ARGS)
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:check types", 10, True)
    assert result.output == (
        "[--dangerously-skip-permissions]\n[--output-format]\n[stream-json]\n[--verbose]\n"
        "[-p]\n[/ll:check types]\n"
    )
    assert (result.exit_code, result.error) == (0, None)


def test_slash_command_uses_ll_claude_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = write_script(tmp_path / "env-claude", LAST_ARG + 'echo "env claude: $last"\n')
    monkeypatch.setenv("LL_CLAUDE_BIN", str(claude))
    result = DefaultActionRunner().run("/ll:x", 10, True)
    assert result.output == "env claude: /ll:x\n"


def test_constructor_claude_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_CLAUDE_BIN", str(write_script(tmp_path / "a", "echo env\n")))
    runner = DefaultActionRunner(claude_bin=str(write_script(tmp_path / "b", "echo arg\n")))
    assert runner.run("/x", 10, True).output == "arg\n"


def test_slash_command_finds_claude_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_script(tmp_path / "claude", LAST_ARG + 'echo "path claude: $last"\n')
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert DefaultActionRunner().run("/ll:y", 10, True).output == "path claude: /ll:y\n"


def test_missing_claude_is_an_error_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = DefaultActionRunner().run("/ll:check", 10, True)
    assert result == ActionResult(
        "", CLAUDE_NOT_FOUND, 127, result.duration_ms, False, CLAUDE_NOT_FOUND
    )
    assert CLAUDE_NOT_FOUND == "claude CLI not found: install Claude Code or set LL_CLAUDE_BIN"


def test_claude_that_is_not_executable_is_an_error_result(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\necho never\n")
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert result.exit_code == 127
    assert result.error == f"Cannot run action: {claude}: Permission denied"


def test_claude_refusing_to_start_gives_its_own_message(tmp_path: Path) -> None:
    claude = write_script(tmp_path / "claude", 'echo "Error: not logged in" >&2; exit 1\n')
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert (result.output, result.exit_code) == ("", 1)
    assert result.error == "claude exited with code 1: Error: not logged in"


def test_claude_failing_silently_says_so(tmp_path: Path) -> None:
    claude = write_script(tmp_path / "claude", "exit 2\n")
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert result.error == "claude exited with code 2: no message"


def test_claude_failing_with_output_is_an_ordinary_result(tmp_path: Path) -> None:
    claude = write_script(tmp_path / "claude", "echo 'tests failed'; exit 1\n")
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert (result.output, result.exit_code, result.error) == ("tests failed\n", 1, None)


def test_shell_action_failing_silently_is_an_ordinary_result() -> None:
    result = DefaultActionRunner().run("exit 1", 10, False)
    assert (result.output, result.exit_code, result.error) == ("", 1, None)


def test_cancel_before_an_action_starts_stops_that_action_at_once() -> None:
    runner = DefaultActionRunner()
    runner.cancel()
    started = time.monotonic()
    result = runner.run("sleep 5", timeout=10, is_slash_command=False)
    assert (result.exit_code, result.error) == (130, "Action cancelled")
    assert time.monotonic() - started < 3
    # The pending cancel is used up: the next action runs normally.
    assert runner.run("echo again", timeout=10, is_slash_command=False).output == "again\n"


# -- output logs and readers ----------------------------------------------------------


def test_stdout_and_stderr_go_whole_to_their_logs(tmp_path: Path) -> None:
    log = tmp_path / "demo.logs" / "1-build.log"
    runner = DefaultActionRunner(output_cap=8)
    result = runner.run("seq 1 5; echo oops >&2; echo again >&2", 10, False, log_path=log)
    assert log.read_text() == "1\n2\n3\n4\n5\n"
    stderr_log = tmp_path / "demo.logs" / "1-build.stderr.log"
    assert stderr_log.read_text() == "oops\nagain\n"
    marker = f"[output truncated: 2 earlier bytes dropped; full output in {log}]\n"
    assert result.output == marker + "2\n3\n4\n5\n"
    stderr_marker = f"[stderr truncated: 3 earlier bytes dropped; full stderr in {stderr_log}]\n"
    assert result.stderr == stderr_marker + "s\nagain\n"
    assert (result.output_truncated, result.log_path) == (True, str(log))


def test_a_long_stderr_keeps_its_tail_and_names_its_log(tmp_path: Path) -> None:
    log = tmp_path / "1-x.log"
    action = "printf abc >&2; sleep 0.1; printf def >&2"
    result = DefaultActionRunner(output_cap=4).run(action, 10, False, log_path=log)
    stderr_log = tmp_path / "1-x.stderr.log"
    assert (
        result.stderr
        == f"[stderr truncated: 2 earlier bytes dropped; full stderr in {stderr_log}]\ncdef"
    )
    assert stderr_log.read_text() == "abcdef"
    assert (result.output, result.log_path, log.exists()) == ("", None, False)


def test_a_silent_action_leaves_no_log_and_an_old_stderr_log_goes(tmp_path: Path) -> None:
    log = tmp_path / "1-x.log"
    (tmp_path / "1-x.stderr.log").write_text("from an earlier attempt\n")
    result = DefaultActionRunner().run("true", 10, False, log_path=log)
    assert (result.output, result.log_path, result.output_truncated) == ("", None, False)
    assert list(tmp_path.iterdir()) == []


def test_a_stderr_log_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "1-x.stderr.log").mkdir()  # the log's name is taken by a directory
    result = DefaultActionRunner(output_cap=2).run(
        "printf abc >&2", 10, False, log_path=tmp_path / "1-x.log"
    )
    assert result.stderr == "[stderr truncated: 1 earlier bytes dropped]\nbc"
    assert result.exit_code == 0


def test_the_log_is_visible_while_the_action_still_runs(tmp_path: Path) -> None:
    log = tmp_path / "1-x.log"
    seen: list[str] = []
    DefaultActionRunner().run(
        f"echo first; sleep 0.3; cat {log} > {tmp_path / 'copy'}; echo second",
        10,
        False,
        log_path=log,
        on_line=seen.append,
    )
    assert (tmp_path / "copy").read_text() == "first\n"
    assert seen == ["first", "second"]


def test_text_readers_get_blocks_of_whole_lines(tmp_path: Path) -> None:
    blocks: list[str] = []
    lines: list[str] = []
    result = DefaultActionRunner().run(
        "printf 'a\\r\\nb'; sleep 0.3; printf 'c\\nd\\n'; printf 'no end'",
        10,
        False,
        on_line=lines.append,
        on_text=blocks.append,
    )
    assert lines == ["a", "bc", "d", "no end"]
    assert "".join(blocks) == "a\nbc\nd\nno end" == result.output
    assert blocks[0] == "a\n"  # seen before `bc` was complete
    assert all(block.endswith("\n") for block in blocks[:-1])


def test_a_line_longer_than_a_read_arrives_in_pieces_without_cutting_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(output_streams, "READ_CHUNK_BYTES", 1000)
    monkeypatch.setattr(output_streams, "LINE_CHUNK_CHARS", 300)
    pieces: list[str] = []
    text = "é" * 1500  # 3000 bytes: a read ends in the middle of a character
    result = DefaultActionRunner().run(
        f"printf '{text}\\r\\nend\\n'", 10, False, on_line=pieces.append
    )
    assert "".join(pieces[:-1]) == text and pieces[-1] == "end"
    assert max(len(piece) for piece in pieces) <= 300
    assert result.output == text + "\nend\n"


def test_a_flood_of_lines_is_handed_over_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_streams, "FOLLOW_BUDGET_BYTES", 4096)
    lines: list[str] = []
    DefaultActionRunner().run("seq 1 20000", 30, False, on_line=lines.append)
    assert lines == [str(number) for number in range(1, 20001)]


def test_without_pidfd_exits_are_still_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "_open_pidfd", lambda pid: None)
    runner = DefaultActionRunner()
    started = time.monotonic()
    for _ in range(5):
        assert runner.run("echo hi", 10, False).output == "hi\n"
    # stderr closed early: the exit itself is waited for.
    result = runner.run("exec 2>&-; sleep 0.2; echo late", 10, False)
    assert (result.output, result.exit_code) == ("late\n", 0)
    assert time.monotonic() - started < 2.0


def test_pidfd_open_failing_means_no_pidfd(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    assert runner_module._open_pidfd(os.getpid()) is None


def test_a_failure_after_the_start_kills_the_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(pid: int) -> int:
        (tmp_path / "pid").write_text(str(pid))
        raise RuntimeError("no watching today")

    monkeypatch.setattr(runner_module, "_open_pidfd", broken)
    with pytest.raises(RuntimeError, match=r"^no watching today$"):
        DefaultActionRunner().run("sleep 30", 10, False)
    assert process_gone(int((tmp_path / "pid").read_text()))


def test_a_text_reader_alone_gets_lines_and_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_streams, "READ_CHUNK_BYTES", 100)
    blocks: list[str] = []
    result = DefaultActionRunner().run(
        "printf '%0250d\\nshort\\n' 0", 10, False, on_text=blocks.append
    )
    assert "".join(blocks) == result.output == "0" * 250 + "\nshort\n"
    assert len(blocks) > 2  # the long line came in pieces


def test_stderr_drops_whole_early_chunks_past_the_cap() -> None:
    result = DefaultActionRunner(output_cap=4).run(
        "printf aaaa >&2; sleep 0.2; printf bbbb >&2", 10, False
    )
    assert result.stderr == "[stderr truncated: 4 earlier bytes dropped]\nbbbb"
