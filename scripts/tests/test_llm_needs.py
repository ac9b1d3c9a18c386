"""A loop the LLM judges is refused before it runs when the `llm` extra is missing
(issue 23, item 8): before, `claude` ran (and was billed) and only its judgement failed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.cli_support import (
    cli_env,
    normalize,
    run_cli,
    save_state,
    write_loop,
)

from little_loops.fsm.judging.llm_needs import llm_judged_states
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

SLASH = """\
name: fixer
initial: fix
states:
  fix:
    action: /ll:fix the tests
    on_success: done
    on_failure: fix
  done:
    terminal: true
"""


def legacy(states: dict[str, object], **loop: object) -> FSMLoop:
    return FSMLoop.from_dict({"name": "x", "initial": "a", "states": states, **loop})


TERMINAL = {"done": {"terminal": True}}


@pytest.mark.parametrize(
    ("fsm", "judged"),
    [
        (legacy({"a": {"action": "/ll:fix", "on_success": "done"}, **TERMINAL}), ["a"]),
        (legacy({"a": {"action": "make", "on_success": "done"}, **TERMINAL}), []),
        (legacy({"a": {"action": "/usr/bin/env true", "on_success": "done"}, **TERMINAL}), []),
        (legacy({"a": {"action": "/ll:fix", "next": "done"}, **TERMINAL}), []),
        (
            legacy(
                {
                    "a": {
                        "action": "make",
                        "evaluate": {"type": "llm_structured"},
                        "on_success": "done",
                    },
                    **TERMINAL,
                }
            ),
            ["a"],
        ),
        (
            legacy(
                {"a": {"action": "/ll:fix", "on_success": "done"}, **TERMINAL},
                llm={"enabled": False},
            ),
            [],
        ),
        (
            legacy(
                {
                    "a": {
                        "action": "/ll:fix",
                        "evaluate": {"type": "exit_code"},
                        "on_success": "done",
                    },
                    **TERMINAL,
                }
            ),
            [],
        ),
        (
            HeadLoop.from_dict(
                {
                    "name": "h",
                    "initial": "a",
                    "states": {
                        "a": {"action": "Fix it", "action_type": "prompt", "on_yes": "done"},
                        **TERMINAL,
                    },
                }
            ),
            ["a"],
        ),
    ],
)
def test_the_states_the_llm_judges(fsm: FSMLoop, judged: list[str]) -> None:
    assert llm_judged_states(fsm) == judged


def without_anthropic(root: Path) -> dict[str, str]:
    """The environment of an `ll-loop` whose Python cannot import `anthropic`."""
    blocker = root / "no-anthropic"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text('import sys\nsys.modules["anthropic"] = None\n')
    env = cli_env(root)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    return env


MESSAGE = (
    "  state 'fix' is judged by the LLM, but the anthropic package is not installed: "
    'pip install -e ".[llm]", or run with --no-llm'
)


def test_validate_refuses_a_loop_the_llm_judges_without_the_sdk(tmp_path: Path) -> None:
    write_loop(tmp_path, "fixer", SLASH)
    done = run_cli(tmp_path, "validate", "fixer", env=without_anthropic(tmp_path))
    assert (done.returncode, normalize(done.stderr).splitlines()) == (
        1,
        ["[T] fixer is invalid:", MESSAGE],
    )
    assert run_cli(tmp_path, "validate", "fixer").returncode == 0  # with the SDK


def test_run_is_refused_before_claude_runs_without_the_sdk(tmp_path: Path) -> None:
    """The fake `claude` records each call: none is made."""
    write_loop(tmp_path, "fixer", SLASH)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f'#!/bin/sh\necho called >> "{tmp_path / "claude-calls.log"}"\n')
    claude.chmod(0o755)
    env = without_anthropic(tmp_path)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = run_cli(tmp_path, "run", "fixer", env=env)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (
        1,
        "",
        ["Cannot run fixer: " + MESSAGE.strip()],
    )
    assert not (tmp_path / "claude-calls.log").exists()
    assert not (tmp_path / ".loops/.running/fixer.state.json").exists()
    no_llm = run_cli(tmp_path, "run", "fixer", "--no-llm", "-n", "1", env=env)
    assert "Cannot run" not in no_llm.stderr  # --no-llm: the run starts


def test_resume_is_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_loop(tmp_path, "fixer", SLASH)
    monkeypatch.chdir(tmp_path)
    save_state("fixer", "interrupted", current_state="fix")
    done = run_cli(tmp_path, "resume", "fixer", env=without_anthropic(tmp_path))
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        ["Cannot run fixer: " + MESSAGE.strip()],
    )
