"""Tests for `ll-loop compile` (little_loops.cli.cmd_compile), in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process

from little_loops.cli.cmd_compile import compiled_mapping, default_output_path
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.validation import load_loop

GOAL = 'paradigm: goal\ngoal: "Tests pass"\ntools: ["true", "echo fix"]\nmax_iterations: 7\n'
GOAL_FSM = """\
name: goal-tests-pass
paradigm: goal
initial: evaluate
states:
  evaluate:
    action: 'true'
    on_success: done
    on_failure: fix
  fix:
    action: echo fix
    next: evaluate
  done:
    terminal: true
max_iterations: 7
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "para").mkdir()


def _compile(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return cli_in_process(capsys, "compile", *argv)


def test_goal_compiles_to_the_reference_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    Path("para/goal.yaml").write_text(GOAL)
    assert _compile(capsys, "para/goal.yaml") == (0, "[T] Compiled to: para/goal.fsm.yaml\n", "")
    assert Path("para/goal.fsm.yaml").read_text() == GOAL_FSM


def test_yml_input_gets_fsm_yml_and_o_chooses_the_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("para/g3.yml").write_text(GOAL)
    assert _compile(capsys, "para/g3.yml") == (0, "[T] Compiled to: para/g3.fsm.yml\n", "")
    assert Path("para/g3.yml").read_text() == GOAL
    assert _compile(capsys, "para/g3.yml", "-o", "out.yaml") == (
        0,
        "[T] Compiled to: out.yaml\n",
        "",
    )
    assert Path("out.yaml").read_text() == GOAL_FSM


def test_never_overwrites_the_input(capsys: pytest.CaptureFixture[str]) -> None:
    Path("para/g.yaml").write_text(GOAL)
    assert _compile(capsys, "para/g.yaml", "--output", "./para/g.yaml") == (
        1,
        "",
        "[T] Refusing to overwrite the input file: para/g.yaml (choose another -o)\n",
    )
    assert Path("para/g.yaml").read_text() == GOAL


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("paradigm: goal\n", "Compilation error: para/x.yaml: Goal paradigm requires 'goal' field"),
        (
            "paradigm: nope\nname: x\n",
            "Compilation error: para/x.yaml: paradigm: unknown paradigm 'nope' "
            "(allowed: convergence, fsm, goal, imperative, invariants)",
        ),
        (
            "name: x\ninitial: a\nstates:\n  a:\n    action: x\n    next: a\n",
            "Compilation error: para/x.yaml: states: No terminal state defined. "
            "At least one state must have 'terminal: true'",
        ),
        (
            "a: [\n",
            "YAML parse error: para/x.yaml: YAML syntax error at line 2, column 1: "
            "expected the node content, but found '<stream end>'",
        ),
    ],
)
def test_errors_are_one_line_and_write_nothing(
    capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    Path("para/x.yaml").write_text(text)
    assert _compile(capsys, "para/x.yaml") == (1, "", f"[T] {error}\n")
    assert not Path("para/x.fsm.yaml").exists()


def test_missing_input_and_unwritable_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert _compile(capsys, "conv") == (1, "", "[T] Input file not found: conv\n")
    Path("para/g.yaml").write_text(GOAL)
    assert _compile(capsys, "para/g.yaml", "-o", "nodir/x.yaml") == (
        1,
        "",
        "[T] Cannot write nodir/x.yaml: No such file or directory\n",
    )


@pytest.mark.parametrize(
    ("name", "output"),
    [
        ("goal.yaml", "goal.fsm.yaml"),
        ("goal.yml", "goal.fsm.yml"),
        ("goal", "goal.fsm.yaml"),
        ("goal.txt", "goal.txt.fsm.yaml"),
        (".yaml", ".yaml.fsm.yaml"),
    ],
)
def test_default_output_path(name: str, output: str) -> None:
    assert default_output_path(Path("d") / name) == Path("d") / output


def test_compiled_mapping_keeps_every_field_and_round_trips(tmp_path: Path) -> None:
    fsm = FSMLoop.from_dict(
        {
            "name": "full",
            "initial": "a",
            "scope": ["src/"],
            "llm": {"model": "claude-x"},
            "on_handoff": "spawn",
            "backoff": 1.5,
            "states": {
                "a": {
                    "action": "/ll:check",
                    "evaluate": {"type": "llm_structured", "prompt": "ok?", "min_confidence": 0.8},
                    "route": {"success": "done", "_error": "a"},
                },
                "done": {"terminal": True},
            },
        }
    )
    data = compiled_mapping(fsm)
    assert list(data) == [
        "name",
        "initial",
        "states",
        "max_iterations",
        "scope",
        "backoff",
        "on_handoff",
        "llm",
    ]
    (tmp_path / "full.yaml").write_text(dump_yaml(data))
    assert load_loop(tmp_path / "full.yaml") == fsm
