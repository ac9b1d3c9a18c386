"""A HEAD loop's run inputs (spec/ll-head-dialect.md §2.5 Positional input, Missing context,
Overrides, Injected context; §9d parameters on a loop run on its own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import SIMPLE_LOOP, run_cli, write_loop

from little_loops.cli.cmd_run import RunOptions, apply_overrides
from little_loops.cli.loop_inputs import RunInputError, apply_run_inputs, positional_values
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_parts import ParameterSpec
from little_loops.fsm.model.parameter_types import type_problem
from little_loops.fsm.persistence import PersistentExecutor, StatePersistence
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.run_dir import run_dir_context

DONE = {"terminal": True}


def head_loop(states: dict[str, Any] | None = None, **top: Any) -> HeadLoop:
    states = states or {"a": {"action": "echo ${context.input}", "next": "done"}, "done": DONE}
    return HeadLoop.from_dict({"name": "h", "initial": "a", "states": states, **top})


def problems(loop: HeadLoop, positional: str | None = None, **given: str) -> list[str]:
    with pytest.raises(RunInputError) as caught:
        apply_run_inputs(loop, positional=positional, given=given)
    return caught.value.user_lines()


# --- positional input and precedence (§2.5) ---------------------------------------------------


def test_section_2_5_positional_input_goes_to_input_key() -> None:
    loop = head_loop(input_key="topic", context={"topic": "old"})
    assert positional_values(loop, "new") == {"topic": "new"}
    assert positional_values(loop, "[1, 2]") == {"topic": "[1, 2]"}
    assert positional_values(loop, '{"other": 1}') == {"topic": '{"other": 1}'}


def test_section_2_5_positional_json_object_updates_only_known_keys() -> None:
    loop = head_loop(context={"a": "1", "b": "2", "input": ""})
    assert positional_values(loop, '{"a": "x", "zzz": 3}') == {"a": "x"}
    assert positional_values(loop, '{"a": 5, "b": [true]}') == {"a": "5", "b": "[true]"}


def test_section_2_5_precedence_context_over_positional_over_file() -> None:
    loop = head_loop(context={"input": "file", "input2": "file"})
    kept = apply_run_inputs(
        loop, positional='{"input": "pos", "input2": "pos"}', given={"input": "cli"}
    )
    assert kept == {"input": "cli", "input2": "pos"}
    assert loop.context == {"input": "cli", "input2": "pos"}


def test_section_2_5_required_inputs_message() -> None:
    loop = head_loop(required_inputs=["input"], context={"input": ""})
    assert problems(loop) == [
        "loop 'h' requires input 'input' but none was provided. Pass it via: ll-loop run h <value>"
    ]
    assert apply_run_inputs(loop, positional="given", given={}) == {"input": "given"}


def test_section_2_5_missing_context_keys_one_line_each() -> None:
    states = {
        "a": {"action": "echo ${context.input} ${context.x?} ${context.y:default=1}", "next": "b"},
        "b": {
            "action": "echo ${context.deep.key} ${context.max_steps} ${context.run_dir}",
            "evaluate": {"type": "llm_structured", "prompt": "Is ${context.goal} met?"},
            "on_success": "done",
        },
        "done": DONE,
    }
    loop = head_loop(states, context={"deep": {}})
    assert problems(loop) == [
        "loop 'h' needs context key 'input' (states.a.action): pass --context input=VALUE",
        "loop 'h' needs context key 'deep.key' (states.b.action): pass --context deep.key=VALUE",
        "loop 'h' needs context key 'goal' (states.b.evaluate.prompt): pass --context goal=VALUE",
    ]


# --- parameters (§9d) ---------------------------------------------------------------------


def test_section_9d_parameter_defaults_over_file_context_and_caller_over_default() -> None:
    params = {"level": {"type": "integer", "default": 3}, "mode": {"type": "string"}}
    loop = head_loop(parameters=params, context={"level": 9, "mode": "file", "input": "i"})
    apply_run_inputs(loop, positional=None, given={})
    assert (loop.context["level"], loop.context["mode"]) == (3, "file")
    again = head_loop(parameters=params, context={"level": 9, "input": "i"})
    apply_run_inputs(again, positional=None, given={"level": "6"})
    assert again.context["level"] == "6"  # passed unchanged


def test_section_9d_required_parameter_must_come_from_the_caller() -> None:
    params = {"target": {"type": "string", "required": True}}
    loop = head_loop(parameters=params, context={"target": "from-file", "input": "i"})
    assert problems(loop) == [
        "loop 'h' requires parameter 'target' but none was provided. "
        "Pass it via: ll-loop run h --context target=VALUE"
    ]
    ok = head_loop(parameters={"input": {"type": "string", "required": True}})
    assert apply_run_inputs(ok, positional="by position", given={}) == {"input": "by position"}
    injected = head_loop(parameters={"max_steps": {"type": "integer", "required": True}})
    apply_run_inputs(injected, positional="i", given={})  # an injected key counts


def test_section_9d_parameter_types_read_from_text() -> None:
    params = {
        "n": {"type": "integer"},
        "ok": {"type": "boolean"},
        "kind": {"type": "enum", "values": ["a", "b"]},
    }
    loop = head_loop(parameters=params, context={"input": "i"})
    assert problems(loop, n="true", ok="yes", kind="c") == [
        "loop 'h': parameter 'n' must be an integer, got 'true'",
        "loop 'h': parameter 'ok' must be a boolean, got 'yes'",
        "loop 'h': parameter 'kind' must be one of a, b, got 'c'",
    ]
    assert type_problem(ParameterSpec("integer"), "6") is None
    assert type_problem(ParameterSpec("integer"), True) == "must be an integer, got True"
    assert type_problem(ParameterSpec("number"), "2.5") is None
    assert type_problem(ParameterSpec("number"), "nan") == "must be a number, got 'nan'"
    assert type_problem(ParameterSpec("path"), 3) is None


# --- caps (§2.5 Overrides) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("top", "options", "caps"),
    [
        ({}, RunOptions(max_iterations=7), (7, None)),
        ({"max_steps": 20}, RunOptions(max_iterations=7), (20, 7)),
        ({"max_iterations": 4}, RunOptions(max_iterations=7), (7, None)),
        ({}, RunOptions(max_steps=9), (9, None)),
        ({}, RunOptions(max_steps=9, max_iterations=2), (9, 2)),
    ],
)
def test_section_2_5_max_steps_and_head_max_iterations(
    top: dict[str, Any], options: RunOptions, caps: tuple[int, int | None]
) -> None:
    loop = head_loop(**top)
    apply_overrides(loop, options)
    assert (loop.max_steps, loop.max_passes) == caps


def test_section_2_5_legacy_max_steps_is_its_max_iterations() -> None:
    loop = FSMLoop.from_dict({"name": "l", "initial": "a", "states": {"a": DONE}})
    apply_overrides(loop, RunOptions(max_steps=9))
    assert loop.max_iterations == 9
    apply_overrides(loop, RunOptions(max_iterations=3))
    assert loop.max_iterations == 3


# --- run_dir (§2.5 Injected context) --------------------------------------------------------


def test_section_2_5_run_dir_created_before_the_first_state_and_kept_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    states = {
        "a": {
            "action": 'test -d "${context.run_dir}" && echo "${context.run_dir}"',
            "capture": "c",
            "next": "done",
        },
        "done": DONE,
    }
    loop = head_loop(states)
    persistence = StatePersistence("h", Path(".loops"))
    result = PersistentExecutor(loop, persistence).run()
    run_dir = result.captured["c"]["output"]
    assert run_dir.startswith(".loops/runs/h-") and run_dir.endswith("/")
    saved = json.loads(Path(".loops/.running/h.state.json").read_text())
    assert saved["head"]["run_dir"] == run_dir
    assert [p.name for p in Path(".loops/runs").iterdir()] == [run_dir.split("/")[-2]]


def test_section_2_5_no_run_dir_for_legacy_or_when_context_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    legacy = FSMLoop.from_dict(
        {
            "name": "l",
            "initial": "a",
            "states": {"a": {"action": "true", "next": "done"}, "done": DONE},
        }
    )
    PersistentExecutor(legacy, StatePersistence("l", Path(".loops"))).run()
    own = head_loop(
        {"a": {"action": "true", "next": "done"}, "done": DONE}, context={"run_dir": "x/"}
    )
    PersistentExecutor(own, StatePersistence("h", Path(".loops"))).run()
    assert not Path(".loops/runs").exists()
    assert "head" not in json.loads(Path(".loops/.running/l.state.json").read_text())


# --- legacy files take no positional input -----------------------------------------------------


def test_legacy_loop_refuses_a_positional_input(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    done = run_cli(tmp_path, "run", "simple", "some input")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ll-loop run: error: unrecognized arguments: some input (simple is a legacy loop "
        "file: it takes no positional input; use --context KEY=VALUE)\n"
    )
    assert not (tmp_path / ".loops" / ".running").exists()


# --- real `ll-loop` processes on HEAD files -----------------------------------------------

GREET = """\
name: greet
description: Say hello.
input_key: who
required_inputs: [who]
parameters:
  times: {type: integer, default: 2}
