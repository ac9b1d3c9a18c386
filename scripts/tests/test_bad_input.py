"""Bad input wherever a user can reach: each gives a clear message and a documented exit
code, never a traceback, never a damaged state file.

Most cases run `main_loop` in this process (fast, and the file system can be made to fail
at the OS boundary); the closed-stream cases need a real process.
"""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, cli_in_process, normalize, write_loop

from little_loops.fsm.persistence import StatePersistence
from little_loops.fsm.validation import MAX_LOOP_FILE_BYTES

CRASH_FILES = "ll-loop-crash-*"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _no_internal_errors(tmp_path: Path) -> Any:
    """Whatever a test does, ll-loop never reports an internal error (a traceback file)."""
    yield
    assert not list(tmp_path.rglob(CRASH_FILES))


def _loop(name: str, *states: tuple[str, str]) -> str:
    """A chain of `next` states ending in `done`."""
    text = f"name: {name}\ninitial: {states[0][0]}\nstates:\n"
    for index, (state, action) in enumerate(states):
        after = states[index + 1][0] if index + 1 < len(states) else "done"
        text += f"  {state}:\n    action: {json.dumps(action)}\n    next: {after}\n"
    return text + "  done:\n    terminal: true\n"


def _running() -> Path:
    return Path(".loops/.running")


def _every_event_line_parses(name: str) -> list[dict[str, Any]]:
    raw = (_running() / f"{name}.events.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    return [json.loads(line) for line in raw.splitlines()]


# --- loop files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: bad\ninitial: [x\n",
            ".loops/bad.yaml: YAML syntax error at line 3, column 1: expected ',' or ']', "
            "but got '<stream end>'",
        ),
        (
            "name: bad\ninitial: s\nmax_iterations: ten\nstates:\n  s:\n    terminal: true\n",
            ".loops/bad.yaml: max_iterations: must be an integer >= 1, got 'ten'",
        ),
        (
            "name: bad\ninitial: s\nstates:\n  s:\n    terminal: true\n    colour: red\n",
            ".loops/bad.yaml: states.s.colour: unknown key 'colour' (allowed: action, "
            "evaluate, route, on_success, on_failure, on_error, next, terminal, ",
        ),
        (
            "- just\n- a list\n",
            ".loops/bad.yaml: top level is a list; a loop file is a mapping "
            "(name:, initial:, states:)",
        ),
        (
            "name: bad\ninitial: s\nstates: &s\n  s:\n    terminal: true\n  t: *s\n",
            ".loops/bad.yaml: states.t.s: unknown key 's' (allowed: action, evaluate, route, "
            "on_success, on_failure, on_error, next, terminal, ",
        ),
    ],
)
def test_a_broken_loop_file_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    write_loop(tmp_path, "bad", text)
    for command in ("run", "resume", "validate"):
        code, out, err = cli_in_process(capsys, command, "bad")
        lines = (out + err).splitlines()
        assert code == 1, command
        # The start of the line: lists of allowed keys grow as features arrive.
        shown = [line.removeprefix("[T] ").lstrip() for line in lines]
        assert any(line.startswith(message) for line in shown), lines
        assert "Traceback" not in out + err
    assert not _running().exists()  # nothing was started


def test_binary_and_huge_loop_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loops = tmp_path / ".loops"
    loops.mkdir()
    (loops / "noise.yaml").write_bytes(bytes([0xF7, 0x00, 0xFF]) + os.urandom(2000))
    assert cli_in_process(capsys, "run", "noise") == (
        1,
        "",
        "[T] .loops/noise.yaml: is not UTF-8 text (invalid byte 0xf7 on line 1)\n",
    )
    with (loops / "huge.yaml").open("w") as handle:
        handle.write("name: huge\ninitial: s\ncontext:\n")
        while handle.tell() <= MAX_LOOP_FILE_BYTES:
            handle.write(f"  key{handle.tell()}: {'x' * 100}\n")
    code, _, err = cli_in_process(capsys, "run", "huge")
    assert (code, err) == (
        1,
        "[T] .loops/huge.yaml: is too large for a loop file (more than 5 MiB)\n",
    )


