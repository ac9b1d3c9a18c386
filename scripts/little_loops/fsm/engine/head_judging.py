"""How a HEAD file's state is judged (§3.2): which evaluator, where, and with what memory.

- No `evaluate`: a prompt action is asked of HEAD's LLM judge (the state's `model`, else
  the loop's; with the LLM off, this project's rule: its exit code), an `mcp_tool`
  action is read by `mcp_result`, any other by its exit code; named `yes`/`no`.
- With `evaluate`: `judging.head_evaluate.evaluate_head`.
- A state with neither action nor `evaluate` is `yes`; `type: learning` with `learning:`
  runs nothing and is `blocked` (when routed) or `no`; `contract` runs nothing: `error`.
- Stall evaluators keep their memory in the run's `HeadMemory.evaluator_memory[state]`
  (§9h): `settle` applies what a round observed to it, in the run core.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.head_actions import no_run_verdict
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.evaluators import EvaluationResult, evaluate_exit_code
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.judging.head_evaluate import (
    MEMORY_EVALUATORS,
    evaluate_head,
    head_llm_judgement,
    settle_stall,
)
from little_loops.fsm.judging.head_evaluators import mcp_result
from little_loops.fsm.judging.head_verdicts import head_name, short_circuit
from little_loops.fsm.judging.host_io import needs_host_io
from little_loops.fsm.model.head_loop import HeadEvaluateConfig, HeadStateConfig
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.schema import LLMConfig

__all__ = [
    "HOST_IO_EVALUATORS",
    "head_config",
    "head_judge",
    "head_needs_host_io",
    "runs_nothing",
    "settle",
]

# HEAD evaluators that read the host (git, a history file) besides the legacy ones.
HOST_IO_EVALUATORS = frozenset({"diff_stall", "score_stall", "open_question_stall"})


def head_config(state: HeadStateConfig) -> HeadEvaluateConfig | None:
    """The state's `evaluate:` as HEAD's record (a legacy record is converted)."""
    config = state.evaluate
    if config is None or isinstance(config, HeadEvaluateConfig):
        return config
    return HeadEvaluateConfig.from_dict(config.to_dict())


def head_needs_host_io(
    state: HeadStateConfig, slash: bool, truncated: bool, llm: LLMConfig
) -> bool:
    """Whether judging the state needs the driver (the LLM, git, a file, a log)."""
    config = head_config(state)
    if config is not None and config.type in HOST_IO_EVALUATORS:
        return True
    return needs_host_io(config, truncated, llm_by_default=slash and llm.enabled)


def runs_nothing(state: HeadStateConfig, step: Step) -> Step:
    """`step` with its verdict when the state runs nothing (`type: learning` with
    `learning:`, `contract`): judged so without an action or evaluator."""
    fixed = no_run_verdict(state)
    if fixed is not None:
        step.verdict, step.details = fixed[0], dict(fixed[1])
    return step


def head_judge(
    state: HeadStateConfig,
    ctx: InterpolationContext,
    action: ActionResult | None,
    slash: bool,
    llm: LLMConfig,
    log_path: str | None,
) -> EvaluationResult:
    """The verdict and details of a HEAD state's action (`action` None: no action ran)."""
    config = head_config(state)
    output, exit_code = (action.output, action.exit_code) if action else ("", 0)
    if config is not None:
        return evaluate_head(
            config, output, exit_code, ctx, llm, log_path=log_path, model=state.model
        )
    kind = "mcp_result" if state.action_type == "mcp_tool" else "default"
    decided = short_circuit(kind, exit_code)
    if decided is not None:
        return EvaluationResult(*decided)
    if kind == "mcp_result":
        return EvaluationResult(*mcp_result(output, exit_code))
    if slash and llm.enabled:
        return head_llm_judgement(output, llm, model=state.model)
    result = evaluate_exit_code(exit_code)
    return EvaluationResult(head_name(result.verdict), result.details)


def settle(
    state: HeadStateConfig, state_name: str, head: HeadMemory, judged: tuple[str, dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """The verdict once a stall evaluator's round met the run's memory of the state."""
    config = head_config(state)
    if config is None or config.type not in MEMORY_EVALUATORS:
        return judged
    memory = head.evaluator_memory.setdefault(state_name, {})
    return settle_stall(config, judged, memory)
