"""`effort` in the live display's state header (spec/ll-head-dialect.md §2.2 `effort`:
"shown in the state header and action_complete events only"): a HEAD prompt state that
sets it shows `(effort: <value>)` after its name; other states and legacy loops do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_in_process, install_fake_claude, normalize, write_loop

from little_loops.cli.display import ProgressDisplay
from little_loops.cli.state_efforts import state_efforts
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

STATES: dict[str, Any] = {
    "review": {"action": "Review it", "action_type": "prompt", "effort": "high", "next": "slash"},
    "slash": {"action": "/ll:check", "effort": "low", "next": "shell"},
    "shell": {"action": "echo hi", "effort": "max", "next": "plain"},
    "plain": {"action": "Plain", "action_type": "prompt", "next": "done"},
    "done": {"terminal": True},
}


def test_s2_2_only_head_prompt_states_with_an_effort_are_marked() -> None:
    loop = HeadLoop.from_dict({"name": "x", "initial": "review", "states": STATES})
    assert state_efforts(loop) == {"review": "high", "slash": "low"}
    legacy = FSMLoop.from_dict(
        {"name": "x", "initial": "a", "states": {"a": {"action": "/ll:x", "next": "a"}}}
    )
    assert state_efforts(legacy) == {}


def test_s2_2_the_state_header_shows_the_effort(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=5, efforts={"review": "high"})
    for state, iteration in (("review", 1), ("plain", 2)):
        display({"event": "state_enter", "state": state, "iteration": iteration})
        display({"event": "action_start", "action": "Review it"})
        display({"event": "action_complete", "exit_code": 0, "duration_ms": 3})
        display({"event": "route", "from": state, "to": "done"})
    assert normalize(capsys.readouterr().out) == (
        "[1/5] review (effort: high) -> Review it\n"
        "       -> done (Ns)\n"
        "[2/5] plain -> Review it\n"
        "       -> done (Ns)\n"
    )


REVIEW = """\
name: review
description: One prompt state with an effort.
initial: review
states:
  review:
    action: "Review the change"
    action_type: prompt
    effort: high
    next: done
  done:
    terminal: true
"""


def test_s2_2_ll_loop_run_shows_the_effort_in_the_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    bin_dir = install_fake_claude(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    write_loop(tmp_path, "review", REVIEW)
    code, out, err = cli_in_process(capsys, "run", "review", "--no-llm")
    assert (code, err) == (0, "")
    assert "[1/50] review (effort: high) -> Review the change\n" in out