def test_a_yaml_alias_bomb_is_refused_quickly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["name: bomb", "initial: s", "context:", '  l0: &l0 ["lol","lol","lol","lol"]']
    for level in range(1, 12):
        lines.append(f"  l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 4) + "]")
    lines += ["states:", "  s:", "    action: echo ${context.l11}", "    next: s"]
    write_loop(tmp_path, "bomb", "\n".join(lines) + "\n")
    code, out, err = cli_in_process(capsys, "run", "bomb")
    assert (code, out) == (1, "")
    assert err == (
        "[T] .loops/bomb.yaml: YAML aliases expand to 29,826,140 more values than the file "
        "spells out (at most 100,000)\n"
    )


# --- what actions produce ----------------------------------------------------------------


def test_binary_and_huge_output_never_damage_the_run_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(6)
    (tmp_path / "noise.bin").write_bytes(bytes(rng.randrange(256) for _ in range(50_000)))
    write_loop(
        tmp_path,
        "noisy",
        _loop(
            "noisy",
            ("binary", "cat noise.bin; cat noise.bin >&2"),
            ("huge", "head -c 30000000 /dev/zero | tr '\\0' 'x'"),
            ("nul", "printf 'a\\0b\\n'"),
        ),
    )
    code, out, err = cli_in_process(capsys, "run", "noisy", "-v")
    assert (code, err) == (0, "")
    assert out.endswith("Loop completed: done (3 iterations, Ns)\n")
    state_file = _running() / "noisy.state.json"
    assert state_file.stat().st_size < 200_000
    assert StatePersistence("noisy").load_state_checked() is not None
    assert [event["event"] for event in _every_event_line_parses("noisy")][-1] == "loop_complete"
    code, out, _ = cli_in_process(capsys, "history", "noisy")
    assert code == 0 and "loop_complete" in out


MISSING = """\
name: missing
initial: work
states:
  work:
    action: no-such-command-x
    on_success: done
  done:
    terminal: true
"""


def test_a_missing_command_fails_the_run_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "missing", MISSING)
    code, out, err = cli_in_process(capsys, "run", "missing")
    assert (code, out) == (
        1,
        "Running loop: missing\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] work -> no-such-command-x\n"
        "       ✗ error - exit code 127: bash: line 1: no-such-command-x: command not found\n"
        "\n",
    )
    assert err.splitlines()[0] == (
        "Loop failed: work (1 iteration, Ns) - "
        "No valid transition for verdict 'error' in state 'work'"
    )


# --- the run directory ---------------------------------------------------------------------


def test_a_file_where_the_run_directory_should_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", _loop("simple", ("work", "true")))
    _running().write_text("not a directory")
    hint = (
        "  ll-loop keeps each run's state, events and lock there; it must be a writable directory\n"
    )
    for argv in (
        ("run", "simple"),
        ("resume", "simple"),
        ("run", "simple", "--background"),
        ("status", "simple"),
        ("list", "--running"),
    ):
        assert cli_in_process(capsys, *argv) == (
            1,
            "",
            "[T] .loops/.running: cannot write run files: a file is in the way (it must be "
            "a directory)\n" + hint,
        ), argv
    assert _running().read_text() == "not a directory"


def test_the_run_directory_vanishing_mid_run_ends_the_run_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(
        tmp_path,
        "sab",
        _loop("sab", ("a", "true"), ("b", "rm -rf .loops/.running && touch .loops/.running")),
    )
    code, out, err = cli_in_process(capsys, "run", "sab")
    assert code == 1
    assert out.endswith("[2/50] b -> rm -rf .loops/.running && touch .loops/.running\n")
    assert err == (
        "[T] .loops/.running: cannot save the run of 'sab': Not a directory\n"
        "  the run stopped; its state file keeps the last step saved. Fix the cause, then: "
        "ll-loop resume sab\n"
    )


FILLING = _loop(
    "filling",
    ("a", "true"),
    ("b", "[ -f b-ran ] || { touch b-ran disk-full; }"),
    ("c", "true"),
)


