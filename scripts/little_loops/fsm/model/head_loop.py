"""A loop read in little-loops' current dialect (HEAD): the legacy records plus HEAD's keys.

The legacy records (`schema.FSMLoop`, `StateConfig`, `EvaluateConfig`, `LLMConfig`) keep
exactly the fields of little-loops at aada157e1 (code written for it lists them). A HEAD
file is built into the subclasses here, which add HEAD's keys (spec/ll-head-dialect.md
§2) and say `dialect == "head"`. Everything that reads a legacy loop reads a HEAD loop the
same way; what only HEAD has is asked of these classes.

`HeadLoop.from_dict` takes a mapping that the loader has already resolved (`from:`,
`flow:`, fragments) and checked; like the legacy `from_dict` it checks no types. It folds
HEAD's aliases (`on_yes`/`on_no` into `on_success`/`on_failure`), marks failure terminals
by name, and maps HEAD's caps onto the legacy fields: `max_iterations` holds HEAD's step
cap (`max_steps`, or `max_iterations` written alone) so every legacy mechanism that counts
executed states counts HEAD's steps, and `max_passes` the cap on full passes
(`max_iterations` written beside `max_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from little_loops.fsm.model.budgets import BudgetedLoop, legacy_loop_from_dict, split_budgets
from little_loops.fsm.model.head_parts import (
    DIALECT_HEAD,
    FAILURE_TERMINAL_NAMES,
    HEAD_DEFAULT_INPUT_KEY,
    HEAD_DEFAULT_LLM_TIMEOUT,
    NON_VERDICT_ON_KEYS,
    CircuitConfig,
    ParameterSpec,
    ThrottleConfig,
    parameters_from_dict,
    parameters_to_dict,
)
from little_loops.fsm.model.hosted_state import with_hosted_states
from little_loops.fsm.model.loop_vocabulary import HEAD_EVALUATE_FIELDS
from little_loops.fsm.model.parallel_config import ParallelConfig, with_parallel_states
from little_loops.fsm.schema import (
    DEFAULT_MAX_CONTINUATIONS,
    DEFAULT_MAX_ITERATIONS,
    EvaluateConfig,
    FSMLoop,
    LLMConfig,
    StateConfig,
)

__all__ = [
    "HeadEvaluateConfig",
    "HeadLLMConfig",
    "HeadLoop",
    "HeadStateConfig",
    "is_head",
    "loop_from_dict",
]


def is_head(loop: FSMLoop) -> bool:
    """True for a loop read in the HEAD dialect."""
    return loop.dialect == DIALECT_HEAD


def loop_from_dict(data: dict[str, Any], dialect: str) -> FSMLoop:
    """A loop's `to_dict()` built again in its dialect (what a Temporal payload carries)."""
    if dialect == DIALECT_HEAD:
        return HeadLoop.from_dict(data)
    return with_hosted_states(with_parallel_states(legacy_loop_from_dict(data), data), data)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


# ---------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------


@dataclass
class HeadEvaluateConfig(EvaluateConfig):
    """`evaluate:` of a HEAD state: the legacy keys plus HEAD's (None: not written).

    `error_patterns` (`output_contains`), `key` (`output_numeric`), `line` (`classify`),
    and the stall evaluators' `scope`, `max_stall`, `history_file`, `epsilon`, `track`,
    `max_repeat` (§2.3).
    """

    error_patterns: list[str] | None = None
    key: str | None = None
    line: str | int | None = None
    scope: list[str] | None = None
    max_stall: int | None = None
    history_file: str | None = None
    epsilon: float | None = None
    track: list[str] | None = None
    max_repeat: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for key in HEAD_EVALUATE_FIELDS:
            _put(out, key, getattr(self, key))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeadEvaluateConfig:
        legacy = EvaluateConfig.from_dict(data)
        head: dict[str, Any] = {key: data.get(key) for key in HEAD_EVALUATE_FIELDS}
        return cls(**vars(legacy), **head)


# ---------------------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------------------

