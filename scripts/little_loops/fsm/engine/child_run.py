"""A sub-loop's child as it runs (spec §4, §9b): its core, its events and its place.

The parent's core builds it (`sub_loop`) and hands it to the driver in a `RunChild`
request. The local driver serves the child's requests in this process; the Temporal
workflow runs it as a child workflow, which builds it again from `spec()` and sends its
progress back (`relay`). Either way the child's events reach the run's callback with
`depth`, and its place in the run's `head.sub_loops` is refreshed at each of its routes,
so a parent saved meanwhile resumes inside it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from little_loops.fsm.engine.context import Clock, EventCallback, RunCursor
from little_loops.fsm.engine.events import (
    APPROVAL_NEEDED,
    HANDOFF_CONTINUED,
    LOOP_START,
    PARALLEL_BRANCH_END,
    ROUTE,
)
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.run_requests import Finish, RunAction
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.engine.sub_loop_record import child_record
from little_loops.fsm.engine.sub_loop_requests import ChildEnded, ChildSpec
from little_loops.fsm.model.run_choices import RunChoices
from little_loops.fsm.schema import FSMLoop

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["AttachedWorktree", "ChildRun", "ParentCore", "SubLoopFrame", "WorktreePlace"]


@dataclass(frozen=True)
class SubLoopFrame:
    """Where a core sits in a chain of sub-loops: `depth` (0 for the top-level run), the
    loop names from the top (`chain`), the top-level cursor's `head.sub_loops`
    (`records`, shared by every level) and the run's event callback (`root_emit`)."""

    depth: int
    chain: tuple[str, ...]
    records: list[dict[str, Any]]
    root_emit: EventCallback
    # The child run of this level refreshes its place through these (`ChildRun` adds its
    # own): a `parallel:` fan-out running in this level calls them as its items go on,
    # since this level routes only once the whole fan-out has ended.
    place_keepers: list[Callable[[], None]] = field(default_factory=list, compare=False)


class ParentCore(Protocol):
    """What a sub-loop needs of the run core (`core.RunCore`, which imports this module)."""

    fsm: FSMLoop
    clock: Clock
    cursor: RunCursor
    guards: RunGuards
    sub_loop_frame: SubLoopFrame | None
    choices: RunChoices
    wrapping_up: bool  # running the loop's `on_budget` wrap-up (its budgets are spent)

    @property
    def event_callback(self) -> EventCallback: ...

    def elapsed_ms(self) -> int: ...

    def revised(self, name: str) -> bool: ...

    def next_request(self) -> Request: ...

    def submit(self, result: Any = None) -> None: ...

    def nested(
        self,
        fsm: FSMLoop,
        *,
        cursor: RunCursor,
        guards: RunGuards,
        emit: EventCallback,
        frame: SubLoopFrame,
        log_dir: Path | None,
    ) -> ParentCore: ...


class WorktreePlace(Protocol):
    """The worktree a child runs in (`child_worktree.ChildWorktree`, `AttachedWorktree`)."""

    def place(self, request: Request) -> Request: ...

    def record(self) -> dict[str, str] | None: ...


@dataclass(frozen=True)
class AttachedWorktree:
    """A worktree its parent attached (`branch`, `path`), for a child run elsewhere."""

    branch: str
    path: str

    def place(self, request: Request) -> Request:
        """A child's action runs in the worktree (a deeper child's own worktree wins)."""
        if not isinstance(request, RunAction) or request.cwd:
            return request
        return dataclasses.replace(request, cwd=Path(self.path))

    def record(self) -> dict[str, str] | None:
        return {"branch": self.branch, "path": self.path}


