"""HEAD's `circuit.repeated_failure` (spec/ll-head-dialect.md §7.7): the window, the
recovery state, `recurrent_window`, `progress_paths` through the driver (local and the
Temporal worker's activity), with the real executor, persistence and shell actions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from head_engine_helpers import Recorder, head_loop, run_head
from temporalio.testing import ActivityEnvironment

from little_loops.cli.exit_codes import exit_code_for
from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.requests import FingerprintPaths
from little_loops.fsm.persistence import RUNNING_DIR, PersistentExecutor
from little_loops.fsm.process.clock import SYSTEM_CLOCK
from little_loops.fsm.process.path_fingerprint import paths_fingerprint
from little_loops.fsm.temporal.activities import fingerprint_paths
from little_loops.fsm.temporal.payloads import PathsInput


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def saved(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (project / ".loops" / RUNNING_DIR / "demo.state.json").read_text(encoding="utf-8")
    )
    return data


# --- circuit.repeated_failure ------------------------------------------------------------------


# exit 3: the `error` verdict in both dialects
FAILING = {"build": {"action": "echo x >> runs.txt; exit 3", "on_error": "$current"}}


def test_s7_7_the_same_failure_window_times_aborts_stall_detected(project: Path) -> None:
    loop = head_loop(FAILING, circuit={"repeated_failure": {"window": 3}})
    recorder = Recorder()
    result = PersistentExecutor(loop, event_callback=recorder).run()
    assert (result.terminated_by, result.error) == (
        "stall_detected",
        "repeated failure: state 'build' ended with exit code 3 and verdict 'error' "
        "3 times (consecutive)",
    )
    assert recorder.of("stall_detected") == [
        {
            "event": "stall_detected",
            "state": "build",
            "exit_code": 3,
            "verdict": "error",
            "consecutive": 3,
            "action": "abort",
        }
    ]
    assert (project / "runs.txt").read_text().count("x") == 3
    assert (saved(project)["status"], exit_code_for(result.terminated_by)) == ("stalled", 5)


def test_s7_7_a_recovery_state_bypasses_routing_and_the_window_is_kept(project: Path) -> None:
    # rescue is a next: state (not recorded): the next failure of build trips again.
    states = {**FAILING, "rescue": {"action": "true", "next": "build"}}
    circuit = {"repeated_failure": {"window": 2, "on_repeated_failure": "rescue"}}
    result, events = run_head(states, circuit=circuit, max_steps=6)
    assert result.terminated_by == "max_steps"
    assert [(e["to"], e.get("reason")) for e in events.of("route")] == [
        ("build", None),
        ("rescue", "repeated_failure"),
        ("build", None),
        ("rescue", "repeated_failure"),
        ("build", None),
        ("rescue", "repeated_failure"),
    ]
    assert [e["action"] for e in events.of("stall_detected")] == ["rescue"] * 3


def test_s7_7_recurrent_window_counts_the_same_outcome_across_the_run(project: Path) -> None:
    states = {
        "build": {"action": "exit 3", "on_error": "lint"},
        "lint": {"action": "true", "on_yes": "build"},
    }
    circuit = {"repeated_failure": {"window": 3, "recurrent_window": 3}}
    result, events = run_head(states, circuit=circuit)
    assert result.terminated_by == "stall_detected"
    assert events.of("stall_detected") == [
        {
            "event": "stall_detected",
            "state": "build",
            "exit_code": 3,
            "verdict": "error",
            "recurrent": 3,
            "action": "abort",
        }
    ]
    assert result.iterations == 5


def test_s7_7_next_states_are_not_recorded(project: Path) -> None:
    states = {"step": {"action": "exit 1", "next": "step"}}
    circuit = {"repeated_failure": {"window": 2}}
    result, events = run_head(states, circuit=circuit, max_steps=4)
    assert result.terminated_by == "max_steps"
    assert events.of("stall_detected") == []


def test_s7_7_progress_paths_that_change_clear_the_window(project: Path) -> None:
    (project / "out").mkdir()
    states = {
        "build": {
            "action": "echo x >> out/progress.txt; echo y >> out/noise.txt; exit 3",
            "on_error": "$current",
        },
    }
    watched = {"window": 2, "progress_paths": ["${context.dir}"]}
    result, events = run_head(
        states, context={"dir": "out"}, circuit={"repeated_failure": watched}, max_steps=4
    )
    assert result.terminated_by == "max_steps"
    assert events.of("stall_detected") == []
    # Only an excluded file changes: no progress, the window fills.
    ignored = {**watched, "exclude_paths": ["out/progress.txt", "out/noise.txt"]}
    result, events = run_head(
        states, context={"dir": "out"}, circuit={"repeated_failure": ignored}, max_steps=4
    )
    assert (result.terminated_by, result.iterations) == ("stall_detected", 2)


def test_s7_7_the_core_asks_its_driver_for_the_progress_fingerprint() -> None:
    """The run core does no I/O: the interpolated paths come as a `FingerprintPaths`."""
    circuit = {
        "repeated_failure": {"progress_paths": ["${context.dir}/*.md"], "exclude_paths": ["x"]}
    }
    loop = head_loop({"check": {"on_yes": "$current"}}, context={"dir": "docs"}, circuit=circuit)
    core = RunCore(loop, clock=SYSTEM_CLOCK)
    request = core.next_request()
    assert request == FingerprintPaths(("docs/*.md",), ("x",))


def test_s7_7_the_temporal_worker_fingerprints_progress_paths_in_the_checkout(
    tmp_path: Path,
) -> None:
    """The `ll-loop.fingerprint_paths` activity (temporalio's ActivityEnvironment, no
    server) answers what the local driver answers, in the run's checkout."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.txt").write_text("one\n")
    request = PathsInput(str(tmp_path), ["out"], [])
    first = asyncio.run(ActivityEnvironment().run(fingerprint_paths, request))
    assert first == paths_fingerprint(["out"], [], tmp_path)
    (tmp_path / "out" / "a.txt").write_text("one more\n")
    assert asyncio.run(ActivityEnvironment().run(fingerprint_paths, request)) != first
