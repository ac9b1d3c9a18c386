"""`ll-loop watch` and `run --background --follow` against real background runs.

The loops wait for gate files the test creates, so each step happens when the test says,
never after a guessed delay.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import (
    FAILING_LOOP,
    LL_LOOP,
    cli_env,
    cli_in_process,
    normalize,
    run_cli,
    write_loop,
)

GATED_LOOP = """\
name: gated
initial: first
max_iterations: 5
states:
  first:
    action: "echo one; while [ ! -f gate1 ]; do sleep 0.05; done; echo two"
    on_success: second
  second:
    action: "while [ ! -f gate2 ]; do sleep 0.05; done; exit 1"
    on_success: done
    on_failure: done
  done:
    terminal: true
"""

GATED_HANDOFF_LOOP = """\
name: handoff
initial: step
max_iterations: 5
states:
  step:
    action: >-
      while [ ! -f gate ]; do sleep 0.05; done;
      if [ -f marker ]; then echo resumed; else touch marker;
      echo "CONTEXT_HANDOFF: Continue with module B"; fi
    on_success: done
    on_failure: step
  done:
    terminal: true
"""

WAIT_SECONDS = 30.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` until it holds (the timeout only turns a hang into a failure)."""
    import time

    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _default_sigint() -> None:
    """In the child: SIGINT's default, whatever pytest inherited (a background job of a
    shell without job control starts with it ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Watcher:
    """An `ll-loop` process whose output goes to files the test can read while it runs."""

    def __init__(self, root: Path, *args: str) -> None:
        self.out_path, self.err_path = root / "watch.out", root / "watch.err"
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.process = subprocess.Popen(
                [str(LL_LOOP), *args],
                cwd=root,
                env=cli_env(root),
                stdout=out,
                stderr=err,
                preexec_fn=_default_sigint,  # the tests send it SIGINT: not ignored, ever
            )

    def out(self) -> str:
        return self.out_path.read_text(encoding="utf-8")

    def err(self) -> str:
        return self.err_path.read_text(encoding="utf-8")

    def wait(self) -> int:
        return self.process.wait(timeout=WAIT_SECONDS)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def watchers() -> Iterator[list[Watcher]]:
    started: list[Watcher] = []
    yield started
    for watcher in started:
        watcher.stop()


def start_watch(watchers: list[Watcher], root: Path, *args: str) -> Watcher:
    watcher = Watcher(root, *args)
    watchers.append(watcher)
    return watcher


def start_in_background(root: Path, name: str, command: str = "run") -> None:
    """`ll-loop <command> <name> --background`, once its run is under way."""
    assert run_cli(root, command, name, "--background").returncode == 0
    wait_for(lambda: "Status: running (pid" in saved_status(root, name), f"{name} to run")


def saved_status(root: Path, name: str) -> str:
    return run_cli(root, "status", name).stdout


def after_header(text: str) -> str:
    """What follows the header and its blank line (`Running loop:` or `Watching loop:`)."""
    return text.split("\n\n", 1)[1]


def test_watch_prints_the_lines_run_prints_live_then_the_summary_and_exit_code(
    tmp_path: Path, watchers: list[Watcher]
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    watcher = start_watch(watchers, tmp_path, "watch", "gated")
    wait_for(lambda: "[1/5] first -> echo one" in watcher.out(), "the first progress line")
    assert "second" not in watcher.out()  # live: the run has not gone further yet
    (tmp_path / "gate1").touch()
    wait_for(lambda: "[2/5] second" in watcher.out(), "the second state")
    (tmp_path / "gate2").touch()
    assert watcher.wait() == 0
    out = watcher.out()
    assert out.startswith("Watching loop: gated (pid ")
    assert "\n\nLoop completed: done (2 iterations, " in out
    # The same lines the run itself printed (to its background log), summary included.
    run_log = (tmp_path / ".loops" / ".running" / "gated.log").read_text(encoding="utf-8")
    assert normalize(after_header(out)) == normalize(after_header(run_log))


def test_watch_verbose_shows_the_running_actions_output_as_it_comes(
    tmp_path: Path, watchers: list[Watcher]
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    watcher = start_watch(watchers, tmp_path, "watch", "gated", "-v")
    wait_for(lambda: "       | one\n" in watcher.out(), "the action's first output line")
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    assert watcher.wait() == 0
    assert "       | one\n       | two\n       ✓ success\n" in watcher.out()


def test_ctrl_c_stops_the_watcher_and_never_the_loop(
    tmp_path: Path, watchers: list[Watcher]
) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    watcher = start_watch(watchers, tmp_path, "watch", "gated")
    wait_for(lambda: "[1/5] first" in watcher.out(), "the first progress line")
    watcher.process.send_signal(signal.SIGINT)
    assert watcher.wait() == 130
    assert "Stopped watching; gated is not affected" in watcher.err()
    assert "Status: running (pid" in saved_status(tmp_path, "gated")
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    wait_for(lambda: "Status: completed" in saved_status(tmp_path, "gated"), "the loop's end")


def test_run_background_follow_shows_the_run_and_exits_with_its_code(tmp_path: Path) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    result = run_cli(tmp_path, "run", "failing", "--background", "--follow")
    assert result.returncode == 4  # max_iterations reached
    out = normalize(result.stdout)
    assert "Started failing in the background (pid N)\nWatching loop: failing (pid N)\n" in out
    assert "[1/3] check -> false\n       ✗ failure\n       -> fix (Ns)\n[2/3] fix" in out
    assert "Loop stopped: fix (3 iterations, Ns) - max_iterations reached\n" in out


def test_watch_of_a_run_that_is_not_running_prints_its_last_summary_and_code(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert run_cli(tmp_path, "run", "failing").returncode == 4
    result = run_cli(tmp_path, "watch", "failing")
    assert result.returncode == 4
    assert normalize(result.stdout) == (
        "Loop stopped: fix (3 iterations, Ns) - max_iterations reached\n"
        "Resume with: ll-loop resume failing -n 6\n"
    )
    assert run_cli(tmp_path, "watch", "nothing-ran").returncode == 1


def test_follow_needs_background(tmp_path: Path) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    result = run_cli(tmp_path, "run", "failing", "--follow")
    assert (result.returncode, result.stderr) == (
        2,
        "ll-loop run: error: --follow needs --background\n",
    )


@pytest.mark.slow
def test_watch_across_a_handoff_pause_and_the_resume(
    tmp_path: Path, watchers: list[Watcher]
) -> None:
    """The pause ends the watch with 3 and the pause summary; `watch` on the paused run says
    so (3); `watch --wait` follows the resumed part when it comes."""
    write_loop(tmp_path, "handoff", GATED_HANDOFF_LOOP)
    start_in_background(tmp_path, "handoff")
    watcher = start_watch(watchers, tmp_path, "watch", "handoff")
    wait_for(lambda: "[1/5] step" in watcher.out(), "the first progress line")
    (tmp_path / "gate").touch()
    assert watcher.wait() == 3
    paused = normalize(watcher.out())
    assert "       handoff: Continue with module B\n" in paused
    assert "Loop paused for handoff: step (1 iteration, Ns)\n" in paused
    assert "Resume with: ll-loop resume handoff\n" in paused

    again = run_cli(tmp_path, "watch", "handoff")
    assert again.returncode == 3
    assert "Loop paused for handoff" in again.stdout
    assert "Follow the resumed run with: ll-loop watch handoff --wait\n" in again.stdout

    (tmp_path / "gate").unlink()
    waiting = start_watch(watchers, tmp_path, "watch", "handoff", "--wait", "-v")
    assert run_cli(tmp_path, "resume", "handoff", "--background").returncode == 0
    wait_for(lambda: "[2/5] step" in waiting.out(), "the resumed run's progress line")
    (tmp_path / "gate").touch()
    assert waiting.wait() == 0
    resumed = normalize(waiting.out())
    assert "handoff: Continue" not in resumed  # only the resumed part is followed
    assert "       | resumed\n" in resumed
    assert resumed.endswith("Loop completed: done (2 iterations, Ns)\n")


def test_follow_of_a_refused_start_exits_with_the_refusal(tmp_path: Path) -> None:
    write_loop(tmp_path, "gated", GATED_LOOP)
    start_in_background(tmp_path, "gated")
    # A second start of the same loop is refused (busy) before it detaches.
    second = run_cli(tmp_path, "run", "gated", "--background", "--follow")
    assert second.returncode == 6
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    wait_for(lambda: "Status: completed" in saved_status(tmp_path, "gated"), "the loop's end")


def test_watch_help_names_the_exit_codes() -> None:
    result = subprocess.run(
        [str(LL_LOOP), "watch", "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "--wait" in result.stdout and "130  interrupted" in result.stdout


# --- in this process (the same paths, measured by coverage) -------------------------------

GATE_WAIT = "until [ -e gate ]; do sleep 0.05; done"

SHORT_LOOP = """\
name: short
initial: first
max_iterations: 5
states:
  first:
    action: "echo one; sleep 0.5; echo two"
    on_success: done
  done:
    terminal: true
