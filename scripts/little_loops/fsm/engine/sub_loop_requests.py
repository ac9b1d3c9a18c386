"""The requests of sub-loops (spec §4): load a child, give it a worktree, its ending.

Apart from `run_requests` so that a run without `loop:` states does not build them at
start-up; `requests` exports them too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.engine.step_result import Ending, ExecutionResult
from little_loops.fsm.schema import FSMLoop

__all__ = [
    "AttachWorktree",
    "ChildEnded",
    "ChildLoadFailed",
    "ChildSpec",
    "DetachWorktree",
    "LoadChild",
    "LoadedChild",
    "WorktreeAttached",
]


@dataclass(frozen=True)
class LoadChild:
    """Load the sub-loop `name` (a `loop:` state's, interpolated; spec §4.1: a file
    relative to the working directory, else `<loops dir>/<name>.fsm.yaml`, `<name>.yaml`,
    else a loop shipped with the package) with the whole loading pipeline; submit a
    `LoadedChild`, or a `ChildLoadFailed` saying why in one line. `context_keys`: keys
    the parent gives the child (bindings, passthrough), which its checks may count on."""

    name: str
    context_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadedChild:
    """A sub-loop the driver loaded: the built loop and the file it came from."""

    loop: FSMLoop
    path: str


@dataclass(frozen=True)
class ChildLoadFailed:
    """A sub-loop that could not be found, read or validated (a load failure, §4.3)."""

    message: str


@dataclass(frozen=True)
class AttachWorktree:
    """Add a fresh worktree of the existing `branch` for a sub-loop (`worktree:`, §4.6);
    `label` names it. Submit a `WorktreeAttached`, or a `ChildLoadFailed` saying why."""

    branch: str
    label: str


@dataclass(frozen=True)
class WorktreeAttached:
    """Where the worktree is (`path`) and the working directory it stands in for."""

    path: Path
    origin: Path


@dataclass(frozen=True)
class DetachWorktree:
    """Remove a sub-loop's worktree (its branch stays); submit None, or why it failed."""

    path: Path


@dataclass(frozen=True)
class ChildEnded:
    """How a sub-loop's child ended, wherever it ran: its `ending` and `result`, what it
    captured and spent, its handoffs and usage-limit wait (kept when it pauses),
    whether it ended on a `FATAL_ERROR` signal (which fails the whole run, §9f), and the
    run's rate-limit memory as a child run elsewhere left it (None: the run's own object
    was used, §7.6)."""

    ending: Ending
    result: ExecutionResult
    captured: dict[str, Any]
    spending: RunSpending
    handoff_count: int = 0
    limit_wait: dict[str, Any] | None = None
    fatal: bool = False
    rate_limit: dict[str, Any] | None = None


@dataclass(frozen=True)
class ChildSpec:
    """What a child needs to run elsewhere, as JSON values: the prepared loop
    (`FSMLoop.to_dict()`: bound context, clamped clock and budget, the run's LLM choices)
    and its `dialect`; its name, file and the parent state that runs it; its `depth` and
    the loop names from the top (`chain`); `records`: its place and its descendants'
    (the run's `head.sub_loops` from its level on); the run's rate-limit memory (§7.6);
    `log_dir`: where its actions' logs go (None: none kept); `worktree`: the `branch` and
    `path` of the worktree it runs in (`worktree:`, §4.6; None: none)."""

    loop: dict[str, Any]
    dialect: str
    name: str
    path: str
    parent_state: str
    parent_iteration: int
    depth: int
    chain: tuple[str, ...]
    records: list[dict[str, Any]]
    rate_limit: dict[str, Any]
    log_dir: str | None
    worktree: dict[str, str] | None = None