# HEAD state keys written in the file as the field is named (value as written).
_STATE_KEYS = (
    "description",
    "loop",
    "worktree",
    "fragment",
    "max_retries",
    "on_retry_exhausted",
    "retryable_exit_codes",
    "max_rate_limit_retries",
    "on_rate_limit_exhausted",
    "rate_limit_backoff_base_seconds",
    "rate_limit_max_wait_seconds",
    "rate_limit_long_wait_ladder",
    "on_throttle_hard",
    "idle_timeout",
    "agent",
    "tools",
    "model",
    "effort",
    "session_mode",
    "host",
    "append_to_messages",
    "params",
    "type",
    "learning",
)


@dataclass
class HeadStateConfig(StateConfig):
    """A HEAD state (§2.2): the legacy keys plus HEAD's; defaults mean "not written".

    - `on_verdicts`: routes of verdicts other than success/failure/error
      (`on_partial` -> {"partial": ...}, `on_timeout`, `on_cannot_judge`, ...).
    - `failure`: the run failed when it ends here.
    - Sub-loop: `loop`, its bindings `with_` (`with:`), `context_passthrough`, `worktree`.
    - Fragment: `fragment` (the name it was built from), `fragment_bindings` (the state's
      `with:`), `fragment_parameters` (the fragment's specs, for `${param.*}`).
    - Retries (§7.1, §7.2), rate limits (§7.6), throttle (§7.5), prompt settings (§7.8).
    """

    on_verdicts: dict[str, str] = field(default_factory=dict)
    failure: bool = False
    description: str | None = None
    loop: str | None = None
    with_: dict[str, Any] | None = None
    context_passthrough: bool = False
    worktree: str | None = None
    fragment: str | None = None
    fragment_bindings: dict[str, Any] | None = None
    fragment_parameters: dict[str, ParameterSpec] | None = None
    max_retries: int | None = None
    on_retry_exhausted: str | None = None
    retryable_exit_codes: list[int] | None = None
    max_rate_limit_retries: int | None = None
    on_rate_limit_exhausted: str | None = None
    rate_limit_backoff_base_seconds: int | None = None
    rate_limit_max_wait_seconds: int | None = None
    rate_limit_long_wait_ladder: list[int] | None = None
    throttle: ThrottleConfig | None = None
    on_throttle_hard: str | None = None
    idle_timeout: int | None = None
    agent: str | None = None
    tools: list[str] | None = None
    model: str | None = None
    effort: str | None = None
    session_mode: str | None = None
    append_to_messages: str | None = None
    params: dict[str, Any] | None = None
    type: str | None = None
    learning: dict[str, Any] | None = None
    # Addition (issue 25): a fan-out of a child loop over items (`parallel:`).
    parallel: ParallelConfig | None = None
    # Addition (issue 24): the agent host(s) of this prompt state (`model.host_choice`).
    host: str | list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for verdict, target in self.on_verdicts.items():
            out[f"on_{verdict}"] = target
        if self.failure:
            out["failure"] = True
        if self.context_passthrough:
            out["context_passthrough"] = True
        for key in _STATE_KEYS:
            _put(out, key, getattr(self, key))
        bindings = self.fragment_bindings if self.fragment is not None else self.with_
        _put(out, "with", bindings)
        if self.fragment_parameters:
            out["parameters"] = parameters_to_dict(self.fragment_parameters)
        if self.throttle is not None:
            out["throttle"] = self.throttle.to_dict()
        if self.parallel is not None:
            out["parallel"] = self.parallel.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeadStateConfig:
        folded = _folded_aliases(data)
        legacy = StateConfig.from_dict({k: v for k, v in folded.items() if k != "evaluate"})
        evaluate = folded.get("evaluate")
        fields_ = vars(legacy) | _head_state_fields(folded)
        fields_["evaluate"] = (
            HeadEvaluateConfig.from_dict(evaluate) if isinstance(evaluate, dict) else None
        )
        return cls(**fields_)

    def get_referenced_states(self) -> set[str]:
        names = {
            self.on_retry_exhausted,
            self.on_rate_limit_exhausted,
            self.on_throttle_hard,
            *self.on_verdicts.values(),
        }
        return super().get_referenced_states() | {name for name in names if name is not None}


