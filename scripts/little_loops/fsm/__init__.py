"""The FSM loop engine: schema, validation, compilers, interpolation, evaluators, executor,
signals, handoff and persistence.

The names below are the reference package's public surface, in its order; import anything
else from its module. They are imported on first use (PEP 562): `import little_loops.fsm.x`
loads the package first, and loading every module for it would make each command start
slower by the whole engine's import time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from little_loops.fsm.compilers import compile_paradigm
    from little_loops.fsm.evaluators import (
        DEFAULT_LLM_PROMPT,
        DEFAULT_LLM_SCHEMA,
        EvaluationResult,
        evaluate,
        evaluate_convergence,
        evaluate_exit_code,
        evaluate_llm_structured,
        evaluate_output_contains,
        evaluate_output_json,
        evaluate_output_numeric,
    )
    from little_loops.fsm.executor import ActionResult, ActionRunner, ExecutionResult, FSMExecutor
    from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler, HandoffResult
    from little_loops.fsm.interpolation import (
        InterpolationContext,
        InterpolationError,
        interpolate,
        interpolate_dict,
    )
    from little_loops.fsm.persistence import (
        LoopState,
        PersistentExecutor,
        StatePersistence,
        get_loop_history,
        list_running_loops,
    )
    from little_loops.fsm.schema import EvaluateConfig, FSMLoop, LLMConfig, RouteConfig, StateConfig
    from little_loops.fsm.signal_detector import (
        ERROR_SIGNAL,
        HANDOFF_SIGNAL,
        STOP_SIGNAL,
        DetectedSignal,
        SignalDetector,
        SignalPattern,
    )
    from little_loops.fsm.validation import ValidationError, load_and_validate, validate_fsm

_MODULE_OF = {
    "compile_paradigm": "little_loops.fsm.compilers",
    "DEFAULT_LLM_PROMPT": "little_loops.fsm.evaluators",
    "DEFAULT_LLM_SCHEMA": "little_loops.fsm.evaluators",
    "EvaluationResult": "little_loops.fsm.evaluators",
    "evaluate": "little_loops.fsm.evaluators",
    "evaluate_convergence": "little_loops.fsm.evaluators",
    "evaluate_exit_code": "little_loops.fsm.evaluators",
    "evaluate_llm_structured": "little_loops.fsm.evaluators",
    "evaluate_output_contains": "little_loops.fsm.evaluators",
    "evaluate_output_json": "little_loops.fsm.evaluators",
    "evaluate_output_numeric": "little_loops.fsm.evaluators",
    "ActionResult": "little_loops.fsm.executor",
    "ActionRunner": "little_loops.fsm.executor",
    "ExecutionResult": "little_loops.fsm.executor",
    "FSMExecutor": "little_loops.fsm.executor",
    "HandoffBehavior": "little_loops.fsm.handoff_handler",
    "HandoffHandler": "little_loops.fsm.handoff_handler",
    "HandoffResult": "little_loops.fsm.handoff_handler",
    "InterpolationContext": "little_loops.fsm.interpolation",
    "InterpolationError": "little_loops.fsm.interpolation",
    "interpolate": "little_loops.fsm.interpolation",
    "interpolate_dict": "little_loops.fsm.interpolation",
    "LoopState": "little_loops.fsm.persistence",
    "PersistentExecutor": "little_loops.fsm.persistence",
    "StatePersistence": "little_loops.fsm.persistence",
    "get_loop_history": "little_loops.fsm.persistence",
    "list_running_loops": "little_loops.fsm.persistence",
    "EvaluateConfig": "little_loops.fsm.schema",
    "FSMLoop": "little_loops.fsm.schema",
    "LLMConfig": "little_loops.fsm.schema",
    "RouteConfig": "little_loops.fsm.schema",
    "StateConfig": "little_loops.fsm.schema",
    "ERROR_SIGNAL": "little_loops.fsm.signal_detector",
    "HANDOFF_SIGNAL": "little_loops.fsm.signal_detector",
    "STOP_SIGNAL": "little_loops.fsm.signal_detector",
    "DetectedSignal": "little_loops.fsm.signal_detector",
    "SignalDetector": "little_loops.fsm.signal_detector",
    "SignalPattern": "little_loops.fsm.signal_detector",
    "ValidationError": "little_loops.fsm.validation",
    "load_and_validate": "little_loops.fsm.validation",
    "validate_fsm": "little_loops.fsm.validation",
}

__all__ = [  # noqa: RUF022 - the reference's plain ASCII order
    "ActionResult",
    "ActionRunner",
    "DEFAULT_LLM_PROMPT",
    "DEFAULT_LLM_SCHEMA",
    "DetectedSignal",
    "ERROR_SIGNAL",
    "EvaluateConfig",
    "EvaluationResult",
    "ExecutionResult",
    "FSMExecutor",
    "FSMLoop",
    "HANDOFF_SIGNAL",
    "HandoffBehavior",
    "HandoffHandler",
    "HandoffResult",
    "InterpolationContext",
    "InterpolationError",
    "LLMConfig",
    "LoopState",
    "PersistentExecutor",
    "RouteConfig",
    "STOP_SIGNAL",
    "SignalDetector",
    "SignalPattern",
    "StateConfig",
    "StatePersistence",
    "ValidationError",
    "compile_paradigm",
    "evaluate",
    "evaluate_convergence",
    "evaluate_exit_code",
    "evaluate_llm_structured",
    "evaluate_output_contains",
    "evaluate_output_json",
    "evaluate_output_numeric",
    "get_loop_history",
    "interpolate",
    "interpolate_dict",
    "list_running_loops",
    "load_and_validate",
    "validate_fsm",
]


def __getattr__(name: str) -> Any:
    module_name = _MODULE_OF.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