def test_a_full_disk_while_saving_keeps_the_old_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`os.replace` of the state file fails with ENOSPC once state b's action "fills" it."""
    write_loop(tmp_path, "filling", FILLING)
    state_file = _running() / "filling.state.json"
    before_failure: list[bytes] = []
    real_replace = os.replace

    def replace(source: Any, target: Any) -> None:
        if Path("disk-full").exists():
            before_failure.append(state_file.read_bytes())
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(source))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    code, out, err = cli_in_process(capsys, "run", "filling")
    assert (code, err) == (
        1,
        "[T] .loops/.running: cannot save the run of 'filling': No space left on device\n"
        "  the run stopped; its state file keeps the last step saved. Fix the cause, then: "
        "ll-loop resume filling\n",
    )
    # The failed save is the one taken as b routes to c, so the display never shows it.
    assert out.endswith("[2/50] b -> [ -f b-ran ] || { touch b-ran disk-full; }\n")
    assert len(before_failure) == 1  # nothing was written after the failed save
    assert state_file.read_bytes() == before_failure[0]
    saved = json.loads(state_file.read_text())
    assert (saved["current_state"], saved["phase"], saved["status"]) == ("b", "routed", "running")
    assert [path.name for path in _running().glob(".*.tmp")] == []
    _every_event_line_parses("filling")

    Path("disk-full").unlink()  # space again: the run goes on from b
    code, out, err = cli_in_process(capsys, "resume", "filling")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "Resuming loop 'filling' from state 'b' (iteration 2)"
    assert json.loads(state_file.read_text())["iteration"] == 3


def test_a_full_disk_under_the_events_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real ENOSPC from the OS: the events file is /dev/full."""
    write_loop(tmp_path, "full", _loop("full", ("a", "true"), ("b", "true")))
    assert cli_in_process(capsys, "run", "full", "-n", "1", "-q")[0] == 4
    state_file = _running() / "full.state.json"
    before = state_file.read_bytes()
    events = _running() / "full.events.jsonl"
    events.unlink()
    events.symlink_to("/dev/full")
    code, _, err = cli_in_process(capsys, "resume", "full")
    assert (code, err) == (
        1,
        "[T] .loops/.running: cannot save the run of 'full': No space left on device\n"
        "  the run stopped; its state file keeps the last step saved. Fix the cause, then: "
        "ll-loop resume full\n",
    )
    assert state_file.read_bytes() == before


def test_a_damaged_state_file_is_reported_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", _loop("simple", ("work", "true")))
    _running().mkdir(parents=True)
    (_running() / "simple.state.json").write_bytes(b'{"loop_name": "simple", "iter')
    problem = (
        "[T] .loops/.running/simple.state.json: damaged state file: invalid JSON at line 1, "
        "column 25: Unterminated string starting\n"
        "  to start over, delete it or run the loop again (ll-loop run <loop>)\n"
    )
    for argv in (("resume", "simple"), ("status", "simple"), ("stop", "simple")):
        assert cli_in_process(capsys, *argv) == (1, "", problem), argv


# --- closed streams (real processes) -------------------------------------------------------


def _shell(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command.replace("LL", f'"{LL_LOOP}"')],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_closed_standard_streams(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", _loop("simple", ("a", "echo a; sleep 0.2"), ("b", "true")))
    done = _shell(tmp_path, 'LL list >&-; echo "list $?"; LL run simple >&-; echo "run $?"')
    assert (done.stdout, done.stderr) == ("list 141\nrun 0\n", "")
    assert (
        json.loads((tmp_path / ".loops/.running/simple.state.json").read_text())["status"]
        == "completed"
    )
    done = _shell(
        tmp_path,
        'LL run simple | head -1; echo "run ${PIPESTATUS[0]}"; '
        'LL run nosuch 2>&-; echo "missing $?"; '
        'LL status simple <&- 2>&- | grep -E "^(Loop|Status)"; echo "status ${PIPESTATUS[0]}"',
    )
    assert (normalize(done.stdout), done.stderr) == (
        "Running loop: simple\nrun 0\nmissing 1\nLoop: simple\nStatus: completed\nstatus 0\n",
        "",
    )