initial: hi
states:
  hi:
    action: "echo hello ${context.who} x${context.times} ${context.extra:default=none}"
    on_yes: done
    on_no: done
  done: {terminal: true}
"""


def _stderr_lines(done: Any) -> list[str]:
    return [line.split("] ", 1)[1] for line in done.stderr.splitlines()]


def test_section_2_5_run_with_positional_input(tmp_path: Path) -> None:
    write_loop(tmp_path, "greet", GREET)
    done = run_cli(tmp_path, "run", "greet", "world", "-v")
    assert done.returncode == 0, done.stderr
    assert "| hello world x2 none\n" in done.stdout
    after_flags = run_cli(tmp_path, "run", "greet", "-v", "--max-steps", "3", "flagged")
    assert "| hello flagged x2 none\n" in after_flags.stdout
    assert "Max steps: 3\n" in after_flags.stdout
    again = run_cli(
        tmp_path, "greet", "world", "--context", "who=cli", "--context", "times=5", "-v"
    )
    assert "| hello cli x5 none\n" in again.stdout


def test_section_2_5_run_refuses_missing_inputs_before_starting(tmp_path: Path) -> None:
    write_loop(tmp_path, "greet", GREET)
    done = run_cli(tmp_path, "run", "greet")
    assert (done.returncode, done.stdout) == (1, "")
    assert _stderr_lines(done) == [
        "loop 'greet' requires input 'who' but none was provided. "
        "Pass it via: ll-loop run greet <value>"
    ]
    bad = run_cli(tmp_path, "run", "greet", "x", "--context", "times=lots")
    assert _stderr_lines(bad) == ["loop 'greet': parameter 'times' must be an integer, got 'lots'"]
    assert not (tmp_path / ".loops" / ".running").exists()


def test_section_2_5_missing_context_key_names_the_flag(tmp_path: Path) -> None:
    nested = tmp_path / ".loops" / "gates"
    nested.mkdir(parents=True)
    (nested / "lint.yaml").write_text(
        "name: lint\ndescription: Lint.\ninitial: a\nstates:\n"
        "  a: {action: 'echo ${context.target} ${context.max_steps}', next: done}\n"
        "  done: {terminal: true}\n"
    )
    done = run_cli(tmp_path, "run", "gates/lint")
    assert done.returncode == 1
    assert _stderr_lines(done) == [
        "loop 'lint' needs context key 'target' (states.a.action): pass --context target=VALUE"
    ]
    ok = run_cli(tmp_path, "run", "gates/lint", "--context", "target=src", "-v")
    assert (ok.returncode, "| src 50\n" in ok.stdout) == (0, True)


def test_section_2_5_run_dir_is_kept_across_resume(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        "paused",
        """\
