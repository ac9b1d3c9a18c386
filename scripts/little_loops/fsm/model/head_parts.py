"""Records and names of the little-loops HEAD dialect (`spec/ll-head-dialect.md`).

A loop file is read in one of two dialects, decided once per file by the loader
(`loading`): **legacy** (little-loops at aada157e1, `success`/`failure` verdicts) or
**head** (little-loops today: `yes`/`no` verdicts, sub-loops, fragments, step caps,
retries). The built `FSMLoop` carries its dialect; the engine asks the loop, never the
YAML, what a verdict routes to. The records here are the parts of a HEAD loop that have
no legacy counterpart: parameter specs, the throttle and the circuit breaker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DIALECT_LEGACY = "legacy"
DIALECT_HEAD = "head"
DIALECTS = (DIALECT_LEGACY, DIALECT_HEAD)

# A terminal state with one of these names is a failure terminal in a HEAD file unless it
# says `failure: false` (HEAD's rule; a legacy file never has failure terminals).
FAILURE_TERMINAL_NAMES = frozenset({"failed", "error", "aborted", "finalize_aborted"})

# HEAD's defaults for keys a legacy loop does not have.
HEAD_DEFAULT_MAX_STEPS = 50
HEAD_DEFAULT_MAX_EDGE_REVISITS = 100
HEAD_DEFAULT_INPUT_KEY = "input"
# §2.1 `llm` row: a HEAD file's judge waits up to 30 minutes unless it writes `timeout`.
# (HEAD's default `model: sonnet` is a Claude Code alias, not an Anthropic API model id,
# and our judge calls the API: a HEAD file keeps our default model, `DEFAULT_LLM_MODEL`.)
HEAD_DEFAULT_LLM_TIMEOUT = 1800
HEAD_VISIBILITIES = ("public", "internal", "example")
HEAD_SESSION_MODES = ("fresh", "continue")
PARAMETER_TYPES = ("string", "integer", "number", "boolean", "enum", "path")

# The two verdict vocabularies name the same outcomes: HEAD's `yes`/`no` are legacy's
# `success`/`failure` wherever a route is looked up.
VERDICT_SYNONYMS: dict[str, str] = {
    "yes": "success",
    "success": "yes",
    "no": "failure",
    "failure": "no",
}

# `on_<x>` keys of a state that are not verdict routes (the others are: `on_partial`
# routes verdict `partial`, `on_timeout` verdict `timeout`, a state's `on_stall` the
# convergence evaluator's `stall`, ...).
NON_VERDICT_ON_KEYS = frozenset(
    {
        "on_success",
        "on_failure",
        "on_error",
        "on_yes",
        "on_no",
        "on_maintain",
        "on_max_visits",
        "on_retry_exhausted",
        "on_rate_limit_exhausted",
        "on_throttle_hard",
    }
)


def verdict_spellings(verdict: str) -> tuple[str, ...]:
    """`verdict` and its synonym in the other dialect (`yes` -> (`yes`, `success`))."""
    other = VERDICT_SYNONYMS.get(verdict)
    return (verdict,) if other is None else (verdict, other)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass
class ParameterSpec:
    """One declared input of a loop (`parameters:`) or of a fragment."""

    type: str
    required: bool = False
    default: Any = None
    description: str | None = None
    values: list[Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.required:
            out["required"] = True
        _put(out, "default", self.default)
        _put(out, "description", self.description)
        _put(out, "values", self.values)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParameterSpec:
        return cls(
            type=data["type"],
            required=bool(data.get("required", False)),
            default=data.get("default"),
            description=data.get("description"),
            values=data.get("values"),
        )


def parameters_from_dict(data: dict[str, Any] | None) -> dict[str, ParameterSpec]:
    """A `parameters:` mapping as specs (empty for None)."""
    return {name: ParameterSpec.from_dict(spec) for name, spec in (data or {}).items()}


def parameters_to_dict(specs: dict[str, ParameterSpec]) -> dict[str, Any]:
    return {name: spec.to_dict() for name, spec in specs.items()}


@dataclass
class ThrottleConfig:
    """A state's action-run counter per visit (HEAD §7.5)."""

    normal_max: int = 3
    warn_max: int = 8
    hard_max: int = 12

    def to_dict(self) -> dict[str, Any]:
        return {"normal_max": self.normal_max, "warn_max": self.warn_max, "hard_max": self.hard_max}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThrottleConfig:
        default = cls()
        return cls(
            normal_max=data.get("normal_max", default.normal_max),
            warn_max=data.get("warn_max", default.warn_max),
            hard_max=data.get("hard_max", default.hard_max),
        )


@dataclass
class CircuitConfig:
    """`circuit.repeated_failure` (HEAD §7.7): the same (state, exit code, verdict) too
    often ends the run or goes to a recovery state."""

    window: int = 3
    on_repeated_failure: str = "abort"
    progress_paths: list[str] = field(default_factory=list)
    exclude_paths: list[str] = field(default_factory=list)
    recurrent_window: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "window": self.window,
            "on_repeated_failure": self.on_repeated_failure,
        }
        if self.progress_paths:
            out["progress_paths"] = self.progress_paths
        if self.exclude_paths:
            out["exclude_paths"] = self.exclude_paths
        _put(out, "recurrent_window", self.recurrent_window)
        return {"repeated_failure": out}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CircuitConfig | None:
        """`circuit:` as written; None when it has no `repeated_failure` detector."""
        detector = data.get("repeated_failure")
        if not isinstance(detector, dict):
            return None
        return cls(
            window=detector.get("window", 3),
            on_repeated_failure=detector.get("on_repeated_failure", "abort"),
            progress_paths=list(detector.get("progress_paths") or []),
            exclude_paths=list(detector.get("exclude_paths") or []),
            recurrent_window=detector.get("recurrent_window"),
        )
