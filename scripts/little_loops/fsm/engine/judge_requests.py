"""The request to judge a state's result with host I/O (an LLM evaluator, a judge run
as an agent CLI). Apart from `run_requests` so that a run whose states are judged without
I/O (exit codes, output checks) does not build it at start-up; `requests` exports it too."""

from __future__ import annotations

from dataclasses import dataclass

from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.schema import LLMConfig, StateConfig

__all__ = ["EvaluateWithIO"]


@dataclass(frozen=True)
class EvaluateWithIO:
    """Judge a state whose evaluator needs the host (the LLM judge, a file, a log);
    submit the `Judgement` from `evaluation_step.judge(state, ctx, step, llm)`."""

    state: StateConfig
    ctx: InterpolationContext
    step: Step
    llm: LLMConfig
