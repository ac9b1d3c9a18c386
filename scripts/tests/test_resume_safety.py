"""`ll-loop resume` checks before it changes anything, and says how to go on.

Issue 11 items 1, 13, 14, 15 and issue 10 item 5 (the resume part). The loops run real
shell actions in `tmp_path`; only the terminal is captured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.cli_support import FAILING_LOOP, SIMPLE_LOOP, cli_in_process, write_loop

from little_loops.cli import main_loop

HANDOFF_AT_WAVE = """\
name: pauser
initial: start
max_iterations: 10
states:
  start:
    action: echo starting
    next: wave
  wave:
    action: >-
      if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF: keep waving";
      else echo "resumed: ${handoff.prompt}"; fi
    next: done
  done:
    terminal: true
"""

ERRORING_LOOP = """\
name: bad
initial: a
states:
  a:
    action: exit 3
    on_success: done
  done:
    terminal: true
"""

STALLING_LOOP = """\
name: stuck
initial: check
max_iterations: 20
stall_threshold: 2
states:
  check:
    action: echo same; false
    on_success: done
    on_failure: check
  done:
    terminal: true
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _running_files(tmp_path: Path) -> dict[str, bytes]:
    running = tmp_path / ".loops" / ".running"
    return {
        path.name: path.read_bytes()
        for path in sorted(running.iterdir())
        if path.is_file() and path.suffix != ".lock"
    }


def test_resume_refuses_a_state_the_loop_file_no_longer_has_and_keeps_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_loop(tmp_path, "pauser", HANDOFF_AT_WAVE)
    assert main_loop(["run", "pauser", "-q"]) == 3
    before = _running_files(tmp_path)
    path.write_text(HANDOFF_AT_WAVE.replace("wave", "waves"), encoding="utf-8")
    capsys.readouterr()

    code, out, err = cli_in_process(capsys, "resume", "pauser")

    assert (code, out) == (1, "")
    assert err == (
        "[T] loop 'pauser' stopped at state 'wave', which the loop file no longer has; "
        "restore state 'wave' in the file, then: ll-loop resume pauser\n"
    )
    assert _running_files(tmp_path) == before  # no state write, no event
    assert not (tmp_path / ".loops" / ".history").exists()  # nothing archived
    path.write_text(HANDOFF_AT_WAVE, encoding="utf-8")
    code, out, _ = cli_in_process(capsys, "resume", "pauser")
    assert code == 0
    assert "Continuation context: keep waving" in out


def test_resume_without_saved_state_says_nothing_to_resume_as_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference prints the warning `Nothing to resume for: <argument>`, exit 1.

    Same words and exit code; like every warning here it goes to stderr (issue 11, item 9),
    where the reference printed warnings on stdout.
    """
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "resume", "simple") == (
        1,
        "",
        "[T] Nothing to resume for: simple\n",
    )


def test_resume_after_the_iteration_limit_refuses_up_front_with_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert main_loop(["run", "failing", "-n", "2", "-q"]) == 4
    before = _running_files(tmp_path)
    capsys.readouterr()
    assert cli_in_process(capsys, "resume", "failing", "-n", "2") == (
        1,
        "",
        "[T] loop 'failing' reached max_iterations (2 iterations done); "
        "to go on: ll-loop resume failing -n 4\n",
    )
    assert _running_files(tmp_path) == before
    code, _, _ = cli_in_process(capsys, "resume", "failing", "-n", "4")
    assert code == 4  # two more iterations ran
    state = json.loads((tmp_path / ".loops/.running/failing.state.json").read_text())
    assert state["iteration"] == 4


def test_resume_of_a_completed_run_says_how_to_start_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["simple", "-q"]) == 0
    assert cli_in_process(capsys, "resume", "simple") == (
        1,
        "",
        "[T] loop 'simple' already completed; start a new run with: ll-loop run simple\n",
    )


def test_resume_of_a_failed_run_says_how_to_start_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "bad", ERRORING_LOOP)
    assert main_loop(["bad", "-q"]) == 1
    capsys.readouterr()
    code, _, err = cli_in_process(capsys, "resume", "bad")
    assert code == 1
    assert err.endswith("; start a new run with: ll-loop run bad\n")


def test_quiet_still_prints_how_to_resume_a_paused_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "pauser", HANDOFF_AT_WAVE)
    assert cli_in_process(capsys, "run", "pauser", "-q") == (
        3,
        "Resume with: ll-loop resume pauser\n",
        "",
    )


def test_quiet_still_prints_how_to_go_on_after_the_iteration_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert cli_in_process(capsys, "run", "failing", "-n", "2", "-q") == (
        4,
        "Resume with: ll-loop resume failing -n 4\n",
        "",
    )


def test_stall_summary_says_how_to_go_on_and_the_flag_turns_the_guard_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "stuck", STALLING_LOOP)
    code, _, err = cli_in_process(capsys, "run", "stuck", "-q")
    assert code == 5
    assert (
        "Resume with: ll-loop resume stuck (once what repeats is fixed; otherwise it stalls "
        "again at once)\n"
        "Or without the stall guard: ll-loop resume stuck --stall-threshold 0 "
        "(or raise stall_threshold in the loop file)\n"
    ) in err
    # A plain resume stalls again at once: the guard's counts were kept.
    assert cli_in_process(capsys, "resume", "stuck", "-q")[0] == 5
    code, _, err = cli_in_process(capsys, "resume", "stuck", "-q", "--stall-threshold", "0")
    assert code == 4  # ran to the iteration limit instead
    assert "stalled" not in err


def test_stall_threshold_flag_on_run_overrides_the_loop_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "stuck", STALLING_LOOP)
    code, _, _ = cli_in_process(capsys, "run", "stuck", "-q", "-n", "6", "--stall-threshold", "5")
    state = json.loads((tmp_path / ".loops/.running/stuck.state.json").read_text())
    assert (code, state["iteration"], state["status"]) == (5, 5, "stalled")


def test_stall_threshold_must_not_be_negative(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli_in_process(capsys, "run", "x", "--stall-threshold", "-1")
    assert code == 2
    assert "must not be negative, got -1" in err
