"""The package surface of `little_loops.fsm`: the reference's 41 names, loaded on use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import little_loops.fsm as fsm

REFERENCE_ALL = [
    "ActionResult", "ActionRunner", "DEFAULT_LLM_PROMPT", "DEFAULT_LLM_SCHEMA",
    "DetectedSignal", "ERROR_SIGNAL", "EvaluateConfig", "EvaluationResult",
    "ExecutionResult", "FSMExecutor", "FSMLoop", "HANDOFF_SIGNAL", "HandoffBehavior",
    "HandoffHandler", "HandoffResult", "InterpolationContext", "InterpolationError",
    "LLMConfig", "LoopState", "PersistentExecutor", "RouteConfig", "STOP_SIGNAL",
    "SignalDetector", "SignalPattern", "StateConfig", "StatePersistence", "ValidationError",
    "compile_paradigm", "evaluate", "evaluate_convergence", "evaluate_exit_code",
    "evaluate_llm_structured", "evaluate_output_contains", "evaluate_output_json",
    "evaluate_output_numeric", "get_loop_history", "interpolate", "interpolate_dict",
    "list_running_loops", "load_and_validate", "validate_fsm",
]  # fmt: skip


def test_all_is_the_reference_list_in_its_order() -> None:
    assert fsm.__all__ == REFERENCE_ALL


def test_every_name_resolves_to_the_object_of_its_module() -> None:
    from little_loops.fsm import executor, persistence, signal_detector, validation

    assert fsm.FSMExecutor is executor.FSMExecutor
    assert fsm.PersistentExecutor is persistence.PersistentExecutor
    assert fsm.HANDOFF_SIGNAL is signal_detector.HANDOFF_SIGNAL
    assert fsm.validate_fsm is validation.validate_fsm
    assert all(getattr(fsm, name) is not None for name in REFERENCE_ALL)
    assert set(REFERENCE_ALL) <= set(dir(fsm))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        fsm.Nope  # noqa: B018


def test_importing_one_module_does_not_load_the_whole_engine() -> None:
    code = "import sys, little_loops.fsm.schema; print('little_loops.fsm.executor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"