def _folded_aliases(data: dict[str, Any]) -> dict[str, Any]:
    """`on_yes`/`on_no` folded into `on_success`/`on_failure` (the HEAD names win)."""
    folded = dict(data)
    for alias, name in (("on_yes", "on_success"), ("on_no", "on_failure")):
        if folded.get(alias) is not None:
            folded[name] = folded[alias]
        folded.pop(alias, None)
    return folded


def _head_state_fields(data: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {key: data.get(key) for key in _STATE_KEYS}
    values["on_verdicts"] = {
        key[3:]: target
        for key, target in data.items()
        if isinstance(key, str) and key.startswith("on_") and key not in NON_VERDICT_ON_KEYS
    }
    values["failure"] = bool(data.get("failure", False))
    values["context_passthrough"] = bool(data.get("context_passthrough", False))
    throttle = data.get("throttle")
    values["throttle"] = ThrottleConfig.from_dict(throttle) if isinstance(throttle, dict) else None
    block = data.get("parallel")
    values["parallel"] = ParallelConfig.from_dict(block) if isinstance(block, dict) else None
    if data.get("fragment") is not None:
        values["fragment_bindings"] = data.get("with")
        values["fragment_parameters"] = parameters_from_dict(data.get("parameters")) or None
    else:
        values["with_"] = data.get("with")
    return values


# ---------------------------------------------------------------------------------------
# llm
# ---------------------------------------------------------------------------------------


@dataclass
class HeadLLMConfig(LLMConfig):
    """`llm:` of a HEAD loop: the legacy keys plus `effort` (shown only, no flag), and
    HEAD's `timeout` default (§2.1); `model` keeps ours (see `HEAD_DEFAULT_LLM_TIMEOUT`)."""

    timeout: int = HEAD_DEFAULT_LLM_TIMEOUT
    effort: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.pop("timeout", None)  # written against HEAD's default, not the legacy one
        if self.timeout != HEAD_DEFAULT_LLM_TIMEOUT:
            out["timeout"] = self.timeout
        _put(out, "effort", self.effort)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeadLLMConfig:
        legacy = vars(LLMConfig.from_dict(data))
        legacy["timeout"] = data.get("timeout", HEAD_DEFAULT_LLM_TIMEOUT)
        return cls(**legacy, effort=data.get("effort"))


# ---------------------------------------------------------------------------------------
# loop
# ---------------------------------------------------------------------------------------

# HEAD loop keys written in the file as the field is named (value as written).
_LOOP_KEYS = (
    "on_max_steps",
    "on_max_iterations",
    "max_edge_revisits",
    "default_timeout",
    "default_idle_timeout",
    "session_mode",
)


@dataclass
class HeadLoop(BudgetedLoop):
    """A loop read in the HEAD dialect (§2.1). See the module docstring for the caps."""

    dialect: ClassVar[str] = DIALECT_HEAD

    description: str | None = None
    category: str = ""
    labels: list[str] = field(default_factory=list)
    visibility: str = "public"
    commands: list[dict[str, Any]] = field(default_factory=list)
    parameters: dict[str, ParameterSpec] = field(default_factory=dict)
    input_key: str = HEAD_DEFAULT_INPUT_KEY
    required_inputs: list[str] = field(default_factory=list)
    max_passes: int | None = None
    on_max_steps: str | None = None
    on_max_iterations: str | None = None
    max_edge_revisits: int | None = None
    default_timeout: int | None = None
    default_idle_timeout: int | None = None
    singleton: bool = False
    session_mode: str | None = None
    circuit: CircuitConfig | None = None
    config: dict[str, Any] = field(default_factory=dict)
    # Whether the file wrote `max_steps`: then `-n/--max-iterations` caps passes (§2.5);
    # whether `max_iterations` is set (file or `-n`): then it is an injected context key.
    max_steps_written: bool = False
    max_iterations_written: bool = False

    @property
    def max_steps(self) -> int:
        """HEAD's step cap (kept in `max_iterations`, see the module docstring)."""
        return self.max_iterations

    def head_state(self, name: str) -> HeadStateConfig | None:
        """State `name` as a HEAD state (None when there is no such state)."""
        state = self.states.get(name)
        return state if isinstance(state, HeadStateConfig) else None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for name, state in self.states.items():
            if _success_named_like_failure(name, state):
                out["states"][name]["failure"] = False  # else it would read as one by name
        steps = out.pop("max_iterations", None)
        if steps is not None:
            out["max_steps"] = steps
        _put(out, "max_iterations", self.max_passes)
        _put(out, "description", self.description)
        if self.category:
            out["category"] = self.category
        if self.labels:
            out["labels"] = self.labels
        if self.visibility != "public":
            out["visibility"] = self.visibility
        if self.commands:
            out["commands"] = self.commands
        if self.parameters:
            out["parameters"] = parameters_to_dict(self.parameters)
        if self.input_key != HEAD_DEFAULT_INPUT_KEY:
            out["input_key"] = self.input_key
        if self.required_inputs:
            out["required_inputs"] = self.required_inputs
        for key in _LOOP_KEYS:
            _put(out, key, getattr(self, key))
        if self.singleton:
            out["singleton"] = True
        if self.circuit is not None:
            out["circuit"] = self.circuit.to_dict()
        if self.config:
            out["config"] = self.config
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeadLoop:
        """A resolved, checked HEAD mapping as a loop (types are not checked here)."""
        data, budgets = split_budgets(data)  # our addition, read apart (`budgets`)
        legacy_keys = {key: value for key, value in data.items() if key not in ("states", "llm")}
        legacy_keys["max_iterations"] = data.get(
            "max_steps", data.get("max_iterations", DEFAULT_MAX_ITERATIONS)
        )
        legacy_keys["max_continuations"] = _max_continuations(data)
        base = vars(FSMLoop.from_dict({**legacy_keys, "states": {}}))
        base["states"] = {
            name: _head_state(name, state) for name, state in (data.get("states") or {}).items()
        }
        base["llm"] = HeadLLMConfig.from_dict(data.get("llm") or {})
        return cls(
            **base,
            description=data.get("description"),
            category=data.get("category") or "",
            labels=list(data.get("labels") or []),
            visibility=data.get("visibility") or "public",
            commands=list(data.get("commands") or []),
            parameters=parameters_from_dict(data.get("parameters")),
            input_key=data.get("input_key") or HEAD_DEFAULT_INPUT_KEY,
            required_inputs=list(data.get("required_inputs") or []),
            max_passes=data.get("max_iterations") if "max_steps" in data else None,
            singleton=bool(data.get("singleton", False)),
            circuit=CircuitConfig.from_dict(data.get("circuit") or {}),
            config=dict(data.get("config") or {}),
            max_steps_written="max_steps" in data,
            max_iterations_written="max_iterations" in data,
            budgets=budgets,
            **_written(data, _LOOP_KEYS),
        )


def _success_named_like_failure(name: str, state: StateConfig) -> bool:
    """A terminal named `failed` (say) that its file declared `failure: false`."""
    if not isinstance(state, HeadStateConfig) or not state.terminal:
        return False
    return not state.failure and name in FAILURE_TERMINAL_NAMES


def _written(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: data.get(key) for key in keys}


def _head_state(name: str, data: dict[str, Any]) -> StateConfig:
    state = HeadStateConfig.from_dict(data)
    if state.terminal and "failure" not in data and name in FAILURE_TERMINAL_NAMES:
        state.failure = True
    return state


def _max_continuations(data: dict[str, Any]) -> int:
    """`max_continuations`, else little-loops' `config.automation.max_continuations` (or
    `config.continuation.max_continuations`), else the default."""
    if "max_continuations" in data:
        return int(data["max_continuations"])
    config = data.get("config") or {}
    for section in ("automation", "continuation"):
        value = (config.get(section) or {}).get("max_continuations")
        if value is not None:
            return int(value)
    return DEFAULT_MAX_CONTINUATIONS
