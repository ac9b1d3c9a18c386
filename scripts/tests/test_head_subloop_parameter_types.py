"""A sub-loop's parameters are checked by the same reader as the run's own inputs
(spec/ll-head-dialect.md §4.2, §9d): `model.parameter_types.type_problem`, so a value the
command line refuses is refused in `with:` too, in the same words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_parts import ParameterSpec
from little_loops.fsm.model.parameter_types import type_problem

RATIO_CHILD = """\
name: ratio
initial: work
parameters:
  ratio: {type: number}
states:
  work:
    action: "printf '%s' '${context.ratio}'"
    capture: out
    next: done
  done:
    terminal: true
"""


def run_parent(root: Path, ratio: Any) -> dict[str, Any]:
    (root / ".loops").mkdir()
    (root / ".loops/ratio.yaml").write_text(RATIO_CHILD)
    parent = HeadLoop.from_dict(
        {
            "name": "parent",
            "initial": "go",
            "states": {
                "go": {
                    "loop": "ratio",
                    "with": {"ratio": ratio},
                    "on_yes": "done",
                    "on_error": "refused",
                },
                "done": {"terminal": True},
                "refused": {"terminal": True},
            },
        }
    )
    executor = FSMExecutor(parent)
    executor.guards.loops_dir = root / ".loops"
    result = executor.run()
    return {"final": result.final_state, "go": result.captured["go"]}


def test_s9d_a_number_that_is_not_finite_is_refused_as_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    problem = type_problem(ParameterSpec(type="number"), "nan")
    assert problem == "must be a number, got 'nan'"
    assert run_parent(tmp_path, "nan") == {
        "final": "refused",
        "go": {
            "terminated_by": "error",
            "error": f"Sub-loop 'ratio' parameter 'ratio' {problem}",
        },
    }


def test_s9d_a_number_given_as_text_is_passed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = run_parent(tmp_path, "0.5")
    assert (outcome["final"], outcome["go"]["out"]["output"]) == ("done", "0.5")