class ChildRun:
    """One child run. `frame` is the child's own (its depth, the chain ending with its
    name); `start(core)` gives it the core that runs its loop, whose events go to
    `emit`."""

    def __init__(
        self,
        frame: SubLoopFrame,
        *,
        parent_state: str,
        parent_iteration: int,
        path: str,
        log_dir: Path | None = None,
        worktree: WorktreePlace | None = None,
    ) -> None:
        self.frame, self.path, self.log_dir, self.worktree = frame, path, log_dir, worktree
        self.parent_state, self.parent_iteration = parent_state, parent_iteration
        self.events: list[dict[str, Any]] = []  # every event of the child and deeper
        self._core: ParentCore | None = None
        frame.place_keepers.append(lambda: self.keep_place(None))

    @property
    def core(self) -> ParentCore:
        assert self._core is not None, "the child run has no core yet (start it)"
        return self._core

    def start(self, core: ParentCore) -> None:
        self._core = core
        self.keep_place(None)

    # -- the driver's side (`RunChild`) ----------------------------------------------------

    def next_request(self) -> Request:
        request = self.core.next_request()
        return self.worktree.place(request) if self.worktree is not None else request

    def submit(self, result: Any = None) -> None:
        self.core.submit(result)

    def ended(self, finish: Finish) -> ChildEnded:
        """How it ended, from its `Finish` and its cursor."""
        cursor = self.core.cursor
        return ChildEnded(
            ending=finish.ending,
            result=finish.result,
            captured=cursor.captured,
            spending=cursor.spending,
            handoff_count=cursor.handoff_count,
            limit_wait=cursor.limit_wait,
            fatal=self._fatal(finish.ending),
        )

    def relay(self, events: list[dict[str, Any]], records: list[dict[str, Any]]) -> None:
        """Progress of the child run elsewhere: its place and its descendants' (`records`,
        the run's `head.sub_loops` from its level on), then its events (with `depth`)."""
        del self.frame.records[self._index :]
        self.frame.records.extend(records)
        for event in events:
            self.events.append(event)
            self.frame.root_emit(event)

    def spec(self) -> ChildSpec:
        """What a child workflow needs to run it (JSON values)."""
        fsm, cursor = self.core.fsm, self.core.cursor
        return ChildSpec(
            loop=fsm.to_dict(),
            dialect=fsm.dialect,
            name=self.frame.chain[-1],
            path=self.path,
            parent_state=self.parent_state,
            parent_iteration=self.parent_iteration,
            depth=self.frame.depth,
            chain=self.frame.chain,
            records=copy.deepcopy(self.frame.records[self._index :]),
            rate_limit=copy.deepcopy(cursor.head.rate_limit),
            log_dir=str(self.log_dir) if self.log_dir is not None else None,
            worktree=self.worktree.record() if self.worktree is not None else None,
        )

    # -- the child's events and place ------------------------------------------------------

    @property
    def _index(self) -> int:
        """Its record's index in `head.sub_loops` (its parent's depth)."""
        return self.frame.depth - 1

    def emit(self, event: dict[str, Any]) -> None:
        """A child event: `depth` added (a deeper one keeps its own), the child's place
        refreshed at its routes before the run's callback (persistence) sees them."""
        if "depth" not in event:
            event = {**event, "depth": self.frame.depth}
            kind = event.get("event")
            if kind == ROUTE:
                self.keep_place(str(event["to"]))
            elif kind in (LOOP_START, HANDOFF_CONTINUED, APPROVAL_NEEDED, PARALLEL_BRANCH_END):
                # (a continued handoff's state runs again, prompted; a question asked is
                # in the place, so `approve` finds it and a resume waits for it; a fan-out
                # item's result is in the place, so a resume never runs it again)
                self.keep_place(None)
        self.events.append(event)
        self.frame.root_emit(event)

    def keep_place(self, next_state: str | None) -> None:
        child = self.core
        record = child_record(
            parent_state=self.parent_state,
            loop_name=self.frame.chain[-1],
            loop_path=self.path,
            cursor=child.cursor,
            guards=child.guards,
            context=child.fsm.context,
            timeout=child.fsm.timeout,
            elapsed_ms=child.elapsed_ms(),
            next_state=next_state,
        )
        worktree = self.worktree.record() if self.worktree is not None else None
        if worktree is not None:  # removed by a resume, which attaches a fresh one
            record["worktree"] = worktree
        records, index = self.frame.records, self._index
        if index < len(records):
            records[index] = record  # deeper places stay: a resumed grandchild needs its own
        else:
            records.append(record)

    def _fatal(self, ending: Ending) -> bool:
        """Whether the child ended on a `FATAL_ERROR` signal (which fails the whole run)."""
        if ending.terminated_by != "error":
            return False
        entries = self.core.guards.errors.entries
        last = entries[-1] if entries else None
        cursor = self.core.cursor
        return (
            last is not None
            and last.source == "fatal_error"
            and last.state == cursor.current_state
            and last.iteration == cursor.iteration
        )
