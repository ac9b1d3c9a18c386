"""The Temporal worker's side of HEAD evaluation and prompt actions (spec/ll-head-dialect.md
§3.2 stall evaluators through the driver, §2.2 prompt flags and idle timeout): the
`ll-loop.judge` and `ll-loop.run_action` activities, run in temporalio's
`ActivityEnvironment` (no server), build a HEAD loop as HEAD and serve what the run core
asks. The workflow carries the loop's dialect in `RunInput`/`JudgeInput`."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from little_loops.fsm.engine.head_judging import settle
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig, loop_from_dict
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.temporal.activities import judge, run_action
from little_loops.fsm.temporal.payloads import ActionInput, JudgeInput

STATES: dict[str, Any] = {
    "work": {
        "action": "true",
        "evaluate": {"type": "diff_stall"},
        "route": {"yes": "work", "no": "done"},
    },
    "done": {"terminal": True},
}


def head_loop() -> HeadLoop:
    return HeadLoop.from_dict({"name": "demo", "initial": "work", "states": STATES})


def activity(fn: Any, arg: Any) -> Any:
    return asyncio.run(ActivityEnvironment().run(fn, arg))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with one changed tracked file, as the worker's directory."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.txt"], check=True)
    commit = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*commit, "commit", "-qm", "one"], check=True)
    (tmp_path / "a.txt").write_text("two\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_s1_a_head_loop_carried_as_data_is_built_again_as_head() -> None:
    data = head_loop().to_dict()
    assert loop_from_dict(data, "head") == head_loop()
    assert isinstance(loop_from_dict(data, "legacy"), FSMLoop)
    assert not isinstance(loop_from_dict(data, "legacy").states["work"], HeadStateConfig)


def test_s3_2_the_judge_activity_reads_the_diff_and_the_core_settles_it(repo: Path) -> None:
    request = JudgeInput(
        loop=head_loop().to_dict(),
        state="work",
        ctx={},
        action=ActionResult(output="", stderr="", exit_code=0, duration_ms=1),
        slash=False,
        checkout=str(repo),
        dialect="head",
    )
    verdict, details, spending = activity(judge, request)
    stat = " a.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
    assert (verdict, details, spending) == ("yes", {"observed": stat}, None)
    memory = HeadMemory()
    state = head_loop().states["work"]
    assert isinstance(state, HeadStateConfig)
    first = settle(state, "work", memory, (verdict, details))
    again = settle(state, "work", memory, (verdict, dict(details)))
    assert first == ("yes", {"stall_count": 0, "max_stall": 1, "snapshot": True})
    assert again == ("no", {"stall_count": 1, "max_stall": 1})
    assert memory.evaluator_memory == {"work": {"last_stat": stat, "count": 1}}


def test_s3_2_a_legacy_judge_input_stays_legacy(repo: Path) -> None:
    legacy = {
        "name": "demo",
        "initial": "work",
        "states": {
            "work": {"action": "true", "evaluate": {"type": "output_contains", "pattern": "ok"}},
        },
    }
    request = JudgeInput(
        loop=legacy,
        state="work",
        ctx={},
        action=ActionResult(output="ok", stderr="", exit_code=0, duration_ms=1),
        slash=False,
        checkout=str(repo),
    )
    verdict, _, _ = activity(judge, request)
    assert verdict == "success"


def test_s2_2_the_action_activity_passes_claude_flags_and_the_idle_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    claude.write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    claude.chmod(0o755)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(claude))
    request = ActionInput(
        action="Review",
        timeout=30,
        slash=True,
        checkout=str(tmp_path),
        claude_flags=["--agent", "reviewer"],
    )
    output = activity(run_action, request)
    assert output.result.output.splitlines()[-4:] == ["--agent", "reviewer", "-p", "Review"]
    quiet = ActionInput(action="sleep 5", timeout=30, slash=False, checkout=str(tmp_path))
    quiet.idle_timeout = 0.5
    result = activity(run_action, quiet).result
    assert (result.exit_code, result.timeout_kind) == (124, "idle")
