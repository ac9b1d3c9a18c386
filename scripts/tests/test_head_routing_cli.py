"""HEAD routing, caps and guards through the real `ll-loop` command line, with HEAD files
read by the loader (spec/ll-head-dialect.md §2.2 `failure`, §3.3, §7.3, §7.5, §9h): what a
person sees at the end of the run, the exit code and the saved status. Loops run real
shell actions in `tmp_path`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def status(name: str) -> str:
    data = json.loads(Path(f".loops/.running/{name}.state.json").read_text())
    return str(data["status"])


GATE = """\
name: gate
description: Check once; a failed check ends at the failure terminal.
initial: check
max_steps: 5
states:
  check:
    action: "exit 1"
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_s2_2_a_head_file_ending_at_failed_exits_1_with_status_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "gate", GATE)
    code, out, err = cli_in_process(capsys, "run", "gate")
    assert (code, err) == (
        1,
        "Loop failed: failed (1 iteration, Ns) - ended at failure terminal 'failed'\n",
    )
    assert out.endswith("-> failed (Ns)\n\n")
    assert status("gate") == "failed"
    code, _, err = cli_in_process(capsys, "resume", "gate")
    assert (code, err.splitlines()[-1]) == (
        1,
        "[T] loop 'gate' failed: the run ended at the failure terminal 'failed'; "
        "start a new run with: ll-loop run gate",
    )


LEGACY_GATE = """\
name: gate
initial: check
max_iterations: 5
states:
  check:
    action: "exit 1"
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_s1_a_legacy_file_ending_at_failed_completes_with_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "gate", LEGACY_GATE)
    code, out, err = cli_in_process(capsys, "run", "gate")
    assert (code, err) == (0, "")
    assert out.endswith("Loop completed: failed (1 iteration, Ns)\n")
    assert status("gate") == "completed"


SPIN = """\
name: spin
description: Work until the step cap, then write a report.
initial: work
max_steps: 2
on_max_steps: report
states:
  work:
    action: "echo x >> work.txt"
    on_yes: $current
  report:
    action: "echo report > report.txt"
    terminal: true
"""


def test_s7_3_max_steps_with_a_summary_exits_4_and_resumes_with_more_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "spin", SPIN)
    code, out, err = cli_in_process(capsys, "run", "spin")
    assert (code, err) == (4, "")
    assert out.endswith(
        "Loop stopped: work (3 iterations, Ns) - max_steps (2) reached\n"
        "Resume with: ll-loop resume spin --max-steps 5\n"
    )
    assert (tmp_path / "report.txt").read_text() == "report\n"
    assert status("spin") == "interrupted"
    lines = Path(".loops/.running/spin.events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["summary_state"] for e in events if e["event"] == "max_steps_summary"] == ["report"]


PING_PONG = """\
name: pingpong
description: Two states that never end.
initial: ping
max_steps: 50
max_edge_revisits: 2
states:
  ping:
    action: "true"
    on_yes: pong
    on_no: done
  pong:
    next: ping
  done: {terminal: true}
"""


def test_s7_5_cycle_detected_exits_5_stalled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "pingpong", PING_PONG)
    code, _, err = cli_in_process(capsys, "run", "pingpong")
    assert (code, err) == (
        5,
        "Loop stalled: pong (5 iterations, Ns) - cycle detected: edge 'ping->pong' taken 3 "
        "times (max_edge_revisits: 2)\n"
        "Resume with: ll-loop resume pingpong (once what repeats is fixed, or after raising "
        "max_edge_revisits)\n",
    )
    assert status("pingpong") == "stalled"