name: paused
description: Hands off once, then finds its run_dir again.
initial: step
states:
  step:
    action: >-
      if [ -f "${context.run_dir}mark" ]; then echo "same ${context.run_dir}";
      else touch "${context.run_dir}mark"; echo "CONTEXT_HANDOFF: go on"; fi
    capture: out
    on_yes: done
    on_no: done
  done: {terminal: true}
""",
    )
    first = run_cli(tmp_path, "run", "paused")
    assert first.returncode == 3, first.stderr  # paused at the handoff
    state = json.loads((tmp_path / ".loops/.running/paused.state.json").read_text())
    run_dir = state["head"]["run_dir"]
    assert state["status"] == "awaiting_continuation"
    resumed = run_cli(tmp_path, "resume", "paused", "-v")
    assert resumed.returncode == 0, resumed.stderr
    assert f"| same {run_dir}\n" in resumed.stdout
    assert len(list((tmp_path / ".loops" / "runs").iterdir())) == 1


def test_section_2_5_run_dir_as_context_for_a_driver_without_head_memory(
    tmp_path: Path,
) -> None:
    values = run_dir_context(head_loop(), tmp_path / ".loops")
    assert list(values) == ["run_dir"]
    assert values["run_dir"].startswith(f"{tmp_path}/.loops/runs/h-")
    assert Path(values["run_dir"]).is_dir()
    assert run_dir_context(head_loop(context={"run_dir": "mine/"}), tmp_path) == {}
    legacy = FSMLoop.from_dict({"name": "l", "initial": "a", "states": {"a": DONE}})
    assert run_dir_context(legacy, tmp_path) == {}


def test_section_2_5_json_input_is_kept_for_resume(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        "counted",
        """\
