"""`ll-loop status` says where a run is and what to do next (issue 23, item 15).

Why it stopped (`interrupted (max_iterations reached after 2 iterations)`), how long it
ran, the action under way and its log, and the next command, by loop name.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from fixtures.cli_support import (
    LL_LOOP,
    cli_env,
    normalize,
    run_cli,
    save_state,
    wait_for_action_start,
    write_loop,
)

SLOW = """\
name: slow-one
initial: work
states:
  work:
    action: "echo started; sleep 30"
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


def status_of(root: Path, loop: str) -> list[str]:
    return normalize(run_cli(root, "status", loop).stdout).splitlines()


def test_a_run_under_way_shows_its_action_its_log_and_how_to_follow_or_stop_it(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "slow", SLOW)  # file stem differs from the loop's name
    runner = subprocess.Popen(
        [str(LL_LOOP), "run", "slow"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_action_start(tmp_path, "slow-one")
        log = tmp_path / ".loops/.running/slow-one.logs/1-work.log"
        for _ in range(200):  # the first output line reaches the log
            if log.exists() and log.read_text():
                break
            time.sleep(0.02)
        lines = status_of(tmp_path, "slow")
    finally:
        run_cli(tmp_path, "stop", "slow-one")
        runner.wait(timeout=30)
    assert lines[6:] == [
        "Elapsed: Ns",
        "Action: echo started; sleep 30",
        "Log: .loops/.running/slow-one.logs/1-work.log",
        "Next: ll-loop watch slow-one (follow it), ll-loop stop slow-one (stop it)",
    ]
    stopped = status_of(tmp_path, "slow")
    assert stopped[1] == "Status: interrupted (stopped by ll-loop stop, Ctrl-C or a signal)"
    assert stopped[-1] == "Next: ll-loop resume slow-one"


def test_a_run_that_used_up_its_iterations_says_so(tmp_path: Path) -> None:
    write_loop(tmp_path, "capped", CAPPED)
    run_cli(tmp_path, "run", "capped")
    lines = status_of(tmp_path, "capped")
    assert lines[1] == "Status: interrupted (max_iterations reached after 2 iterations)"
    assert lines[-2:] == ["Elapsed: Ns", "Next: ll-loop resume capped"]


@pytest.mark.parametrize(
    ("status", "fields", "last"),
    [
        ("budget_exhausted", {}, "Next: ll-loop resume paid --max-cost <a higher budget>"),
        ("awaiting_continuation", {}, "Continuation context: (no prompt)"),
        ("awaiting_continuation", {"continuation_prompt": "go"}, "Continuation context: go"),
        ("interrupted", {}, "Next: ll-loop resume paid"),
        ("failed", {"terminated_by": "timeout", "elapsed_ms": 60_000}, "Elapsed: 1m 0s"),
        ("completed", {"elapsed_ms": 61_000}, "Elapsed: 1m 1s"),
        ("completed", {"elapsed_ms": 9 * 3600_000 + 754_000}, "Elapsed: 9h 12m"),
    ],
)
def test_the_next_command_fits_the_status(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: str,
    fields: dict[str, object],
    last: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    save_state("paid", status, **fields)
    lines = run_cli(tmp_path, "status", "paid").stdout.splitlines()
    assert lines[-1] == last
    if fields.get("terminated_by") == "timeout":
        assert lines[1] == "Status: failed (the loop's timeout was reached)"
