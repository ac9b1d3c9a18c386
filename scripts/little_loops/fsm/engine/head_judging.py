"""How a HEAD file's state is judged (§3.2): which evaluator, where, and with what memory.

- No `evaluate`: a prompt action is asked of HEAD's LLM judge (the state's `model`, else
  the loop's; with the LLM off, this project's rule: its exit code), an `mcp_tool`
  action is read by `mcp_result`, any other by its exit code; named `yes`/`no`.
- With `evaluate`: that evaluator. Both go through `evaluators.evaluate`, which judges a
  `HeadEvaluateConfig` as HEAD does (`judging.head_evaluate`).
- A state with neither action nor `evaluate` is `yes`; `type: learning` with `learning:`
  runs nothing and is `blocked` (when routed) or `no`; `contract` runs nothing: `error`.
- Stall evaluators keep their memory in the run's `HeadMemory.evaluator_memory[state]`
  (§9h): `settle` applies what a round observed to it, in the run core.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from little_loops.fsm.engine.head_actions import no_run_verdict
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.evaluators import EvaluationResult, evaluate
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.judging.head_evaluate import MEMORY_EVALUATORS, settle_stall
from little_loops.fsm.judging.host_io import needs_host_io
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadEvaluateConfig, HeadStateConfig
from little_loops.fsm.schema import LLMConfig

__all__ = [
    "head_config",
    "head_judge",
    "head_needs_host_io",
    "runs_nothing",
    "settle",
]


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
    return needs_host_io(head_config(state), truncated, llm_by_default=slash and llm.enabled)


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
    config = head_config(state) or _default_config(state, slash, llm)
    output, exit_code = (action.output, action.exit_code) if action else ("", 0)
    judging_llm = replace(llm, model=state.model) if state.model else llm
    return evaluate(config, output, exit_code, ctx, judging_llm, log_path=log_path)


def _default_config(state: HeadStateConfig, slash: bool, llm: LLMConfig) -> HeadEvaluateConfig:
    """The evaluator of a state without `evaluate` (§3.2): HEAD's LLM judge for a prompt
    action (its exit code when the LLM is off), `mcp_result` for `mcp_tool`, else the
    exit code."""
    if state.action_type == "mcp_tool":
        kind = "mcp_result"
    elif slash and llm.enabled:
        kind = "llm_structured"
    else:
        kind = "exit_code"
    return HeadEvaluateConfig(type=kind)


def settle(
    state: HeadStateConfig, state_name: str, head: HeadMemory, judged: tuple[str, dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """The verdict once a stall evaluator's round met the run's memory of the state."""
    config = head_config(state)
    if config is None or config.type not in MEMORY_EVALUATORS:
        return judged
    memory = head.evaluator_memory.setdefault(state_name, {})
    return settle_stall(config, judged, memory)
