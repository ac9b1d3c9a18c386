"""Judge a HEAD file's state: HEAD's verdict names, short-circuits and evaluators (§3.2).

`evaluators.evaluate` hands a `HeadEvaluateConfig` to `evaluate_head`: exits HEAD decides
first (`head_verdicts.short_circuit`), the legacy evaluators (given as `legacy`, so this
module does not import the face) with `yes`/`no` for `success`/`failure` and HEAD's
extra keys (`key`, `error_patterns`), HEAD's own evaluators, and HEAD's LLM judge. The
stall evaluators that remember earlier rounds (`diff_stall`, `action_stall`) return what
this round observed (details `observed`); the run core settles it against the run's
memory (`settle_stall`). Reading the work tree's diff, a history file or asking the model
is I/O: the run core hands those states to its driver (`host_io`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.judging.head_evaluators import (
    classify,
    error_pattern_found,
    harbor_scorer,
    keyed_number,
    mcp_result,
    unsupported,
)
from little_loops.fsm.judging.head_llm_judge import ask_head_model
from little_loops.fsm.judging.head_verdicts import head_name, short_circuit
from little_loops.fsm.judging.stall_evaluators import (
    action_stall,
    diff_stall,
    history_numbers,
    score_walk,
)
from little_loops.fsm.judging.stall_io import StallReadError, git_diff_stat, read_history
from little_loops.fsm.model.head_loop import HeadEvaluateConfig
from little_loops.fsm.schema import DEFAULT_MIN_CONFIDENCE, EvaluateConfig, LLMConfig

__all__ = [
    "DEFAULT_EPSILON",
    "DEFAULT_MAX_REPEAT",
    "DEFAULT_MAX_STALL",
    "DEFAULT_TRACK",
    "HISTORY_FILES",
    "MEMORY_EVALUATORS",
    "Judged",
    "LegacyEvaluate",
    "evaluate_head",
    "head_llm_judgement",
    "settle_stall",
]

DEFAULT_MAX_STALL = 1
DEFAULT_EPSILON = 0.5
DEFAULT_MAX_REPEAT = 2
DEFAULT_TRACK = ("action",)
HISTORY_FILES = {
    "score_stall": "${context.run_dir}/.score_history",
    "open_question_stall": "${context.run_dir}/.open_questions_history",
}
# Evaluators whose verdict depends on the run's memory of earlier rounds.
MEMORY_EVALUATORS = frozenset({"diff_stall", "action_stall"})
_LEGACY_KINDS = frozenset(
    {"exit_code", "output_numeric", "output_json", "output_contains", "convergence"}
)
_UNSUPPORTED = frozenset({"comparator", "contract"})
# Where a bare `action_stall` key is looked for, in this order.
_TRACK_NAMESPACES = ("context", "captured", "prev", "result")


class Judged(NamedTuple):
    """A verdict, its details and what judging it cost (an LLM call's spending)."""

    verdict: str
    details: dict[str, Any]
    spending: dict[str, Any] | None = None


# A legacy evaluator: (config without `source`, output, log of the whole output) -> verdict.
LegacyEvaluate = Callable[[EvaluateConfig, str, str | None], Judged]
# The Anthropic SDK module as the LLM judge should use it now (None: not installed).
SdkGetter = Callable[[], Any]


def evaluate_head(
    config: HeadEvaluateConfig,
    output: str,
    exit_code: int,
    context: InterpolationContext,
    llm: LLMConfig,
    *,
    legacy: LegacyEvaluate,
    sdk: SdkGetter,
    log_path: str | None = None,
) -> Judged:
    """The verdict of a HEAD state's `evaluate:` (`llm.model`: the state's model, if any)."""
    decided = short_circuit(config.type, exit_code)
    if decided is not None:
        return Judged(*decided)
    if config.source is not None:
        log_path = None
        # HEAD judges the action's output when the source cannot be resolved.
        with contextlib.suppress(InterpolationError):
            output = interpolate(config.source, context)
    if config.type in _LEGACY_KINDS:
        return _legacy_kind(config, output, legacy, log_path)
    return _head_kind(config, output, exit_code, context, llm, legacy, sdk)


def _head_kind(
    config: HeadEvaluateConfig,
    output: str,
    exit_code: int,
    context: InterpolationContext,
    llm: LLMConfig,
    legacy: LegacyEvaluate,
    sdk: SdkGetter,
) -> Judged:
    kind = config.type
    if kind == "llm_structured":
        return _llm(config, output, llm, legacy, sdk)
    if kind == "classify":
        return Judged(*classify(output, config.line))
    if kind == "harbor_scorer":
        return Judged(*harbor_scorer(output, exit_code))
    if kind == "mcp_result":
        return Judged(*mcp_result(output, exit_code))
    if kind in _UNSUPPORTED:
        return Judged(*unsupported(kind))
    if kind in HISTORY_FILES:
        return _score_stall(config, context)
    if kind == "diff_stall":
        return _diff_observed(config)
    if kind == "action_stall":
        return _action_observed(config, context)
    # An evaluator a HEAD file may not have: judged (and reported) as the legacy one is.
    return _legacy_kind(config, output, legacy, None)


def _legacy_kind(
    config: HeadEvaluateConfig, output: str, legacy: LegacyEvaluate, log_path: str | None
) -> Judged:
    """A legacy evaluator, named the HEAD way, with HEAD's `key` and `error_patterns`."""
    if config.type == "output_numeric" and config.key:
        number = keyed_number(output, config.key)
        if number is None:
            return Judged("error", {"error": f"No '{config.key} = <number>' in output"})
        output = repr(number)
    verdict, details, spending = legacy(_as_legacy(config), output, log_path)
    if config.type == "output_contains" and verdict == "failure" and not config.negate:
        found = error_pattern_found(output, config.error_patterns or [])
        if found is not None:
            return Judged("error", {**details, "error": f"error pattern found: {found}"})
    return Judged(head_name(verdict), details, spending)


def _as_legacy(config: HeadEvaluateConfig) -> EvaluateConfig:
    """The legacy keys of `config`, its source already applied."""
    values = {item.name: getattr(config, item.name) for item in dataclasses.fields(EvaluateConfig)}
    return EvaluateConfig(**{**values, "source": None})


def _llm(
    config: HeadEvaluateConfig,
    output: str,
    llm: LLMConfig,
    legacy: LegacyEvaluate,
    sdk: SdkGetter,
) -> Judged:
    if not llm.enabled:  # the legacy judge says so in its words
        return legacy(_as_legacy(config), output, None)
    return head_llm_judgement(
        output,
        llm,
        sdk(),
        prompt=config.prompt,
        schema=config.schema,
        min_confidence=config.min_confidence,
        uncertain_suffix=config.uncertain_suffix,
    )


def head_llm_judgement(
    output: str,
    llm: LLMConfig,
    sdk: Any,
    *,
    prompt: str | None = None,
    schema: dict[str, Any] | None = None,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    uncertain_suffix: bool = False,
) -> Judged:
    """Ask the model (`llm.model`) as HEAD does; `sdk`: the `anthropic` module or None."""
    spent: list[dict[str, Any]] = []
    verdict, details = ask_head_model(
        sdk,
        output,
        prompt=prompt,
        schema=schema,
        min_confidence=min_confidence,
        uncertain_suffix=uncertain_suffix,
        model=llm.model,
        max_tokens=llm.max_tokens,
        timeout=llm.timeout,
        spent=spent,
    )
    return Judged(verdict, details, spent[0] if spent else None)


def _score_stall(config: HeadEvaluateConfig, context: InterpolationContext) -> Judged:
    """`score_stall` (higher is better) or `open_question_stall` (lower is better)."""
    template = config.history_file or HISTORY_FILES[config.type]
    try:
        path = interpolate(template, context)
        scores = history_numbers(read_history(path))
    except InterpolationError as exc:
        return Judged("error", {"error": f"Cannot resolve history_file: {exc}"})
    except StallReadError as exc:
        return Judged("error", {"error": str(exc)})
    verdict, details = score_walk(
        scores,
        epsilon=DEFAULT_EPSILON if config.epsilon is None else float(config.epsilon),
        max_stall=config.max_stall or DEFAULT_MAX_STALL,
        lower_is_better=config.type == "open_question_stall",
    )
    return Judged(verdict, {**details, "history_file": path})


def _diff_observed(config: HeadEvaluateConfig) -> Judged:
    try:
        stat = git_diff_stat(config.scope)
    except StallReadError as exc:
        return Judged("error", {"error": str(exc)})
    return Judged("yes", {"observed": stat})


def _action_observed(config: HeadEvaluateConfig, context: InterpolationContext) -> Judged:
    keys = list(config.track or DEFAULT_TRACK)
    return Judged("yes", {"observed": [_tracked(key, context) for key in keys]})


def _tracked(key: str, context: InterpolationContext) -> Any:
    """The value of a tracked key: `ns.path`, or a bare key in context/captured/prev/result."""
    namespace, _, rest = key.partition(".")
    if namespace in _TRACK_NAMESPACES and rest:
        return _resolved(context, namespace, rest)
    for namespace in _TRACK_NAMESPACES:
        value = _resolved(context, namespace, key)
        if value is not None:
            return value
    return None


def _resolved(context: InterpolationContext, namespace: str, path: str) -> Any:
    try:
        return context.resolve(namespace, path)
    except (InterpolationError, KeyError, TypeError, IndexError):
        return None


def settle_stall(
    config: HeadEvaluateConfig, judged: tuple[str, dict[str, Any]], memory: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The verdict of a memory evaluator, from what its round observed and `memory` (the
    state's, updated in place); other verdicts, and errors, pass unchanged."""
    verdict, details = judged
    if config.type not in MEMORY_EVALUATORS or "observed" not in details:
        return verdict, details
    rest = {key: value for key, value in details.items() if key != "observed"}
    observed = details["observed"]
    if config.type == "diff_stall":
        settled = diff_stall(str(observed), memory, config.max_stall or DEFAULT_MAX_STALL)
    else:
        settled = action_stall(list(observed), memory, config.max_repeat or DEFAULT_MAX_REPEAT)
    return settled[0], {**rest, **settled[1]}
