"""What a person sees in a real terminal: `ll-loop watch` in a tmux pane (send-keys,
capture-pane), and the running action's time redrawn in place (`run` in a pty).

The loops wait for gate files the test creates; the waits poll until what is expected is on
the screen (their timeout only turns a hang into a failure).
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop
from fixtures.external_tools import find_program, require_tool
from test_cli_watch import GATED_LOOP, saved_status, start_in_background, wait_for

ELAPSED_ON_THE_ACTION_LINE = re.compile(r"\[1/5\] first -> echo one.*  \(\d+s\)")


class Tmux:
    """A tmux server of the test's own (its socket in the test's directory)."""

    def __init__(self, tool: str, root: Path) -> None:
        self.tool, self.root = tool, root
        self.env = {**cli_env(root), "TMUX_TMPDIR": str(root)}
        self.env.pop("TMUX", None)

    def command(self, *args: str) -> str:
        result = subprocess.run(
            [self.tool, "-L", "ll-loop-test", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return result.stdout

    def start(self, shell_command: str) -> None:
        self.command(
            "new-session", "-d", "-x", "120", "-y", "40", "-c", str(self.root), shell_command
        )

    def screen(self) -> str:
        return self.command("capture-pane", "-p", "-t", "0")

    def kill(self) -> None:
        subprocess.run(
            [self.tool, "-L", "ll-loop-test", "kill-server"],
            env=self.env,
            capture_output=True,
            check=False,
            timeout=30,
        )


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    binary = require_tool(
        lambda: find_program("tmux", "apt-get install tmux"), why="a real terminal for watch"
    )
    server = Tmux(str(binary), tmp_path)
    yield server
    server.kill()


def watch_in_pane(tmux: Tmux, *args: str) -> None:
    """`ll-loop watch ...` in the pane, its exit code shown after it, the pane kept open."""
    tmux.start(f"{LL_LOOP} watch {' '.join(args)}; echo watch-exit=$?; sleep 600")


@pytest.mark.slow
def test_a_person_watching_in_a_terminal_sees_progress_time_and_summary(
    tmp_path: Path, tmux: Tmux
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    watch_in_pane(tmux, "gated")
    wait_for(lambda: "[1/5] first -> echo one" in tmux.screen(), "the progress line")
    # A terminal: the running action's line shows the time spent, redrawn in place.
    wait_for(lambda: bool(ELAPSED_ON_THE_ACTION_LINE.search(tmux.screen())), "the elapsed time")
    (tmp_path / "gate1").touch()
    wait_for(lambda: "[2/5] second" in tmux.screen(), "the second state")
    (tmp_path / "gate2").touch()
    wait_for(lambda: "watch-exit=0" in tmux.screen(), "the watcher's end")
    screen = tmux.screen()
    assert "Watching loop: gated (pid " in screen
    assert "✓ success" in screen and "✗ failure" in screen
    assert "Loop completed: done (2 iterations, " in screen


@pytest.mark.slow
def test_ctrl_c_in_the_terminal_stops_watching_and_the_loop_keeps_running(
    tmp_path: Path, tmux: Tmux
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    watch_in_pane(tmux, "gated")
    wait_for(lambda: "[1/5] first" in tmux.screen(), "the progress line")
    tmux.command("send-keys", "-t", "0", "C-c")
    wait_for(lambda: "watch-exit=130" in tmux.screen(), "the watcher's end")
    assert "Stopped watching; gated is not affected" in tmux.screen()
    assert "Status: running (pid" in saved_status(tmp_path, "gated")
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    wait_for(lambda: "Status: completed" in saved_status(tmp_path, "gated"), "the loop's end")


# --- the running action's time, in a pty and off a terminal ------------------------------


def read_pty_until(fd: int, pattern: re.Pattern[str], seen: list[bytes]) -> None:
    def found() -> bool:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen.append(os.read(fd, 65536))
            except OSError:  # the other end closed
                return True
        return bool(pattern.search(b"".join(seen).decode("utf-8", "replace")))

    wait_for(found, f"{pattern.pattern!r} in the terminal")


@pytest.mark.slow
def test_on_a_terminal_the_running_actions_line_shows_its_time_redrawn_in_place(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    main, side = pty.openpty()
    process = subprocess.Popen(
        [str(LL_LOOP), "run", "gated"], cwd=tmp_path, env=cli_env(tmp_path), stdout=side
    )
    os.close(side)
    seen: list[bytes] = []
    try:
        # `\r` and the line again with the time after it: redrawn in place, not a new line.
        line = re.escape("[1/5] first -> echo one; while [ ! -f gate1 ]; do sleep 0.05; done;")
        read_pty_until(main, re.compile(rf"\r{line}.*  \(\d+s\)"), seen)
        (tmp_path / "gate1").touch()
        (tmp_path / "gate2").touch()
        assert process.wait(timeout=30) == 0
        read_pty_until(main, re.compile("Loop completed"), seen)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    text = b"".join(seen).decode("utf-8", "replace")
    # The redrawn line keeps its last time and ends before the verdict line.
    assert re.search(r"  \(\d+s\)\r\n {7}(\x1b\[32m)?✓", text), text


def test_off_a_terminal_a_long_action_adds_nothing_to_the_output(tmp_path: Path) -> None:
    """The output of a piped run is what it was before the time was shown on terminals."""
    write_loop(
        tmp_path,
        "long",
        "name: long\ninitial: wait\nstates:\n  wait:\n    action: sleep 1.5\n"
        "    next: done\n  done:\n    terminal: true\n",
    )
    result = run_cli(tmp_path, "run", "long")
    assert result.returncode == 0
    assert re.fullmatch(
        r"Running loop: long\nMax iterations: 50\n\n"
        r"\[1/50\] wait -> sleep 1\.5\n"
        r"       -> done \(1\.\ds\)\n\n"
        r"Loop completed: done \(1 iteration, 1\.\ds\)\n",
        result.stdout,
    ), result.stdout