name: counted
description: Pauses once.
context: {n: 1}
initial: step
states:
  step:
    action: >-
      if [ -f mark ]; then echo "n=${context.n}"; else touch mark;
      echo "CONTEXT_HANDOFF: go on"; fi
    on_yes: done
    on_no: done
  done: {terminal: true}
""",
    )
    assert run_cli(tmp_path, "run", "counted", '{"n": 7}').returncode == 3
    resumed = run_cli(tmp_path, "resume", "counted", "-v")
    assert resumed.returncode == 0, resumed.stderr
    assert "| n=7\n" in resumed.stdout


NEEDS_TOPIC = """\
name: needs
description: Needs a topic.
initial: s
input_key: topic
required_inputs: [topic]
states:
  s: {action: "echo ${context.topic}", next: done}
  done: {terminal: true}
"""


def test_resume_says_the_state_file_is_damaged_before_asking_for_inputs(tmp_path: Path) -> None:
    """A resume whose state file cannot be used, or is missing, says so; it does not ask
    for a required input the run's own file would have given."""
    write_loop(tmp_path, "needs", NEEDS_TOPIC)
    assert run_cli(tmp_path, "run", "needs", "hello").returncode == 0
    state_file = tmp_path / ".loops/.running/needs.state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**state, "status": "interrupted", "head": [1]}))

    damaged = run_cli(tmp_path, "resume", "needs")

    assert damaged.returncode == 1
    assert "damaged state file: 'head' must be an object or null, got an array" in damaged.stderr
    assert "requires input" not in damaged.stderr
    state_file.unlink()
    missing = run_cli(tmp_path, "resume", "needs")
    assert (missing.returncode, missing.stderr.split("] ", 1)[-1]) == (
        1,
        "Nothing to resume for: needs\n",
    )