"""


@pytest.mark.slow  # over 2 s: not in the development loop
def test_watch_in_process_follows_a_background_run_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # The run waits on a gate opened a while after `watch` starts: under load a fixed
    # 0.5 s sleep ended before `status` had even seen the run under way.
    write_loop(tmp_path, "short", SHORT_LOOP.replace("sleep 0.5", GATE_WAIT))
    start_in_background(tmp_path, "short")
    opener = threading.Timer(2.0, (tmp_path / "gate").touch)
    opener.start()
    try:
        code, out, _ = cli_in_process(capsys, "watch", "short", "-v")
    finally:
        opener.cancel()
    assert code == 0
    assert f"[1/5] first -> echo one; {GATE_WAIT}; echo two\n" in out
    assert "       | two\n       ✓ success\n       -> done (Ns)\n" in out
    assert out.endswith("\nLoop completed: done (1 iteration, Ns)\n")


def test_watch_in_process_of_runs_not_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "short", SHORT_LOOP)
    assert cli_in_process(capsys, "watch", "short") == (1, "", "[T] No state found for: short\n")
    assert run_cli(tmp_path, "run", "short").returncode == 0
    assert cli_in_process(capsys, "watch", "short") == (
        0,
        "Loop completed: done (1 iteration, Ns)\n",
        "",
    )


def test_follow_of_a_background_run_that_ends_before_starting_says_so(
    tmp_path: Path, watchers: list[Watcher]
) -> None:
    """The started process waits in the queue (a running loop shares its scope) and is
    stopped there: it never saves a state; `--follow` reports it instead of waiting on."""
    write_loop(tmp_path, "gated", GATED_LOOP.replace("max_iterations: 5", "scope: [src]"))
    write_loop(tmp_path, "queued", SHORT_LOOP.replace("name: short", "name: queued\nscope: [src]"))
    start_in_background(tmp_path, "gated")
    follower = start_watch(watchers, tmp_path, "run", "queued", "-b", "--queue", "--follow")
    wait_for(lambda: "(pid " in follower.out(), "the started line")
    pid = int(follower.out().split("(pid ", 1)[1].split(")", 1)[0])
    wait_for(
        lambda: "waits for running loop" in (tmp_path / ".loops/.running/queued.log").read_text(),
        "queue",
    )
    os.kill(pid, signal.SIGTERM)
    assert follower.wait() == 1
    assert f"The background run (pid {pid}) ended before it started; its log:" in follower.err()
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    wait_for(lambda: "Status: completed" in saved_status(tmp_path, "gated"), "the loop's end")
