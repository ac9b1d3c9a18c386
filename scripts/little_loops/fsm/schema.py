"""Dataclasses that describe a loop, with `from_dict`/`to_dict` round trips.

`from_dict` is deliberately forgiving (it never checks types and ignores unknown keys, as
the reference does): checking belongs to `validation`, which runs on the raw mapping
before these classes are built. `to_dict` writes only what differs from the defaults, so
`compile` output and state snapshots stay short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from little_loops.fsm.model.durations import parse_duration

DEFAULT_MAX_ITERATIONS = 50
DEFAULT_MIN_CONFIDENCE = 0.5
DEFAULT_DIRECTION = "minimize"
DEFAULT_ON_HANDOFF = "pause"
DEFAULT_MAX_CONTINUATIONS = 5
DEFAULT_STALL_THRESHOLD = 3
DEFAULT_LOGS_KEEP = 100
DEFAULT_LLM_MODEL = "claude-sonnet-4-20250514"
DEFAULT_LLM_MAX_TOKENS = 256
DEFAULT_LLM_TIMEOUT = 30
DEFAULT_LIMIT_MAX_WAIT = 12 * 3600
DEFAULT_LIMIT_RETRIES = 8
DEFAULT_LIMIT_FIRST_BACKOFF = 60

CURRENT_STATE_TOKEN = "$current"


def _put_if_set(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass
class EvaluateConfig:
    """How an action's result becomes a verdict."""

    type: str
    operator: str | None = None
    target: int | float | str | None = None
    tolerance: float | str | None = None
    pattern: str | None = None
    negate: bool = False
    path: str | None = None
    prompt: str | None = None
    schema: dict[str, Any] | None = None
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    uncertain_suffix: bool = False
    source: str | None = None
    previous: str | None = None
    direction: str = DEFAULT_DIRECTION

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        _put_if_set(out, "operator", self.operator)
        _put_if_set(out, "target", self.target)
        _put_if_set(out, "tolerance", self.tolerance)
        _put_if_set(out, "pattern", self.pattern)
        if self.negate:
            out["negate"] = self.negate
        _put_if_set(out, "path", self.path)
        _put_if_set(out, "prompt", self.prompt)
        _put_if_set(out, "schema", self.schema)
        if self.min_confidence != DEFAULT_MIN_CONFIDENCE:
            out["min_confidence"] = self.min_confidence
        if self.uncertain_suffix:
            out["uncertain_suffix"] = self.uncertain_suffix
        _put_if_set(out, "source", self.source)
        _put_if_set(out, "previous", self.previous)
        if self.direction != DEFAULT_DIRECTION:
            out["direction"] = self.direction
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluateConfig:
        return cls(
            type=data["type"],
            operator=data.get("operator"),
            target=data.get("target"),
            tolerance=data.get("tolerance"),
            pattern=data.get("pattern"),
            negate=data.get("negate", False),
            path=data.get("path"),
            prompt=data.get("prompt"),
            schema=data.get("schema"),
            min_confidence=data.get("min_confidence", DEFAULT_MIN_CONFIDENCE),
            uncertain_suffix=data.get("uncertain_suffix", False),
            source=data.get("source"),
            previous=data.get("previous"),
            direction=data.get("direction", DEFAULT_DIRECTION),
        )


@dataclass
class RouteConfig:
    """A state's full routing table: verdict -> target, plus `_` and `_error`."""

    routes: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.routes)
        _put_if_set(out, "_", self.default)
        _put_if_set(out, "_error", self.error)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RouteConfig:
        routes = {key: value for key, value in data.items() if not str(key).startswith("_")}
        return cls(routes=routes, default=data.get("_"), error=data.get("_error"))


