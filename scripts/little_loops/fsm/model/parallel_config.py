"""A `parallel:` state's settings (issue 25): a child loop fanned out over items.

Both dialects read the same block; the state routes on `on_yes`/`on_success` (every item
yes), `on_partial` (mixed) and `on_no`/`on_failure` (no item yes). The defaults here are
what the loader fills in for keys that are not written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = [
    "DEFAULT_MAX_WORKERS",
    "FAIL_MODES",
    "ISOLATIONS",
    "PARALLEL_KEYS",
    "ParallelConfig",
    "ParallelStateConfig",
    "parallel_of",
    "with_parallel_states",
]

DEFAULT_MAX_WORKERS = 4
ISOLATIONS = ("none", "worktree")
FAIL_MODES = ("collect", "fail_fast")
PARALLEL_KEYS = (
    "items",
    "loop",
    "with",
    "max_workers",
    "isolation",
    "fail_mode",
    "timeout_seconds",
    "max_items",
)


@dataclass
class ParallelConfig:
    """`items`: a template (newline-separated after interpolation) or a YAML list;
    `loop`: the child loop run once per item; `with_`: its bindings (`with:`)."""

    items: str | list[Any]
    loop: str
    with_: dict[str, Any] | None = None
    max_workers: int = DEFAULT_MAX_WORKERS
    isolation: str = "none"
    fail_mode: str = "collect"
    timeout_seconds: int | None = None
    max_items: int | None = None

    @property
    def fail_fast(self) -> bool:
        return self.fail_mode == "fail_fast"

    @property
    def in_worktrees(self) -> bool:
        return self.isolation == "worktree"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"items": self.items, "loop": self.loop}
        if self.with_ is not None:
            out["with"] = dict(self.with_)
        if self.max_workers != DEFAULT_MAX_WORKERS:
            out["max_workers"] = self.max_workers
        if self.isolation != "none":
            out["isolation"] = self.isolation
        if self.fail_mode != "collect":
            out["fail_mode"] = self.fail_mode
        if self.timeout_seconds is not None:
            out["timeout_seconds"] = self.timeout_seconds
        if self.max_items is not None:
            out["max_items"] = self.max_items
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParallelConfig:
        return cls(
            items=data.get("items", ""),
            loop=str(data.get("loop", "")),
            with_=data.get("with"),
            max_workers=data.get("max_workers", DEFAULT_MAX_WORKERS),
            isolation=data.get("isolation", "none"),
            fail_mode=data.get("fail_mode", "collect"),
            timeout_seconds=data.get("timeout_seconds"),
            max_items=data.get("max_items"),
        )


@dataclass
class ParallelStateConfig(StateConfig):
    """A legacy-dialect state with `parallel:` (the legacy record plus the fan-out and
    its mixed-outcome route `on_partial`). A HEAD state keeps `parallel` on
    `HeadStateConfig` and `on_partial` in its `on_verdicts`."""

    parallel: ParallelConfig | None = None
    on_partial: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if self.parallel is not None:
            out["parallel"] = self.parallel.to_dict()
        if self.on_partial is not None:
            out["on_partial"] = self.on_partial
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParallelStateConfig:
        legacy = StateConfig.from_dict(data)
        block = data.get("parallel")
        return cls(
            **vars(legacy),
            parallel=ParallelConfig.from_dict(block) if isinstance(block, dict) else None,
            on_partial=data.get("on_partial"),
        )

    def get_referenced_states(self) -> set[str]:
        extra = {self.on_partial} if self.on_partial is not None else set()
        return super().get_referenced_states() | extra


def parallel_of(state: StateConfig) -> ParallelConfig | None:
    """The state's `parallel:` block, in either dialect (None: not a fan-out)."""
    block = getattr(state, "parallel", None)
    return block if isinstance(block, ParallelConfig) else None


def with_parallel_states(fsm: FSMLoop, data: dict[str, Any]) -> FSMLoop:
    """A legacy loop built by `FSMLoop.from_dict(data)` with its `parallel:` states read
    as `ParallelStateConfig` (the legacy record has no place for them)."""
    states = data.get("states")
    for name, raw in (states if isinstance(states, dict) else {}).items():
        if isinstance(raw, dict) and isinstance(raw.get("parallel"), dict):
            fsm.states[name] = ParallelStateConfig.from_dict(raw)
    return fsm
