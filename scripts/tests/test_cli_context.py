"""`ll-loop run --context KEY=VALUE`: set `${context.KEY}` for one run; `resume` keeps it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fixtures.cli_support import run_cli, write_loop

from little_loops.fsm.loading.context_overrides import parse_assignment, with_context_overrides
from little_loops.fsm.persistence import LoopState, PersistentExecutor, StatePersistence
from little_loops.fsm.schema import FSMLoop

# Writes what it saw to seen.txt; hands off once, so the run can be resumed.
CTX_LOOP = """\
name: ctx
initial: greet
context:
  who: file
states:
  greet:
    action: >-
      echo "${context.who} ${context.extra}" >> seen.txt;
      if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF: again"; fi
    next: done
  done:
    terminal: true
"""


def seen(root: Path) -> list[str]:
    return (root / "seen.txt").read_text().splitlines()


def state_of(root: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (root / ".loops" / ".running" / "ctx.state.json").read_text()
    )
    return loaded


def test_context_overrides_the_file_and_defines_new_keys(tmp_path: Path) -> None:
    write_loop(tmp_path, "ctx", CTX_LOOP)

    done = run_cli(tmp_path, "run", "ctx", "--context", "who=cli", "--context", "extra=a b=c")

    assert done.returncode == 3, done.stderr
    assert seen(tmp_path) == ["cli a b=c"]
    assert state_of(tmp_path)["context_overrides"] == {"who": "cli", "extra": "a b=c"}


def test_resume_keeps_the_run_context(tmp_path: Path) -> None:
    write_loop(tmp_path, "ctx", CTX_LOOP)
    assert run_cli(tmp_path, "run", "ctx", "--context", "extra=X").returncode == 3

    resumed = run_cli(tmp_path, "resume", "ctx")

    assert resumed.returncode == 0, resumed.stderr
    assert seen(tmp_path) == ["file X", "file X"]


def test_a_key_only_the_command_line_defines_is_refused_without_it(tmp_path: Path) -> None:
    """`validate` (and a run without the value) still report the undefined key."""
    write_loop(tmp_path, "ctx", CTX_LOOP)

    ran = run_cli(tmp_path, "run", "ctx")
    validated = run_cli(tmp_path, "validate", "ctx")

    message = "states.greet.action: ${context.extra}: the loop has no context key 'extra'"
    assert ran.returncode == 1
    assert message in ran.stderr
    assert validated.returncode == 1
    assert message in validated.stderr
    assert not (tmp_path / "seen.txt").exists()


def test_a_later_run_does_not_inherit_the_context(tmp_path: Path) -> None:
    write_loop(tmp_path, "ctx", CTX_LOOP)
    assert (
        run_cli(tmp_path, "run", "ctx", "--context", "extra=1", "--context", "who=x").returncode
        == 3
    )

    again = run_cli(tmp_path, "run", "ctx", "--context", "extra=2")

    assert again.returncode == 3, again.stderr
    assert seen(tmp_path) == ["x 1", "file 2"]
    assert state_of(tmp_path)["context_overrides"] == {"extra": "2"}


def test_background_run_gets_the_context(tmp_path: Path) -> None:
    write_loop(tmp_path, "ctx", CTX_LOOP)

    started = run_cli(tmp_path, "run", "ctx", "--background", "--context", "extra=bg")

    assert started.returncode == 0, started.stderr
    deadline = time.monotonic() + 20
    while not (tmp_path / "seen.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen(tmp_path) == ["file bg"]


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("foo", "argument --context: expected KEY=VALUE, got 'foo'"),
        ("a.b=1", "argument --context: 'a.b' is not a context key"),
        ("=1", "argument --context: '' is not a context key"),
    ],
)
def test_bad_context_is_a_one_line_usage_error(tmp_path: Path, argument: str, message: str) -> None:
    write_loop(tmp_path, "ctx", CTX_LOOP)

    done = run_cli(tmp_path, "run", "ctx", "--context", argument)

    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ll-loop run: error: {message}")
    assert "Traceback" not in done.stderr


def test_parse_assignment_splits_at_the_first_equals() -> None:
    assert parse_assignment("k=v=w") == ("k", "v=w")
    assert parse_assignment("my-key=") == ("my-key", "")


def test_overrides_leave_a_context_that_is_not_a_mapping_to_the_shape_check() -> None:
    data = {"context": ["not", "a", "mapping"]}

    assert with_context_overrides(data, {"k": "v"}) is data
    assert with_context_overrides({}, {"k": "v"}) == {"context": {"k": "v"}}


# --- the state file ---------------------------------------------------------------------------


def test_state_files_without_context_overrides_still_load() -> None:
    state = LoopState.from_dict(
        {
            "loop_name": "x",
            "current_state": "a",
            "iteration": 1,
            "started_at": "2026-01-01T00:00:00+00:00",
            "status": "interrupted",
        }
    )

    assert state.context_overrides == {}
    assert "context_overrides" not in state.to_dict()


def test_context_overrides_that_are_not_strings_are_refused() -> None:
    with pytest.raises(ValueError, match="'context_overrides' must be an object of strings"):
        LoopState.from_dict(
            {
                "loop_name": "x",
                "current_state": "a",
                "iteration": 1,
                "started_at": "t",
                "status": "interrupted",
                "context_overrides": {"k": 1},
            }
        )


def test_persistent_executor_resume_restores_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the library too: the saved values are back in `fsm.context`."""
    monkeypatch.chdir(tmp_path)
    persistence = StatePersistence("lib", tmp_path)
    persistence.initialize()
    persistence.save_state(
        LoopState(
            "lib",
            "a",
            0,
            {},
            None,
            None,
            "2026-01-01T00:00:00+00:00",
            "",
            "interrupted",
            context_overrides={"k": "saved"},
        )
    )
    fsm = FSMLoop.from_dict(
        {
            "name": "lib",
            "initial": "a",
            "context": {"k": "file"},
            "states": {
                "a": {"action": "echo ${context.k} > out.txt", "next": "b"},
                "b": {"terminal": True},
            },
        }
    )
    executor = PersistentExecutor(fsm, persistence)

    result = executor.resume_checked()

    assert result.final_state == "b"
    assert fsm.context == {"k": "saved"}
    assert (tmp_path / "out.txt").read_text() == "saved\n"
    assert persistence.load_state_checked().context_overrides == {"k": "saved"}  # type: ignore[union-attr]