@dataclass
class StateConfig:
    """One state of a loop."""

    action: str | None = None
    evaluate: EvaluateConfig | None = None
    route: RouteConfig | None = None
    on_success: str | None = None
    on_failure: str | None = None
    on_error: str | None = None
    next: str | None = None
    terminal: bool = False
    capture: str | None = None
    timeout: int | None = None
    on_maintain: str | None = None
    # Addition: force how the action runs ("shell" or "slash_command") instead of guessing.
    action_type: str | None = None
    # Additions (loop guards): enter this state at most `max_visits` times per run, then
    # go to `on_max_visits` (or stop the run as stalled).
    max_visits: int | None = None
    on_max_visits: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put_if_set(out, "action", self.action)
        if self.evaluate is not None:
            out["evaluate"] = self.evaluate.to_dict()
        if self.route is not None:
            out["route"] = self.route.to_dict()
        _put_if_set(out, "on_success", self.on_success)
        _put_if_set(out, "on_failure", self.on_failure)
        _put_if_set(out, "on_error", self.on_error)
        _put_if_set(out, "next", self.next)
        if self.terminal:
            out["terminal"] = self.terminal
        _put_if_set(out, "capture", self.capture)
        _put_if_set(out, "timeout", self.timeout)
        _put_if_set(out, "on_maintain", self.on_maintain)
        _put_if_set(out, "action_type", self.action_type)
        _put_if_set(out, "max_visits", self.max_visits)
        _put_if_set(out, "on_max_visits", self.on_max_visits)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StateConfig:
        evaluate = EvaluateConfig.from_dict(data["evaluate"]) if "evaluate" in data else None
        route = RouteConfig.from_dict(data["route"]) if "route" in data else None
        return cls(
            action=data.get("action"),
            evaluate=evaluate,
            route=route,
            on_success=data.get("on_success"),
            on_failure=data.get("on_failure"),
            on_error=data.get("on_error"),
            next=data.get("next"),
            terminal=data.get("terminal", False),
            capture=data.get("capture"),
            timeout=data.get("timeout"),
            on_maintain=data.get("on_maintain"),
            action_type=data.get("action_type"),
            max_visits=data.get("max_visits"),
            on_max_visits=data.get("on_max_visits"),
        )

    def get_referenced_states(self) -> set[str]:
        """Every target this state names, verbatim (`$current` and templates included)."""
        names = [
            self.on_success,
            self.on_failure,
            self.on_error,
            self.next,
            self.on_maintain,
            self.on_max_visits,
        ]
        if self.route is not None:
            names.extend(self.route.routes.values())
            names.extend([self.route.default, self.route.error])
        return {name for name in names if name is not None}


@dataclass
class LLMConfig:
    """Settings for LLM evaluation, shared by default and explicit `llm_structured`."""

    enabled: bool = True
    model: str = DEFAULT_LLM_MODEL
    max_tokens: int = DEFAULT_LLM_MAX_TOKENS
    timeout: int = DEFAULT_LLM_TIMEOUT

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.enabled is not True:
            out["enabled"] = self.enabled
        if self.model != DEFAULT_LLM_MODEL:
            out["model"] = self.model
        if self.max_tokens != DEFAULT_LLM_MAX_TOKENS:
            out["max_tokens"] = self.max_tokens
        if self.timeout != DEFAULT_LLM_TIMEOUT:
            out["timeout"] = self.timeout
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMConfig:
        return cls(
            enabled=data.get("enabled", True),
            model=data.get("model", DEFAULT_LLM_MODEL),
            max_tokens=data.get("max_tokens", DEFAULT_LLM_MAX_TOKENS),
            timeout=data.get("timeout", DEFAULT_LLM_TIMEOUT),
        )


@dataclass
class RateLimitConfig:
    """Addition (`rate_limit:`): how a run meets Claude's usage and rate limits.

    `max_wait`: the longest one wait for a usage limit to reset (seconds); a reset further
    off ends the run (`usage_limited`, resumable). `retries`: how many backoffs a state gets
    for rate limits and overload after claude's own retries. `continue_session`: a state
    that hit a usage limit continues claude's session (`--resume`) instead of starting over.
    `first_backoff`: the first of those backoffs (seconds; each next one doubles).
    """

    max_wait: float = DEFAULT_LIMIT_MAX_WAIT
    retries: int = DEFAULT_LIMIT_RETRIES
    continue_session: bool = True
    first_backoff: float = DEFAULT_LIMIT_FIRST_BACKOFF
    # Addition (issue 24, pacing): a host whose reported quota use is at or past this
    # share (0..1) starts no new action until its window resets (None: no pacing).
    max_utilization: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.max_wait != DEFAULT_LIMIT_MAX_WAIT:
            out["max_wait"] = self.max_wait
        if self.retries != DEFAULT_LIMIT_RETRIES:
            out["retries"] = self.retries
        if self.continue_session is not True:
            out["continue_session"] = self.continue_session
        if self.first_backoff != DEFAULT_LIMIT_FIRST_BACKOFF:
            out["first_backoff"] = self.first_backoff
        _put_if_set(out, "max_utilization", self.max_utilization)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RateLimitConfig:
        return cls(
            max_wait=parse_duration(data.get("max_wait", DEFAULT_LIMIT_MAX_WAIT)),
            retries=data.get("retries", DEFAULT_LIMIT_RETRIES),
            continue_session=data.get("continue_session", True),
            first_backoff=parse_duration(data.get("first_backoff", DEFAULT_LIMIT_FIRST_BACKOFF)),
            max_utilization=data.get("max_utilization"),
        )


