"""The FSM loop engine: schema, validation, compilers, interpolation, evaluators, executor,
signals, handoff and persistence.

The names below are the reference package's public surface, in its order; import anything
else from its module.
"""

from __future__ import annotations

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
