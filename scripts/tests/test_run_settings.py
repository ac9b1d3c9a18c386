"""Run settings as one value (issue 22 item 4): `RunSettings`, built once by the CLI and
given to the executor at construction, applied to a COPY of the loop; the one rule for what
a resume keeps (`RunSettings.resumed`). Specs: ll-loop-cli.md `run`/`resume` flags
(`-n`, `--max-steps`, `--max-continuations`, `--no-llm`, `--llm-model`, `--stall-threshold`,
`--max-cost`, `--notify`); ll-head-dialect.md §2.5 (the HEAD step and pass caps)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from little_loops.cli.cmd_run import RunOptions, apply_overrides
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.run_choices import RunChoices
from little_loops.fsm.model.run_settings import NO_SETTINGS, RunSettings
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.schema import FSMLoop

EVERY_SETTING = RunSettings(
    max_iterations=3,
    max_continuations=7,
    choices=RunChoices(no_llm=True, llm_model="claude-x"),
    stall_threshold=0,
    max_cost_usd=2.5,
    notify="",
)


def legacy(**top: Any) -> FSMLoop:
    states = {"a": {"action": "true", "next": "a"}}
    return FSMLoop.from_dict({"name": "demo", "initial": "a", "states": states, **top})


def head(**top: Any) -> HeadLoop:
    states = {"a": {"action": "true", "next": "done"}, "done": {"terminal": True}}
    return HeadLoop.from_dict({"name": "demo", "initial": "a", "states": states, **top})


def test_settings_are_applied_to_a_copy_and_the_loaded_loop_is_left_as_it_was() -> None:
    loaded = legacy(notify="echo hi", max_cost_usd=9.0)
    before = loaded.to_dict()
    loop = EVERY_SETTING.applied_to(loaded)
    assert loop is not loaded
    assert loaded.to_dict() == before
    assert (
        loop.max_iterations,
        loop.max_continuations,
        loop.llm.enabled,
        loop.llm.model,
        loop.stall_threshold,
        loop.max_cost_usd,
        loop.notify,
    ) == (3, 7, False, "claude-x", 0, 2.5, None)


def test_no_settings_give_an_equal_copy() -> None:
    loaded = head(max_steps=20, max_iterations=4)
    assert NO_SETTINGS.applied_to(loaded) == loaded
    assert isinstance(NO_SETTINGS.applied_to(loaded), HeadLoop)


@pytest.mark.parametrize(
    ("top", "settings", "caps"),
    [
        ({}, RunSettings(max_iterations=7), (7, None)),
        ({"max_steps": 20}, RunSettings(max_iterations=7), (20, 7)),
        ({}, RunSettings(max_steps=9, max_iterations=2), (9, 2)),
    ],
)
def test_section_2_5_head_caps_on_a_copy(
    top: dict[str, Any], settings: RunSettings, caps: tuple[int, int | None]
) -> None:
    loaded = head(**top)
    loop = settings.applied_to(loaded)
    assert (loop.max_steps, loop.max_passes) == caps
    assert (loaded.max_iterations_written, loop.max_iterations_written) == (False, True)


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(),
        RunOptions(max_iterations=2, no_llm=True, llm_model="m", stall_threshold=1),
        RunOptions(max_steps=9, max_continuations=4, max_cost=1.5, notify="echo x"),
        RunOptions(max_steps=9, max_iterations=3, notify=""),
    ],
)
@pytest.mark.parametrize("make", [legacy, head])
def test_the_options_settings_are_what_apply_overrides_gives(
    options: RunOptions, make: Any
) -> None:
    in_place = make()
    apply_overrides(in_place, options)
    assert options.settings.applied_to(make()) == in_place


def test_a_resume_keeps_the_saved_budget_and_notify_unless_given_anew() -> None:
    kept = RunSettings(max_iterations=2).resumed(max_cost_usd=1.0, notify="echo saved")
    assert kept == RunSettings(max_iterations=2, max_cost_usd=1.0, notify="echo saved")
    anew = RunSettings(max_cost_usd=5.0, notify="").resumed(max_cost_usd=1.0, notify="x")
    assert anew == RunSettings(max_cost_usd=5.0, notify="")
    assert NO_SETTINGS.resumed(max_cost_usd=None, notify=None) == NO_SETTINGS


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".loops"


def saved(loops_dir: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((loops_dir / ".running" / "demo.state.json").read_text())
    return state


def test_the_executor_runs_a_copy_with_the_settings_given_at_construction(
    project: Path,
) -> None:
    loaded = legacy()
    before = dataclasses.replace(loaded)
    settings = RunSettings(max_iterations=2, max_cost_usd=3.0, notify="")
    executor = PersistentExecutor(
        loaded, loops_dir=project, settings=settings, context_overrides={"k": "v"}
    )
    result = executor.run()
    assert (result.terminated_by, result.iterations) == ("max_iterations", 2)
    assert loaded == before
    assert executor.fsm is not loaded and executor.fsm.max_iterations == 2
    state = saved(project)
    assert (state["max_cost_usd"], state["notify"], state["context_overrides"]) == (
        3.0,
        "",
        {"k": "v"},
    )


def test_a_resume_goes_on_with_the_saved_budget_without_touching_the_loop_given(
    project: Path,
) -> None:
    PersistentExecutor(
        legacy(), loops_dir=project, settings=RunSettings(max_iterations=1, max_cost_usd=4.0)
    ).run()
    loaded = legacy(max_iterations=3)
    executor = PersistentExecutor(loaded, loops_dir=project, settings=RunSettings())
    result = executor.resume_checked()
    assert (result.terminated_by, result.iterations) == ("max_iterations", 3)
    assert loaded.max_cost_usd is None
    assert executor.fsm.max_cost_usd == 4.0
    assert executor.budget_override == 4.0
    assert saved(project)["max_cost_usd"] == 4.0


def test_the_reference_constructor_keeps_the_loop_it_was_given(project: Path) -> None:
    """fsm-api.md §9.3: `PersistentExecutor(fsm, persistence, loops_dir, **executor_kwargs)`;
    with no settings the executor's `fsm` is the argument itself."""
    loop = legacy(max_iterations=1)
    executor = PersistentExecutor(loop, None, project)
    assert executor.fsm is loop
    assert executor.run().terminated_by == "max_iterations"


def test_an_executor_keyword_it_does_not_take_is_a_type_error(project: Path) -> None:
    """fsm-api.md §9.3: passing `signal_detector` (or `handoff_handler`) raises `TypeError`."""
    with pytest.raises(TypeError):
        PersistentExecutor(legacy(), loops_dir=project, signal_detector=None)  # type: ignore[call-arg]
