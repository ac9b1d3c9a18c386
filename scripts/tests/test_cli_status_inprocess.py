"""`ll-loop status` guides a person, in this process (issue 23 item 15; docs/user-guide.md,
status): why a run stopped, how long it ran, the action under way and its log, and the
next command. (test_status_guide.py runs `ll-loop` as a subprocess, where coverage is not
kept.)

The run under way is the one a real run leaves while its action runs: the state file
says `running` at the state whose `action_start` is the last event, and its runner (here:
this process) is alive.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, dead_pid, save_state, write_loop

from little_loops.cli import main_loop

WORK = """\
name: slow-one
initial: work
states:
  work:
    action: "echo started"
    next: done
  done:
    terminal: true
"""

CAPPED = """\
name: capped
initial: a
max_iterations: 2
states:
  a: {action: "true", next: a}
  done: {terminal: true}
"""

RUNNING = Path(".loops/.running")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _under_way(
    tmp_path: Path, *, pid: int, extra_events: list[dict[str, object]] | None = None
) -> None:
    """`slow-one` ran its `work` action for real; its files are then set back to the
    moment that action was under way (the events up to its `action_start`)."""
    write_loop(tmp_path, "slow", WORK)  # the file's stem differs from the loop's name
    assert main_loop(["slow", "-q"]) == 0
    events_file = RUNNING / "slow-one.events.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    started = next(i for i, event in enumerate(events) if event["event"] == "action_start")
    kept = [*events[: started + 1], *(extra_events or [])]
    events_file.write_text("".join(json.dumps(event) + "\n" for event in kept))
    state_file = RUNNING / "slow-one.state.json"
    state = json.loads(state_file.read_text())
    state.update(status="running", current_state="work", pid=pid, elapsed_ms=None)
    state_file.write_text(json.dumps(state))
    (RUNNING / "slow-one.lock").unlink()  # no lock file: the pid decides who runs it


def _status(capsys: pytest.CaptureFixture[str], loop: str) -> list[str]:
    code, out, _ = cli_in_process(capsys, "status", loop)
    assert code == 0
    return out.splitlines()


def test_a_run_under_way_shows_its_action_its_log_and_how_to_follow_or_stop_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _under_way(tmp_path, pid=os.getpid())

    lines = _status(capsys, "slow")

    assert lines[1] == "Status: running (pid N)"  # this process's pid
    assert lines[6] == "Elapsed: Ns"
    assert lines[7:] == [
        "Action: echo started",
        "Log: .loops/.running/slow-one.logs/1-work.log",
        "Next: ll-loop watch slow-one (follow it), ll-loop stop slow-one (stop it)",
    ]


def test_an_action_that_has_written_no_log_yet_says_so_and_names_its_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24: the action's agent host is named; a sub-loop's events (`depth`) are not
    the top-level run's action."""
    hosted = {"event": "action_start", "action": "/fix the bug", "host": "codex"}
    child = {"event": "action_start", "action": "inner step", "depth": 1}
    _under_way(tmp_path, pid=os.getpid(), extra_events=[hosted, child])
    (RUNNING / "slow-one.logs" / "1-work.log").unlink()

    lines = _status(capsys, "slow")

    assert lines[7:9] == [
        "Action: /fix the bug (on codex)",
        "Log: .loops/.running/slow-one.logs/1-work.log (nothing written yet)",
    ]


def test_a_run_whose_process_is_gone_is_interrupted_and_resumed_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = dead_pid()
    _under_way(tmp_path, pid=gone)

    lines = _status(capsys, "slow")

    assert lines[1] == f"Status: interrupted (process {gone} gone; ll-loop resume slow)"
    assert not any(line.startswith("Action: ") for line in lines)
    assert lines[-1] == "Next: ll-loop resume slow-one"


def test_a_running_state_at_a_state_without_its_action_shows_no_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Entered `done` after the action: nothing is under way."""
    entered = {"event": "state_enter", "state": "done", "iteration": 2}
    _under_way(tmp_path, pid=os.getpid(), extra_events=[entered])
    state_file = RUNNING / "slow-one.state.json"
    state_file.write_text(
        json.dumps({**json.loads(state_file.read_text()), "current_state": "done"})
    )

    lines = _status(capsys, "slow")

    assert not any(line.startswith(("Action: ", "Log: ")) for line in lines)
    assert lines[-1].startswith("Next: ll-loop watch slow-one")


def test_a_run_that_used_up_its_iterations_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "capped", CAPPED)
    assert main_loop(["capped", "-q"]) == 4
    capsys.readouterr()

    lines = _status(capsys, "capped")

    assert lines[1] == "Status: interrupted (max_iterations reached after 2 iterations)"
    assert lines[-2:] == ["Elapsed: Ns", "Next: ll-loop resume capped"]


@pytest.mark.parametrize(
    ("status", "fields", "said", "last"),
    [
        (
            "interrupted",
            {"terminated_by": "signal"},
            "Status: interrupted (stopped by ll-loop stop, Ctrl-C or a signal)",
            "Next: ll-loop resume paid",
        ),
        (
            "failed",
            {"terminated_by": "timeout", "elapsed_ms": 60_000},
            "Status: failed (the loop's timeout was reached)",
            "Elapsed: Ns",  # 1m 0s
        ),
        (
            "budget_exhausted",
            {"error": "token budget of 1000 tokens reached"},
            "Status: budget_exhausted",
            "Next: ll-loop resume paid --max-tokens <a higher budget>",
        ),
        (
            "completed",
            {"elapsed_ms": 9 * 3600_000 + 754_000},
            "Status: completed",
            "Elapsed: 9h 12m",
        ),
        # no start time to count from: no Elapsed line
        ("completed", {"started_at": "not a time"}, "Status: completed", "Updated: 20"),
    ],
)
def test_why_it_stopped_how_long_it_ran_and_what_next(
    capsys: pytest.CaptureFixture[str],
    status: str,
    fields: dict[str, object],
    said: str,
    last: str,
) -> None:
    save_state("paid", status, **fields)

    lines = _status(capsys, "paid")

    assert (lines[1], lines[-1][: len(last)]) == (said, last)