@dataclass
class FSMLoop:
    """A whole loop: its states, where it starts and its limits."""

    name: str
    initial: str
    states: dict[str, StateConfig]
    paradigm: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    scope: list[str] = field(default_factory=list)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    backoff: float | None = None
    timeout: int | None = None
    maintain: bool = False
    llm: LLMConfig = field(default_factory=LLMConfig)
    on_handoff: str = DEFAULT_ON_HANDOFF
    max_continuations: int = DEFAULT_MAX_CONTINUATIONS
    # Additions (loop guards): identical endings of a state in a row, with nothing else
    # changed, that stop the run as stalled (0: never; None: not set, see
    # `effective_stall_threshold`), and `"git"` to commit the work after each iteration
    # and handoff.
    stall_threshold: int | None = None
    checkpoint: str | None = None
    # Addition: how many actions' logs a run keeps (None: DEFAULT_LOGS_KEEP; 0: none).
    logs_keep: int | None = None
    # Additions (stall guard): the state a stall routes to once per streak instead of
    # ending the run, and the files or globs whose changes count as progress.
    on_stall: str | None = None
    progress_paths: list[str] = field(default_factory=list)
    # Additions (overnight runs): the run's budget in US dollars (None: no budget), the
    # command told when the run ends or needs someone, and how limits are met.
    max_cost_usd: float | None = None
    notify: str | None = None
    rate_limit: RateLimitConfig = field(default_factory=RateLimitConfig)
    # Addition (issue 24): the agent host(s) of the loop's prompt actions (a state's
    # `host:` wins; `model.host_choice`).
    host: str | list[str] | None = None
    # The dialect the loop was read in: "legacy" here (little-loops at aada157e1); a loop
    # read in little-loops' current dialect is a `model.head_loop.HeadLoop`, which says
    # "head". The engine asks this, never the YAML.
    dialect: ClassVar[str] = "legacy"

    def effective_stall_threshold(self) -> int:
        """The stall threshold in force: the loop's own, else 3 for unattended loops.

        Faithful by default: an ordinary loop that does not ask for the guard runs as it
        did in the reference; a loop that continues its handoffs by itself
        (`on_handoff: continue`) has nobody watching, so it gets the guard.
        """
        if self.stall_threshold is not None:
            return self.stall_threshold
        return DEFAULT_STALL_THRESHOLD if self.on_handoff == "continue" else 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "initial": self.initial,
            "states": {name: state.to_dict() for name, state in self.states.items()},
        }
        _put_if_set(out, "paradigm", self.paradigm)
        if self.context:
            out["context"] = self.context
        if self.scope:
            out["scope"] = self.scope
        if self.max_iterations != DEFAULT_MAX_ITERATIONS:
            out["max_iterations"] = self.max_iterations
        _put_if_set(out, "backoff", self.backoff)
        _put_if_set(out, "timeout", self.timeout)
        if self.maintain:
            out["maintain"] = self.maintain
        if self.on_handoff != DEFAULT_ON_HANDOFF:
            out["on_handoff"] = self.on_handoff
        llm = self.llm.to_dict()
        if llm:
            out["llm"] = llm
        if self.max_continuations != DEFAULT_MAX_CONTINUATIONS:
            out["max_continuations"] = self.max_continuations
        _put_if_set(out, "stall_threshold", self.stall_threshold)
        _put_if_set(out, "checkpoint", self.checkpoint)
        _put_if_set(out, "logs_keep", self.logs_keep)
        _put_if_set(out, "on_stall", self.on_stall)
        if self.progress_paths:
            out["progress_paths"] = self.progress_paths
        _put_if_set(out, "max_cost_usd", self.max_cost_usd)
        _put_if_set(out, "notify", self.notify)
        rate_limit = self.rate_limit.to_dict()
        if rate_limit:
            out["rate_limit"] = rate_limit
        _put_if_set(out, "host", self.host)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FSMLoop:
        states = {
            name: StateConfig.from_dict(state) for name, state in data.get("states", {}).items()
        }
        return cls(
            name=data["name"],
            initial=data["initial"],
            states=states,
            paradigm=data.get("paradigm"),
            context=data.get("context", {}),
            scope=data.get("scope", []),
            max_iterations=data.get("max_iterations", DEFAULT_MAX_ITERATIONS),
            backoff=data.get("backoff"),
            timeout=data.get("timeout"),
            maintain=data.get("maintain", False),
            llm=LLMConfig.from_dict(data["llm"]) if "llm" in data else LLMConfig(),
            on_handoff=data.get("on_handoff", DEFAULT_ON_HANDOFF),
            max_continuations=data.get("max_continuations", DEFAULT_MAX_CONTINUATIONS),
            stall_threshold=data.get("stall_threshold"),
            checkpoint=data.get("checkpoint"),
            logs_keep=data.get("logs_keep"),
            on_stall=data.get("on_stall"),
            progress_paths=data.get("progress_paths", []),
            max_cost_usd=data.get("max_cost_usd"),
            notify=data.get("notify"),
            rate_limit=RateLimitConfig.from_dict(data.get("rate_limit") or {}),
            host=data.get("host"),
        )

    def get_all_state_names(self) -> set[str]:
        return set(self.states)

    def get_terminal_states(self) -> set[str]:
        return {name for name, state in self.states.items() if state.terminal}

    def get_all_referenced_states(self) -> set[str]:
        referenced = {self.initial}
        if self.on_stall is not None:
            referenced.add(self.on_stall)
        for state in self.states.values():
            referenced |= state.get_referenced_states()
        return referenced
